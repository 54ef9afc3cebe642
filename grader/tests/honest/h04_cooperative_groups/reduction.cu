/* Lab 04 with cooperative groups: the block is a thread_block, the last
 * warp a tiled_partition<32>, step 8 uses cg::reduce. Blocks of 128 threads
 * (steps 1-5), a 512-thread template (step 6). Host side: a recursive
 * helper reduces the partial sums until one is left. */
#include "reduction.h"

#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda/std/cstdint>
#include <cuda/std/type_traits>
#include <cstdio>

namespace cg = cooperative_groups;

#ifndef RED_TRACE
#define RED_TRACE 0   // 1: block 0 prints its partial (debugging only)
#endif

static const int BLOCK = 128;

template <typename T>
__device__ void report(const char *what, T v)
{
    if (RED_TRACE && blockIdx.x == 0 && threadIdx.x == 0)
        printf("%s: block 0 partial %f\n", what, (double)v);
}

template <typename T>
__device__ T load_or_zero(const T *p, cuda::std::size_t i, cuda::std::size_t n)
{
    return i < n ? p[i] : T(0);
}

template <typename T>
__global__ void k_interleaved(const T *in, cuda::std::size_t n, T *partial)
{
    cg::thread_block block = cg::this_thread_block();
    __shared__ T s[BLOCK];
    unsigned t = block.thread_rank();
    s[t] = load_or_zero(in, block.group_index().x * (cuda::std::size_t)BLOCK + t, n);
    block.sync();
    for (unsigned h = 1; h < BLOCK; h <<= 1) {
        if ((t & (2 * h - 1)) == 0)
            s[t] += s[t + h];
        block.sync();
    }
    if (t == 0) {
        report("interleaved", s[0]);
        partial[block.group_index().x] = s[0];
    }
}

template <typename T>
__global__ void k_strided(const T *in, cuda::std::size_t n, T *partial)
{
    cg::thread_block block = cg::this_thread_block();
    __shared__ T s[BLOCK];
    unsigned t = block.thread_rank();
    s[t] = load_or_zero(in, block.group_index().x * (cuda::std::size_t)BLOCK + t, n);
    block.sync();
    for (unsigned h = 1; h < BLOCK; h <<= 1) {
        unsigned j = 2 * h * t;
        if (j < BLOCK)
            s[j] += s[j + h];
        block.sync();
    }
    if (t == 0)
        partial[block.group_index().x] = s[0];
}

// Steps 3 and 4 differ only in what a thread loads first.
template <typename T, int LOADS>
__global__ void k_sequential(const T *in, cuda::std::size_t n, T *partial)
{
    cg::thread_block block = cg::this_thread_block();
    __shared__ T s[BLOCK];
    unsigned t = block.thread_rank();
    cuda::std::size_t i = block.group_index().x * (cuda::std::size_t)(BLOCK * LOADS) + t;
    T v = load_or_zero(in, i, n);
    if (LOADS == 2)
        v += load_or_zero(in, i + BLOCK, n);
    s[t] = v;
    block.sync();
    for (unsigned h = BLOCK / 2; h > 0; h >>= 1) {
        if (t < h)
            s[t] += s[t + h];
        block.sync();
    }
    if (t == 0)
        partial[block.group_index().x] = s[0];
}

template <typename T>
__global__ void k_last_warp(const T *in, cuda::std::size_t n, T *partial)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    __shared__ T s[BLOCK];
    unsigned t = block.thread_rank();
    cuda::std::size_t i = block.group_index().x * (cuda::std::size_t)(2 * BLOCK) + t;
    s[t] = load_or_zero(in, i, n) + load_or_zero(in, i + BLOCK, n);
    block.sync();
    for (unsigned h = BLOCK / 2; h > 32; h >>= 1) {
        if (t < h)
            s[t] += s[t + h];
        block.sync();
    }
    if (warp.meta_group_rank() == 0) {
        volatile T *w = s;
        T v = w[t] + w[t + 32];
        for (unsigned h = 16; h >= 1; h >>= 1) {
            w[t] = v;
            warp.sync();
            v += w[t + h];
            warp.sync();
        }
        if (t == 0)
            partial[block.group_index().x] = v;
    }
}

template <typename T, unsigned B>
__global__ void k_unrolled(const T *in, cuda::std::size_t n, T *partial)
{
    static_assert(B >= 64 && (B & (B - 1)) == 0, "a power of two, at least 64");
    cg::thread_block block = cg::this_thread_block();
    __shared__ T s[B];
    unsigned t = threadIdx.x;
    cuda::std::size_t i = blockIdx.x * (cuda::std::size_t)(2 * B) + t;
    T v = load_or_zero(in, i, n) + load_or_zero(in, i + B, n);
    s[t] = v;
    block.sync();
#pragma unroll
    for (unsigned h = B / 2; h > 32; h >>= 1) {
        if (t < h)
            s[t] = v = v + s[t + h];
        block.sync();
    }
    if (t < 32) {
        auto warp = cg::tiled_partition<32>(block);
        volatile T *w = s;
#pragma unroll
        for (unsigned h = 32; h >= 1; h >>= 1) {
            v += w[t + h];
            warp.sync();
            w[t] = v;
            warp.sync();
        }
        if (t == 0)
            partial[blockIdx.x] = v;
    }
}

