/* red_big.cu: the test past 2^31 elements (labs/04_reduction/spec.c,
 * past_2_pow_31) made and summed on the device by the kit's own kernels.
 *
 * Its 8 GiB were made by a host loop and summed on the host, then pinned
 * and uploaded: 11 to 16 s of every lab 04 grading on an H200, most of it
 * the host's, all of it with 8 GiB of the GPU taken. Here each thread makes
 * its words of the kit's generator at once (cml_rng.h, cml_rng_draw: the
 * words cml_fill_int makes one after the other), and the expected sum is
 * the kit's plain sum in 64 bits, taken before a student's step runs. Kit
 * code only (the object checks refuse a student's cml_ names). */
#include <cml/cml_rng.h>

#include "red_big.h"

#define BIG_THREADS 256
#define BIG_BLOCKS 2048 /* a few waves of an H100's or H200's SMs; the rest loops */

extern "C" __global__ void cml_red_big_make(int *in, unsigned long long n, unsigned long long head,
                                            unsigned long long seed)
{
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        in[i] = i < head ? cml_rng_int_of(cml_rng_draw(seed, RED_BIG_STREAM, i), -1, 1) : 1;
}

/* Each thread's share in 64 bits, the block's in shared memory, one atomic a block. */
extern "C" __global__ void cml_red_big_sum(const int *in, unsigned long long n, unsigned long long *sum)
{
    __shared__ long long part[BIG_THREADS];
    long long s = 0;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        s += in[i];
    part[threadIdx.x] = s;
    __syncthreads();
    for (unsigned half = BIG_THREADS / 2; half > 0; half /= 2) {
        if (threadIdx.x < half)
            part[threadIdx.x] += part[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        atomicAdd(sum, (unsigned long long)part[0]); /* two's complement: a negative part adds right */
}

static unsigned blocks_for(size_t n)
{
    size_t blocks = (n + BIG_THREADS - 1) / BIG_THREADS;
    return (unsigned)(blocks < BIG_BLOCKS ? blocks : BIG_BLOCKS);
}

extern "C" cudaError_t cml_red_big_make_on_device(int *in, size_t n, size_t head, uint64_t seed)
{
    if (n == 0)
        return cudaSuccess;
    cml_red_big_make<<<blocks_for(n), BIG_THREADS>>>(in, n, head, seed);
    return cudaGetLastError();
}

extern "C" cudaError_t cml_red_big_sum_on_device(const int *in, size_t n, int64_t *sum)
{
    unsigned long long *dev = NULL, got = 0;
    cudaError_t err = cudaMalloc((void **)&dev, sizeof *dev);
    if (err == cudaSuccess)
        err = cudaMemset(dev, 0, sizeof *dev);
    if (err == cudaSuccess && n > 0) {
        cml_red_big_sum<<<blocks_for(n), BIG_THREADS>>>(in, n, dev);
        err = cudaGetLastError();
    }
    if (err == cudaSuccess)
        err = cudaMemcpy(&got, dev, sizeof got, cudaMemcpyDeviceToHost);
    if (dev) {
        cudaError_t freed = cudaFree(dev);
        if (err == cudaSuccess)
            err = freed;
    }
    *sum = (int64_t)got;
    return err;
}
