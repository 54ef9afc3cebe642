#include "cml/cml_buffer.h"

#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

__global__ void cml_fill32_kernel(uint32_t *d, size_t n, uint32_t pattern)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        d[i] = pattern;
}

extern "C" cudaError_t cml_fill32_async(void *d, size_t n, uint32_t pattern, cudaStream_t stream)
{
    if (n == 0)
        return cudaSuccess;
    size_t blocks = (n + 255) / 256;
    if (blocks > 4096)
        blocks = 4096;
    cml_fill32_kernel<<<(unsigned)blocks, 256, 0, stream>>>((uint32_t *)d, n, pattern);
    return cudaGetLastError();
}

extern "C" int cml_dbuf_exact_mode(void)
{
    const char *e = getenv("CML_EXACT_BUFFERS");
    return e != NULL && *e != '\0' && strcmp(e, "0") != 0;
}

extern "C" cudaError_t cml_dbuf_alloc(cml_dbuf *b, size_t bytes, uint32_t guard)
{
    memset(b, 0, sizeof *b);
    if (cml_dbuf_exact_mode()) { /* the payload alone: every byte past it is outside the allocation */
        if (cudaMalloc(&b->base, bytes ? bytes : 4) != cudaSuccess) {
            b->base = NULL;
            return cudaGetLastError();
        }
        b->ptr = b->base;
        b->bytes = bytes;
        b->guard = guard;
        b->exact = 1;
        return cudaSuccess;
    }
    size_t payload = (bytes + 255) / 256 * 256;
    if (cudaMalloc(&b->base, CML_GUARD_BYTES + payload + CML_GUARD_BYTES) != cudaSuccess) {
        b->base = NULL;
        return cudaGetLastError(); /* clears the (non-sticky) allocation error */
    }
    b->ptr = (char *)b->base + CML_GUARD_BYTES;
    b->bytes = bytes;
    b->guard = guard;
    cudaError_t err = cml_fill32_async(b->base, CML_GUARD_BYTES / 4, guard, 0);
    if (err == cudaSuccess)
        err = cml_fill32_async((char *)b->ptr + payload, CML_GUARD_BYTES / 4, guard, 0);
    /* The padding up to the 256-byte boundary is a guard too. */
    if (err == cudaSuccess && payload > bytes) {
        size_t tail = payload - bytes;
        if (bytes % 4 == 0)
            err = cml_fill32_async((char *)b->ptr + bytes, tail / 4, guard, 0);
    }
    if (err == cudaSuccess)
        err = cudaDeviceSynchronize();
    if (err != cudaSuccess)
        cml_dbuf_free(b);
    return err;
}

extern "C" void cml_dbuf_free(cml_dbuf *b)
{
    if (b->base != NULL)
        cudaFree(b->base);
    memset(b, 0, sizeof *b);
}

extern "C" cudaError_t cml_dbuf_fill32(cml_dbuf *b, uint32_t pattern)
{
    if (b->bytes % 4 != 0)
        return cudaErrorInvalidValue;
    return cml_fill32_async(b->ptr, b->bytes / 4, pattern, 0);
}

static long long first_bad(const uint32_t *h, size_t words, uint32_t guard)
{
    for (size_t i = 0; i < words; ++i)
        if (h[i] != guard)
            return (long long)(i * 4);
    return -1;
}

extern "C" cudaError_t cml_dbuf_check_guards(const cml_dbuf *b, int *intact, long long *where)
{
    if (b->exact) { /* no guards: compute-sanitizer or the CPU path's bounds check sees what they would */
        *intact = 1;
        *where = 0;
        return cudaSuccess;
    }
    size_t payload = (b->bytes + 255) / 256 * 256;
    size_t words = CML_GUARD_BYTES / 4;
    uint32_t *h = (uint32_t *)malloc(CML_GUARD_BYTES + 256);
    if (h == NULL)
        return cudaErrorMemoryAllocation;
    *intact = 1;
    *where = 0;
    cudaError_t err = cudaMemcpy(h, b->base, CML_GUARD_BYTES, cudaMemcpyDeviceToHost);
    if (err == cudaSuccess) {
        long long bad = first_bad(h, words, b->guard);
        if (bad >= 0) {
            *intact = 0;
            *where = bad - (long long)CML_GUARD_BYTES;
        }
    }
    if (err == cudaSuccess && *intact) {
        /* After the payload: the padding (when the size allows it) and the guard. */
        size_t from = b->bytes % 4 == 0 ? b->bytes : payload;
        size_t span = payload - from + CML_GUARD_BYTES;
        err = cudaMemcpy(h, (const char *)b->ptr + from, span, cudaMemcpyDeviceToHost);
        if (err == cudaSuccess) {
            long long bad = first_bad(h, span / 4, b->guard);
            if (bad >= 0) {
                *intact = 0;
                *where = (long long)from + bad;
            }
        }
    }
    free(h);
    return err;
}

extern "C" uint32_t cml_float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

extern "C" float cml_bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

extern "C" cudaError_t cml_dbufs_check_guards(const cml_dbuf *const *bufs, int n, int *bad, long long *where)
{
    *bad = -1;
    *where = 0;
    for (int k = 0; k < n; ++k) {
        int intact = 1;
        cudaError_t err = cml_dbuf_check_guards(bufs[k], &intact, where);
        if (err != cudaSuccess)
            return err;
        if (!intact) {
            *bad = k;
            return cudaSuccess;
        }
    }
    *where = 0;
    return cudaSuccess;
}

extern "C" uint64_t cml_hash_bytes(const void *p, size_t n, uint64_t h)
{
    const unsigned char *c = (const unsigned char *)p;
    if (h == 0)
        h = 0xcbf29ce484222325ull;  /* FNV-1a offset basis */
    for (size_t i = 0; i < n; ++i)
        h = (h ^ c[i]) * 0x100000001b3ull;
    return h;
}

extern "C" cudaError_t cml_dbuf_hash(const cml_dbuf *b, uint64_t *hash)
{
    const size_t piece = (size_t)64 << 20;
    unsigned char *h = (unsigned char *)malloc(b->bytes < piece ? (b->bytes ? b->bytes : 1) : piece);
    if (h == NULL)
        return cudaErrorMemoryAllocation;
    uint64_t acc = cml_hash_bytes(NULL, 0, 0);
    cudaError_t err = cudaSuccess;
    for (size_t at = 0; at < b->bytes && err == cudaSuccess; at += piece) {
        size_t n = b->bytes - at < piece ? b->bytes - at : piece;
        err = cudaMemcpy(h, (const char *)b->ptr + at, n, cudaMemcpyDeviceToHost);
        if (err == cudaSuccess)
            acc = cml_hash_bytes(h, n, acc);
    }
    free(h);
    *hash = acc;
    return err;
}