template <typename T>
__global__ void k_grid_stride(const T *in, cuda::std::size_t n, T *partial)
{
    cg::thread_block block = cg::this_thread_block();
    __shared__ T s[BLOCK];
    unsigned t = block.thread_rank();
    T v = T(0);
    for (cuda::std::size_t i = blockIdx.x * (cuda::std::size_t)BLOCK + t; i < n; i += (cuda::std::size_t)gridDim.x * BLOCK)
        v += in[i];
    s[t] = v;
    block.sync();
    for (unsigned h = BLOCK / 2; h > 0; h >>= 1) {
        if (t < h)
            s[t] += s[t + h];
        block.sync();
    }
    if (t == 0)
        partial[blockIdx.x] = s[0];
}

template <typename T> struct vec4_of;
template <> struct vec4_of<int> { using type = int4; };
template <> struct vec4_of<float> { using type = float4; };

template <typename T, bool ALIGNED>
__global__ void k_shuffle(const T *in, cuda::std::size_t n, T *partial)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    __shared__ T warp_sums[BLOCK / 32];
    cuda::std::size_t stride = (cuda::std::size_t)gridDim.x * BLOCK;
    cuda::std::size_t me = blockIdx.x * (cuda::std::size_t)BLOCK + threadIdx.x;
    cuda::std::size_t head = 0;
    T v = T(0);
    if (ALIGNED) {
        using V = typename vec4_of<T>::type;
        const V *in4 = reinterpret_cast<const V *>(in);
        head = n / 4;
        for (cuda::std::size_t i = me; i < head; i += stride) {
            V q = in4[i];
            v += q.x + q.y + q.z + q.w;
        }
        head *= 4;
    }
    for (cuda::std::size_t i = head + me; i < n; i += stride)
        v += in[i];
    v = cg::reduce(warp, v, cg::plus<T>());
    if (warp.thread_rank() == 0)
        warp_sums[warp.meta_group_rank()] = v;
    block.sync();
    if (warp.meta_group_rank() == 0) {
        v = warp.thread_rank() < BLOCK / 32 ? warp_sums[warp.thread_rank()] : T(0);
        v = cg::reduce(warp, v, cg::plus<T>());
        if (warp.thread_rank() == 0)
            partial[blockIdx.x] = v;
    }
}

enum { STEP6_B = 512, STEP7_GRID = 1024, STEP8_PER_BLOCK = BLOCK * 16 };

template <typename T>
static cudaError_t one_pass(int step, const T *in, cuda::std::size_t n, T *dst, unsigned *blocks)
{
    auto grid = [n](cuda::std::size_t per) { return (unsigned)((n + per - 1) / per); };
    switch (step) {
    case 1: *blocks = grid(BLOCK); k_interleaved<T><<<*blocks, BLOCK>>>(in, n, dst); break;
    case 2: *blocks = grid(BLOCK); k_strided<T><<<*blocks, BLOCK>>>(in, n, dst); break;
    case 3: *blocks = grid(BLOCK); k_sequential<T, 1><<<*blocks, BLOCK>>>(in, n, dst); break;
    case 4: *blocks = grid(2 * BLOCK); k_sequential<T, 2><<<*blocks, BLOCK>>>(in, n, dst); break;
    case 5: *blocks = grid(2 * BLOCK); k_last_warp<T><<<*blocks, BLOCK>>>(in, n, dst); break;
    case 6: *blocks = grid(2 * STEP6_B); k_unrolled<T, STEP6_B><<<*blocks, STEP6_B>>>(in, n, dst); break;
    case 7:
        *blocks = grid(BLOCK);
        if (*blocks > STEP7_GRID)
            *blocks = STEP7_GRID;
        k_grid_stride<T><<<*blocks, BLOCK>>>(in, n, dst);
        break;
    case 8:
        *blocks = grid(STEP8_PER_BLOCK);
        if ((reinterpret_cast<cuda::std::uintptr_t>(in) & 15u) == 0)
            k_shuffle<T, true><<<*blocks, BLOCK>>>(in, n, dst);
        else
            k_shuffle<T, false><<<*blocks, BLOCK>>>(in, n, dst);
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

// Reduce in[0..n) to *out, partial sums in work[], recursively.
template <typename T>
static cudaError_t reduce_rec(int step, const T *in, cuda::std::size_t n, T *out, T *work)
{
    static_assert(cuda::std::is_arithmetic<T>::value, "numbers only");
    unsigned blocks = 0;
    cudaError_t e = one_pass(step, in, n, work, &blocks);
    if (e != cudaSuccess)
        return e;
    if (blocks == 1)
        return cudaMemcpyAsync(out, work, sizeof(T), cudaMemcpyDeviceToDevice);
    return reduce_rec(step, work, blocks, out, work + blocks);
}

extern "C" cudaError_t reduce_sum_int(int step, const int *in, size_t n, int *out, int *scratch)
{
    if (step < 1 || step > 8)
        return cudaErrorInvalidValue;
    return reduce_rec(step, in, n, out, scratch);
}

extern "C" cudaError_t reduce_sum_float(int step, const float *in, size_t n, float *out, float *scratch)
{
    if (step < 1 || step > 8)
        return cudaErrorInvalidValue;
    return reduce_rec(step, in, n, out, scratch);
}
