/* Lab 04 in C style: every kernel is written once as a macro and stamped
 * out for int and float. 512-thread blocks. Step 5's last warp and step 8
 * use shuffles; step 8's cross-warp pass runs on 16 lanes only (partial
 * mask). Step 7 adds the blocks' sums into out with atomicAdd. */
#include "reduction.h"

#include <cuda_runtime.h>

#define NT 512
#define WARPS (NT / 32)
#define STEP7_BLOCKS 64

/* 16-byte load types */
typedef int4 int_x4;
typedef float4 float_x4;

#define TREE_SEQUENTIAL(buf, tid)                \
    for (unsigned h_ = NT / 2; h_ > 0; h_ >>= 1) { \
        if ((tid) < h_)                          \
            (buf)[tid] += (buf)[(tid) + h_];     \
        __syncthreads();                         \
    }

#define DEFINE_KERNELS(T)                                                                       \
__global__ void T##_interleaved(const T *in, size_t n, T *part)                                 \
{                                                                                               \
    __shared__ T buf[NT];                                                                       \
    unsigned tid = threadIdx.x;                                                                 \
    size_t i = (size_t)blockIdx.x * NT + tid;                                                   \
    buf[tid] = i < n ? in[i] : (T)0;                                                            \
    __syncthreads();                                                                            \
    for (unsigned h = 1; h < NT; h *= 2) {                                                      \
        if (tid % (2 * h) == 0)                                                                 \
            buf[tid] += buf[tid + h];                                                           \
        __syncthreads();                                                                        \
    }                                                                                           \
    if (tid == 0)                                                                               \
        part[blockIdx.x] = buf[0];                                                              \
}                                                                                               \
__global__ void T##_strided(const T *in, size_t n, T *part)                                     \
{                                                                                               \
    __shared__ T buf[NT];                                                                       \
    unsigned tid = threadIdx.x;                                                                 \
    size_t i = (size_t)blockIdx.x * NT + tid;                                                   \
    buf[tid] = i < n ? in[i] : (T)0;                                                            \
    __syncthreads();                                                                            \
    for (unsigned h = 1; h < NT; h *= 2) {                                                      \
        unsigned k = 2 * h * tid;                                                               \
        if (k < NT)                                                                             \
            buf[k] += buf[k + h];                                                               \
        __syncthreads();                                                                        \
    }                                                                                           \
    if (tid == 0)                                                                               \
        part[blockIdx.x] = buf[0];                                                              \
}                                                                                               \
__global__ void T##_sequential(const T *in, size_t n, T *part)                                  \
{                                                                                               \
    __shared__ T buf[NT];                                                                       \
    unsigned tid = threadIdx.x;                                                                 \
    size_t i = (size_t)blockIdx.x * NT + tid;                                                   \
    buf[tid] = i < n ? in[i] : (T)0;                                                            \
    __syncthreads();                                                                            \
    TREE_SEQUENTIAL(buf, tid)                                                                   \
    if (tid == 0)                                                                               \
        part[blockIdx.x] = buf[0];                                                              \
}                                                                                               \
__global__ void T##_first_add(const T *in, size_t n, T *part)                                   \
{                                                                                               \
    __shared__ T buf[NT];                                                                       \
    unsigned tid = threadIdx.x;                                                                 \
    size_t i = (size_t)blockIdx.x * 2 * NT + tid;                                               \
    T a = i < n ? in[i] : (T)0;                                                                 \
    T b = i + NT < n ? in[i + NT] : (T)0;                                                       \
    buf[tid] = a + b;                                                                           \
    __syncthreads();                                                                            \
    TREE_SEQUENTIAL(buf, tid)                                                                   \
    if (tid == 0)                                                                               \
        part[blockIdx.x] = buf[0];                                                              \
}                                                                                               \
__global__ void T##_warp_tail(const T *in, size_t n, T *part)                                   \
{                                                                                               \
    __shared__ T buf[NT];                                                                       \
    unsigned tid = threadIdx.x;                                                                 \
    size_t i = (size_t)blockIdx.x * 2 * NT + tid;                                               \
    T a = i < n ? in[i] : (T)0;                                                                 \
    T b = i + NT < n ? in[i + NT] : (T)0;                                                       \
    buf[tid] = a + b;                                                                           \
    __syncthreads();                                                                            \
    for (unsigned h = NT / 2; h > 32; h >>= 1) {                                                \
        if (tid < h)                                                                            \
            buf[tid] += buf[tid + h];                                                           \
        __syncthreads();                                                                        \
    }                                                                                           \
    if (tid < 32) {                                                                             \
        T v = buf[tid] + buf[tid + 32];                                                         \
        for (int d = 16; d > 0; d /= 2)                                                         \
            v += __shfl_down_sync(0xffffffffu, v, d);                                           \
        if (tid == 0)                                                                           \
            part[blockIdx.x] = v;                                                               \
    }                                                                                           \
}                                                                                               \
__global__ void T##_unrolled(const T *in, size_t n, T *part);                                   \
__global__ void T##_many(const T *in, size_t n, T *total)                                       \
{                                                                                               \
    __shared__ T buf[NT];                                                                       \
    unsigned tid = threadIdx.x;                                                                 \
    T v = (T)0;                                                                                 \
    for (size_t i = (size_t)blockIdx.x * NT + tid; i < n; i += (size_t)NT * gridDim.x)         \
        v += in[i];                                                                             \
    buf[tid] = v;                                                                               \
    __syncthreads();                                                                            \
    TREE_SEQUENTIAL(buf, tid)                                                                   \
    if (tid == 0)                                                                               \
        atomicAdd(total, buf[0]);                                                               \
}                                                                                               \
__global__ void T##_shuffle(const T *in, size_t n, T *part)                                     \
{                                                                                               \
    __shared__ T per_warp[WARPS];                                                               \
    unsigned tid = threadIdx.x, lane = tid % 32;                                                \
    size_t stride = (size_t)NT * gridDim.x, me = (size_t)blockIdx.x * NT + tid;                 \
    size_t n4 = ((size_t)in % 16 == 0) ? n / 4 : 0;                                             \
    T v = (T)0;                                                                                 \
    for (size_t i = me; i < n4; i += stride) {                                                  \
        T##_x4 q = ((const T##_x4 *)in)[i];                                                     \
        v += (q.x + q.y) + (q.z + q.w);                                                         \
    }                                                                                           \
    for (size_t i = 4 * n4 + me; i < n; i += stride)                                            \
        v += in[i];                                                                             \
    for (int d = 16; d > 0; d /= 2)                                                             \
        v += __shfl_down_sync(0xffffffffu, v, d);                                               \
    if (lane == 0)                                                                              \
        per_warp[tid / 32] = v;                                                                 \
    __syncthreads();                                                                            \
    if (tid < WARPS) {                                                                          \
        const unsigned mask = (1u << WARPS) - 1u;                                               \
        v = per_warp[tid];                                                                      \
        for (int d = WARPS / 2; d > 0; d /= 2)                                                  \
            v += __shfl_down_sync(mask, v, d);                                                  \
        if (tid == 0)                                                                           \
            part[blockIdx.x] = v;                                                               \
    }                                                                                           \
}

