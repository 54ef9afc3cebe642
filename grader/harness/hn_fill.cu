/* hn_fill.cu: a timed case's data (harness.h, hn_fill_host) and the fresh
 * words of each timed repeat (hn_fresh), made on the device by the kit's
 * kernel cml_hn_fill: the same words the host's generator makes
 * (hn_fill.h), without a host loop over up to 1 GiB of input, or over an
 * eighth of it and a copy over PCIe between every two repeats. Linked
 * into every CUDA harness, never into a student's program (the object
 * checks refuse a student's cml_ names). test_hn_fill.c checks it against
 * the host's generator, on a GPU and on the CPU path. */
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "hn_fill.h"

#define HN_FILL_THREADS 256
#define HN_FILL_BLOCKS 1024 /* about one full wave of an H100's or H200's SMs; more words loop */

extern "C" __global__ void cml_hn_fill(uint32_t *dst, uint64_t n, uint32_t fill, uint64_t s)
{
    uint64_t stride = (uint64_t)gridDim.x * blockDim.x;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = hn_word_of(fill, hn_mix(s + (i + 1) * HN_GOLDEN));
}

extern "C" cudaError_t cml_hn_fill_device(void *dst, uint64_t n, uint32_t fill, uint64_t s)
{
    if (n == 0)
        return cudaSuccess;
    uint64_t blocks = (n + HN_FILL_THREADS - 1) / HN_FILL_THREADS;
    cml_hn_fill<<<(unsigned)(blocks < HN_FILL_BLOCKS ? blocks : HN_FILL_BLOCKS), HN_FILL_THREADS>>>(
        (uint32_t *)dst, n, fill, s);
    return cudaGetLastError();
}

extern "C" cudaError_t cml_hn_fill_host(uint32_t *w, uint64_t n, uint32_t fill, uint64_t s)
{
    void *dev = NULL;
    cudaError_t err = n ? cudaMalloc(&dev, n * 4) : cudaErrorInvalidValue;
    if (err == cudaSuccess)
        err = cml_hn_fill_device(dev, n, fill, s);
    if (err == cudaSuccess)
        err = cudaMemcpy(w, dev, n * 4, cudaMemcpyDeviceToHost);
    if (dev)
        cudaFree(dev);
    return err;
}
