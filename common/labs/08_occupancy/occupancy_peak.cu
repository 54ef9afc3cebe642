/* The roofline's roof: FP32 peak measured by the kit's FMA kernel, in the
 * same run as the steps (occupancy_host.h, occupancy_fp32_peak). */
#include "occupancy_host.h"

#include <stdlib.h>

#include <cuda_runtime.h>

enum { PEAK_BLOCK = 256, PEAK_CHAINS = 8, PEAK_ROUNDS = 4096 };

// Each thread runs PEAK_CHAINS independent FMA chains (enough to hide the
// FMA latency of 4 cycles on every scheduler) and stores their sum, so the
// compiler can drop none of them. 2 FLOPs per FMA.
__global__ void peak_fma_kernel(float *out, float a, float b)
{
    float v[PEAK_CHAINS];
#pragma unroll
    for (int c = 0; c < PEAK_CHAINS; ++c)
        v[c] = (float)(threadIdx.x + c);
    for (int r = 0; r < PEAK_ROUNDS; ++r) {
#pragma unroll
        for (int c = 0; c < PEAK_CHAINS; ++c)
            v[c] = fmaf(v[c], a, b);
    }
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < PEAK_CHAINS; ++c)
        s += v[c];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

static int by_value(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

extern "C" cudaError_t occupancy_fp32_peak(int repeat, double *flops)
{
    int sms = 0, per_sm = 0;
    cudaError_t err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    if (err == cudaSuccess)
        err = cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, 0);
    if (err != cudaSuccess)
        return err;
    if (repeat < 1)
        repeat = 1;
    unsigned blocks = (unsigned)(sms * (per_sm / PEAK_BLOCK) * 4);   // every SM full, four waves
    float *out = NULL, *ms = (float *)calloc((size_t)repeat, sizeof *ms);
    cudaEvent_t start = NULL, stop = NULL;
    if (!ms)
        return cudaErrorMemoryAllocation;
    err = cudaMalloc((void **)&out, (size_t)blocks * PEAK_BLOCK * sizeof(float));
    if (err == cudaSuccess)
        err = cudaEventCreate(&start);
    if (err == cudaSuccess)
        err = cudaEventCreate(&stop);
    // a = 1 - 2^-20 and b = 2^-10 keep every value finite and normal
    const float a = 0.99999905f, b = 0.0009765625f;
    if (err == cudaSuccess) {   // warm-up
        peak_fma_kernel<<<blocks, PEAK_BLOCK>>>(out, a, b);
        err = cudaGetLastError();
    }
    if (err == cudaSuccess)
        err = cudaDeviceSynchronize();
    for (int i = 0; i < repeat && err == cudaSuccess; ++i) {
        err = cudaEventRecord(start, 0);
        if (err == cudaSuccess) {
            peak_fma_kernel<<<blocks, PEAK_BLOCK>>>(out, a, b);
            err = cudaGetLastError();
        }
        if (err == cudaSuccess)
            err = cudaEventRecord(stop, 0);
        if (err == cudaSuccess)
            err = cudaEventSynchronize(stop);
        if (err == cudaSuccess)
            err = cudaEventElapsedTime(&ms[i], start, stop);
    }
    if (err == cudaSuccess) {
        qsort(ms, (size_t)repeat, sizeof *ms, by_value);
        double median = ms[repeat / 2];
        *flops = 2.0 * PEAK_CHAINS * PEAK_ROUNDS * (double)blocks * PEAK_BLOCK / (median * 1e-3);
    }
    if (start)
        cudaEventDestroy(start);
    if (stop)
        cudaEventDestroy(stop);
    cudaFree(out);
    free(ms);
    return err;
}
