// Lab 04 with 1024-thread blocks. Every block-level kernel writes one
// partial per block; a final single-block launch of the SAME kernel sums
// the partials (so each step is two or more launches of its own kernel).
// Step 7 sizes its grid from the SM count (cudaDeviceGetAttribute). Step 8
// sums ints inside a warp with __reduce_add_sync (sm_80+) and floats with
// __shfl_xor_sync; its tail (n % 4 elements) is a separate small kernel.
#include "reduction.h"

#include <cuda_runtime.h>

namespace {

constexpr unsigned kBig = 1024;

template <typename T>
struct Loader {
    const T *src;
    size_t n;
    __device__ T operator()(size_t i) const { return i < n ? src[i] : T(0); }
};

template <int kStep, typename T>
__global__ void __launch_bounds__(kBig) block_sum(const T *src, size_t n, T *dst)
{
    __shared__ T s[kBig];
    const unsigned tid = threadIdx.x;
    Loader<T> at{src, n};
    const size_t per_block = kStep >= 4 ? 2 * (size_t)kBig : kBig;
    const size_t i = blockIdx.x * per_block + tid;
    T v = at(i);
    if (kStep >= 4)
        v += at(i + kBig);
    s[tid] = v;
    __syncthreads();
    if (kStep == 1) {
        for (unsigned stride = 1; stride < kBig; stride <<= 1) {
            if (tid % (stride << 1) == 0)
                s[tid] += s[tid + stride];
            __syncthreads();
        }
    } else if (kStep == 2) {
        for (unsigned stride = 1; stride < kBig; stride <<= 1) {
            const unsigned j = (stride << 1) * tid;
            if (j < kBig)
                s[j] += s[j + stride];
            __syncthreads();
        }
    } else {
        const unsigned stop = kStep >= 5 ? 32 : 0;
#pragma unroll
        for (unsigned stride = kBig / 2; stride > stop; stride >>= 1) {
            if (tid < stride)
                s[tid] += s[tid + stride];
            __syncthreads();
        }
        if (kStep >= 5 && tid < 32) {
            volatile T *w = s;
            T x = w[tid];
#pragma unroll
            for (unsigned stride = 32; stride > 0; stride >>= 1) {
                x += w[tid + stride];
                __syncwarp();
                w[tid] = x;
                __syncwarp();
            }
        }
    }
    if (tid == 0)
        dst[blockIdx.x] = s[0];
}

template <typename T>
__global__ void __launch_bounds__(kBig) grid_stride_sum(const T *src, size_t n, T *dst)
{
    __shared__ T s[kBig];
    T v = T(0);
    for (size_t i = blockIdx.x * (size_t)kBig + threadIdx.x; i < n; i += (size_t)gridDim.x * kBig)
        v += src[i];
    s[threadIdx.x] = v;
    __syncthreads();
    for (unsigned stride = kBig / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride)
            s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        dst[blockIdx.x] = s[0];
}

__device__ __forceinline__ int warp_add(int v) { return __reduce_add_sync(0xffffffffu, v); }
__device__ __forceinline__ float warp_add(float v)
{
    for (int m = 16; m; m >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, m);
    return v;
}

template <typename T> struct Four;
template <> struct Four<int> { using V = int4; };
template <> struct Four<float> { using V = float4; };

// Quads only (n4 of them); the caller adds the tail.
template <typename T>
__global__ void __launch_bounds__(kBig) quad_shuffle_sum(const typename Four<T>::V *src, size_t n4, T *dst)
{
    __shared__ T warps[kBig / 32];
    T v = T(0);
    for (size_t i = blockIdx.x * (size_t)kBig + threadIdx.x; i < n4; i += (size_t)gridDim.x * kBig) {
        typename Four<T>::V q = src[i];
        v += (q.x + q.y) + (q.z + q.w);
    }
    v = warp_add(v);
    if ((threadIdx.x & 31) == 0)
        warps[threadIdx.x >> 5] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        v = warp_add(warps[threadIdx.x]);
        if (threadIdx.x == 0)
            dst[blockIdx.x] = v;
    }
}

// One warp: the partials plus the last n % 4 elements of the input.
template <typename T>
__global__ void finish_with_tail(const T *partials, unsigned count, const T *tail, unsigned tail_n, T *out)
{
    T v = T(0);
    for (unsigned i = threadIdx.x; i < count; i += 32)
        v += partials[i];
    if (threadIdx.x < tail_n)
        v += tail[threadIdx.x];
    v = warp_add(v);
    if (threadIdx.x == 0)
        *out = v;
}

template <typename T, typename Launch>
cudaError_t until_one(const T *in, size_t n, T *out, T *scratch, size_t per_block, Launch launch)
{
    for (;;) {
        const size_t blocks = (n + per_block - 1) / per_block;
        T *dst = blocks == 1 ? out : scratch;
        launch(in, n, dst, (unsigned)blocks);
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess || blocks == 1)
            return e;
        in = dst;
        scratch += blocks;
        n = blocks;
    }
}

template <int kStep, typename T>
cudaError_t block_step(const T *in, size_t n, T *out, T *scratch)
{
    return until_one(in, n, out, scratch, kStep >= 4 ? 2 * kBig : kBig,
                     [](const T *s, size_t c, T *d, unsigned g) { block_sum<kStep, T><<<g, kBig>>>(s, c, d); });
}

template <typename T>
cudaError_t sum(int step, const T *in, size_t n, T *out, T *scratch)
{
    switch (step) {
    case 1: return block_step<1>(in, n, out, scratch);
    case 2: return block_step<2>(in, n, out, scratch);
    case 3: return block_step<3>(in, n, out, scratch);
    case 4: return block_step<4>(in, n, out, scratch);
    case 5: return block_step<5>(in, n, out, scratch);
    case 6: return block_step<6>(in, n, out, scratch);   // kBig is the compile-time block size here
    case 7: {
        int dev = 0, sms = 0;
        if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) !=
                                                      cudaSuccess || sms < 1)
            sms = 16;
        size_t want = (n + kBig - 1) / kBig, grid = 2 * (size_t)sms;
        unsigned g = (unsigned)(want < grid ? want : grid);
        grid_stride_sum<T><<<g, kBig>>>(in, n, g == 1 ? out : scratch);
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess || g == 1)
            return e;
        return block_step<3>(scratch, g, out, scratch + g);
    }
    case 8: {
        const size_t n4 = n / 4;
        size_t want = (n4 + 4 * kBig - 1) / (4 * kBig);
        unsigned g = (unsigned)(want < 1024 ? (want ? want : 1) : 1024);
        quad_shuffle_sum<T><<<g, kBig>>>(reinterpret_cast<const typename Four<T>::V *>(in), n4, scratch);
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess)
            return e;
        finish_with_tail<T><<<1, 32>>>(scratch, g, in + 4 * n4, (unsigned)(n - 4 * n4), out);
        return cudaGetLastError();
    }
    default:
        return cudaErrorInvalidValue;
    }
}

}  // namespace

extern "C" cudaError_t reduce_sum_int(int step, const int *in, size_t n, int *out, int *scratch)
{
    return sum(step, in, n, out, scratch);
}

extern "C" cudaError_t reduce_sum_float(int step, const float *in, size_t n, float *out, float *scratch)
{
    return sum(step, in, n, out, scratch);
}
