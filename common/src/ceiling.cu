#include "cml/cml_ceiling.h"
#include "cml/cml_check.h"
#include "cml/cml_timing.h"

#include <cuda_runtime.h>
#include <stdio.h>

// 16 bytes per access, COPY_UNROLL accesses in flight per thread: each block
// copies one chunk of COPY_UNROLL x COPY_THREADS int4, thread t the elements
// t, t + COPY_THREADS, ... of it (every warp access one coalesced 512-byte
// run), all loads before any store. On an H200 (the kit's measurement,
// 2026-11-29, cudaMemcpy timed before and after each form) 1024 threads x 2
// reached 0.982x cudaMemcpy at 1 GiB and 0.992x at 512 MiB, where 256 x 4
// reached 0.957x and 0.963x, 512 x 8 0.978x and 0.983x, and one wave of
// blocks striding over the array one int4 at a time 0.925x.
enum { COPY_THREADS = 1024, COPY_UNROLL = 2, COPY_CHUNK = COPY_THREADS * COPY_UNROLL };

__global__ void __launch_bounds__(COPY_THREADS)
cml_copy16_kernel(const int4 *__restrict__ in, int4 *__restrict__ out, size_t n)
{
    size_t first = (size_t)blockIdx.x * COPY_CHUNK + threadIdx.x;
    int4 v[COPY_UNROLL];
#pragma unroll
    for (int u = 0; u < COPY_UNROLL; ++u)
        if (first + (size_t)u * COPY_THREADS < n)
            v[u] = in[first + (size_t)u * COPY_THREADS];
#pragma unroll
    for (int u = 0; u < COPY_UNROLL; ++u)
        if (first + (size_t)u * COPY_THREADS < n)
            out[first + (size_t)u * COPY_THREADS] = v[u];
}

struct copy_job {
    void *dst;
    const void *src;
    size_t bytes;
    int batch;   // copies enqueued back to back in one timed run
};

static cudaError_t run_memcpy(void *ctx)
{
    copy_job *j = (copy_job *)ctx;
    cudaError_t err = cudaSuccess;
    for (int k = 0; k < j->batch && err == cudaSuccess; ++k)
        err = cudaMemcpyAsync(j->dst, j->src, j->bytes, cudaMemcpyDeviceToDevice, 0);
    return err;
}

static cudaError_t run_kernel(void *ctx)
{
    copy_job *j = (copy_job *)ctx;
    size_t n = j->bytes / 16;
    unsigned blocks = (unsigned)((n + COPY_CHUNK - 1) / COPY_CHUNK);
    for (int k = 0; k < j->batch; ++k) {
        cml_copy16_kernel<<<blocks, COPY_THREADS>>>((const int4 *)j->src, (int4 *)j->dst, n);
        cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess)
            return err;
    }
    return cudaSuccess;
}

// Every byte of dst holds the source's 0x5A: the kernel copied the whole
// buffer, its partial last chunk too (the first and last 64 KiB checked).
static cudaError_t check_copied(const void *dst, size_t bytes, int *ok)
{
    static unsigned char got[1 << 16];
    size_t n = bytes < sizeof got ? bytes : sizeof got;
    *ok = 1;
    for (int part = 0; part < 2 && *ok; ++part) {
        const unsigned char *from = (const unsigned char *)dst + (part ? bytes - n : 0);
        cudaError_t err = cudaMemcpy(got, from, n, cudaMemcpyDeviceToHost);
        if (err != cudaSuccess)
            return err;
        for (size_t i = 0; i < n && *ok; ++i)
            *ok = got[i] == 0x5A;
    }
    return cudaSuccess;
}

extern "C" cudaError_t cml_measure_copy_ceiling_batched(size_t bytes, int repeat, int batch, cml_copy_ceiling *c)
{
    bytes = bytes / 16 * 16;
    if (bytes == 0 || repeat < 1 || batch < 1)
        return cudaErrorInvalidValue;
    void *a = NULL, *b = NULL;
    cudaError_t err = cudaMalloc(&a, bytes);
    if (err == cudaSuccess)
        err = cudaMalloc(&b, bytes);
    if (err == cudaSuccess)
        err = cudaMemset(a, 0x5A, bytes);  // copy real bytes, not untouched pages
    copy_job job = {b, a, bytes, batch};
    cml_timing tm, tk;
    int ok = 1;
    if (err == cudaSuccess)
        err = cml_time_median(run_memcpy, &job, 3, repeat, &tm);
    if (err == cudaSuccess)
        err = cudaMemset(b, 0, bytes);  // the kernel's copy is checked on its own
    if (err == cudaSuccess)
        err = cml_time_median(run_kernel, &job, 3, repeat, &tk);
    if (err == cudaSuccess)
        err = check_copied(b, bytes, &ok);
    if (err == cudaSuccess && !ok) {  // a ceiling from a kernel that does not copy is no ceiling
        fprintf(stderr, "cml_measure_copy_ceiling: the copy kernel's output is not its input (%zu bytes)\n", bytes);
        err = cudaErrorUnknown;
    }
    if (err == cudaSuccess) {
        c->bytes = bytes;
        c->memcpy_gbs = 2.0 * (double)bytes * batch / (tm.median_ms * 1e6);
        c->kernel_gbs = 2.0 * (double)bytes * batch / (tk.median_ms * 1e6);
        c->best_gbs = c->memcpy_gbs > c->kernel_gbs ? c->memcpy_gbs : c->kernel_gbs;
    }
    cudaFree(a);
    cudaFree(b);
    return err;
}

extern "C" cudaError_t cml_measure_copy_ceiling(size_t bytes, int repeat, cml_copy_ceiling *c)
{
    return cml_measure_copy_ceiling_batched(bytes, repeat, 1, c);
}
