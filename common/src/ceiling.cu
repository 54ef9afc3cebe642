#include "cml/cml_ceiling.h"
#include "cml/cml_check.h"
#include "cml/cml_timing.h"

#include <cuda_runtime.h>

// 16 bytes per thread per iteration, grid-stride: the access shape of the
// fastest memory-bound kernels in the labs.
__global__ void cml_copy16_kernel(const int4 *__restrict__ in, int4 *__restrict__ out, size_t n)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = in[i];
}

struct copy_job {
    void *dst;
    const void *src;
    size_t bytes;
    int blocks;
};

static cudaError_t run_memcpy(void *ctx)
{
    copy_job *j = (copy_job *)ctx;
    return cudaMemcpyAsync(j->dst, j->src, j->bytes, cudaMemcpyDeviceToDevice, 0);
}

static cudaError_t run_kernel(void *ctx)
{
    copy_job *j = (copy_job *)ctx;
    cml_copy16_kernel<<<j->blocks, 256>>>((const int4 *)j->src, (int4 *)j->dst, j->bytes / 16);
    return cudaGetLastError();
}

extern "C" cudaError_t cml_measure_copy_ceiling(size_t bytes, int repeat, cml_copy_ceiling *c)
{
    bytes = bytes / 16 * 16;
    if (bytes == 0 || repeat < 1)
        return cudaErrorInvalidValue;
    void *a = NULL, *b = NULL;
    cudaError_t err = cudaMalloc(&a, bytes);
    if (err == cudaSuccess)
        err = cudaMalloc(&b, bytes);
    if (err == cudaSuccess)
        err = cudaMemset(a, 0x5A, bytes);  // copy real bytes, not untouched pages
    int sms = 0, per_sm = 0;
    if (err == cudaSuccess)
        err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    if (err == cudaSuccess)
        err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, cml_copy16_kernel, 256, 0);
    copy_job job = {b, a, bytes, sms * (per_sm > 0 ? per_sm : 1)};
    cml_timing tm, tk;
    if (err == cudaSuccess)
        err = cml_time_median(run_memcpy, &job, 3, repeat, &tm);
    if (err == cudaSuccess)
        err = cml_time_median(run_kernel, &job, 3, repeat, &tk);
    if (err == cudaSuccess) {
        c->bytes = bytes;
        c->memcpy_gbs = 2.0 * (double)bytes / (tm.median_ms * 1e6);
        c->kernel_gbs = 2.0 * (double)bytes / (tk.median_ms * 1e6);
        c->best_gbs = c->memcpy_gbs > c->kernel_gbs ? c->memcpy_gbs : c->kernel_gbs;
    }
    cudaFree(a);
    cudaFree(b);
    return err;
}