DEFINE_KERNELS(int)
DEFINE_KERNELS(float)

/* Step 6: the block size as a template parameter (C++ after all). */
template <unsigned B, class T>
__device__ void unrolled_body(const T *in, size_t n, T *part)
{
    __shared__ T buf[B];
    unsigned tid = threadIdx.x;
    size_t i = (size_t)blockIdx.x * 2 * B + tid;
    T v = (i < n ? in[i] : (T)0) + (i + B < n ? in[i + B] : (T)0);
    buf[tid] = v;
    __syncthreads();
    if (B >= 1024) { if (tid < 512) buf[tid] = v = v + buf[tid + 512]; __syncthreads(); }
    if (B >= 512) { if (tid < 256) buf[tid] = v = v + buf[tid + 256]; __syncthreads(); }
    if (B >= 256) { if (tid < 128) buf[tid] = v = v + buf[tid + 128]; __syncthreads(); }
    if (B >= 128) { if (tid < 64) buf[tid] = v = v + buf[tid + 64]; __syncthreads(); }
    if (tid < 32) {
        v += buf[tid + 32];
        v += __shfl_down_sync(0xffffffffu, v, 16);
        v += __shfl_down_sync(0xffffffffu, v, 8);
        v += __shfl_down_sync(0xffffffffu, v, 4);
        v += __shfl_down_sync(0xffffffffu, v, 2);
        v += __shfl_down_sync(0xffffffffu, v, 1);
        if (tid == 0)
            part[blockIdx.x] = v;
    }
}
__global__ void int_unrolled(const int *in, size_t n, int *part) { unrolled_body<NT>(in, n, part); }
__global__ void float_unrolled(const float *in, size_t n, float *part) { unrolled_body<NT>(in, n, part); }

/* ---- host ---- */

#define DEFINE_HOST(T)                                                                          \
typedef void (*T##_kernel)(const T *, size_t, T *);                                             \
static cudaError_t T##_passes(T##_kernel k, size_t per_block, const T *in, size_t n, T *out,    \
                              T *scratch)                                                       \
{                                                                                               \
    for (;;) {                                                                                  \
        size_t blocks = (n + per_block - 1) / per_block;                                        \
        T *dst = blocks == 1 ? out : scratch;                                                   \
        k<<<(unsigned)blocks, NT>>>(in, n, dst);                                                \
        cudaError_t e = cudaGetLastError();                                                     \
        if (e != cudaSuccess || blocks == 1)                                                    \
            return e;                                                                           \
        in = scratch;                                                                           \
        scratch += blocks;                                                                      \
        n = blocks;                                                                             \
    }                                                                                           \
}                                                                                               \
cudaError_t reduce_sum_##T(int step, const T *in, size_t n, T *out, T *scratch)                 \
{                                                                                               \
    switch (step) {                                                                             \
    case 1: return T##_passes(T##_interleaved, NT, in, n, out, scratch);                        \
    case 2: return T##_passes(T##_strided, NT, in, n, out, scratch);                            \
    case 3: return T##_passes(T##_sequential, NT, in, n, out, scratch);                         \
    case 4: return T##_passes(T##_first_add, 2 * NT, in, n, out, scratch);                      \
    case 5: return T##_passes(T##_warp_tail, 2 * NT, in, n, out, scratch);                      \
    case 6: return T##_passes(T##_unrolled, 2 * NT, in, n, out, scratch);                       \
    case 7: {                                                                                   \
        size_t want = (n + NT - 1) / NT;                                                        \
        unsigned blocks = want < STEP7_BLOCKS ? (unsigned)want : STEP7_BLOCKS;                  \
        cudaError_t e = cudaMemsetAsync(out, 0, sizeof(T));                                     \
        if (e != cudaSuccess)                                                                   \
            return e;                                                                           \
        T##_many<<<blocks, NT>>>(in, n, out);                                                   \
        return cudaGetLastError();                                                              \
    }                                                                                           \
    case 8: return T##_passes(T##_shuffle, 8 * NT, in, n, out, scratch);                        \
    default: return cudaErrorInvalidValue;                                                      \
    }                                                                                           \
}

extern "C" {
DEFINE_HOST(int)
DEFINE_HOST(float)
}
