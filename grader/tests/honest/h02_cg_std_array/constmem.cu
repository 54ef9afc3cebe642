// Lab 02 with cooperative groups and cuda::std::array: the by-value filter
// of step 8 is a cuda::std::array<float, 81> kernel parameter. One lookup
// kernel serves steps 2-5 with the table's place a template argument; the
// convolution is one kernel with the filter's place a template argument,
// one thread per output pixel of a 16 x 16 tile (a 64 x 16 block tile: four
// tiles side by side), blocks looping over tile rows beyond the grid. The
// walk keeps a cuda::std::array of sums, one per read k, and subtracts
// those whose bit of the signs is set from the others at the end.
#include "constmem.h"

#include <cooperative_groups.h>
#include <cuda/std/array>

namespace cg = cooperative_groups;

__constant__ float table_small[CONSTMEM_TABLE_ENTRIES];
__constant__ float table_big[CONSTMEM_BIG_ENTRIES];
__constant__ float filter_c[CONSTMEM_MAX_TAPS];

using taps_t = cuda::std::array<float, CONSTMEM_MAX_TAPS>;

enum class Where { ConstSmall, ConstBig, Ldg, Plain };

template <Where W>
__device__ __forceinline__ float entry(const float *global_copy, int i)
{
    if constexpr (W == Where::ConstSmall)
        return table_small[i];
    else if constexpr (W == Where::ConstBig)
        return table_big[i];
    else if constexpr (W == Where::Ldg)
        return __ldg(global_copy + i);
    else
        return global_copy[i];
}

using per_read_t = cuda::std::array<float, CONSTMEM_PASS_READS>;

// the reads whose bit of signs is clear, minus those whose bit is set (constmem.h)
__device__ __forceinline__ float plus_minus(const per_read_t &per_read, unsigned signs)
{
    float plus = 0.0f, minus = 0.0f;
#pragma unroll
    for (int k = 0; k < CONSTMEM_PASS_READS; ++k) {
        if (signs & (1u << k))
            minus += per_read[k];
        else
            plus += per_read[k];
    }
    return plus - minus;
}

__global__ void lookup_coeffs(float *out, int threads, int passes, unsigned signs)
{
    const int t = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (t >= threads)
        return;
    per_read_t per_read{};
    for (int p0 = 0; p0 < passes; p0 += 32)
#pragma unroll
        for (int q = 0; q < 32; ++q)
            if (p0 + q < passes) {
                const float x = (float)((t + p0 + q) % 3 - 1);
#pragma unroll
                for (int k = 0; k < 32; ++k)
                    per_read[k] += table_small[32 * q + k] * x;
            }
    out[t] = plus_minus(per_read, signs);
}

template <Where W, int STRIDE, int MASK>
__global__ void lookup_walk(const float *global_copy, float *out, int threads, int passes, int d, unsigned signs)
{
    cg::thread_block block = cg::this_thread_block();
    const int t = (int)(block.group_index().x * block.size() + block.thread_rank());
    if (t >= threads)
        return;
    const int lane_pick = (t % 32) & (d - 1);
    per_read_t per_read{};
    for (int p = 0; p < passes; ++p) {
        const int first = (((t / 32) * CONSTMEM_WARP_STEP + p * CONSTMEM_PASS_STEP) & MASK) + lane_pick;
#pragma unroll
        for (int k = 0; k < CONSTMEM_PASS_READS; ++k)
            per_read[k] += entry<W>(global_copy, first + k * STRIDE);
    }
    out[t] = plus_minus(per_read, signs);
}

enum class Taps { Constant, Global, Param };

constexpr int TILE = 16, SPAN = 4;   // a block: SPAN tiles of TILE x TILE side by side

template <int R, Taps F>
__global__ void conv_tiles(const float *in, float *out, int width, int height, const float *w_dev, taps_t w_val)
{
    constexpr int N = 2 * R + 1, SW = SPAN * TILE + 2 * R, SH = TILE + 2 * R;
    __shared__ float halo[SH][SW];
    cg::thread_block block = cg::this_thread_block();
    const int tx = threadIdx.x, ty = threadIdx.y, rank = (int)block.thread_rank(), count = (int)block.size();
    const int x0 = blockIdx.x * SPAN * TILE;
    auto tap = [&](int i) -> float {
        if constexpr (F == Taps::Constant)
            return filter_c[i];
        else if constexpr (F == Taps::Global)
            return w_dev[i];
        else
            return w_val[i];
    };
    for (long long tr = blockIdx.y; tr * TILE < height; tr += gridDim.y) {
        const long long y0 = tr * TILE;
        for (int e = rank; e < SW * SH; e += count) {
            const int hy = e / SW, hx = e % SW;
            const long long gy = y0 + hy - R;
            const int gx = x0 + hx - R;
            halo[hy][hx] = (gy >= 0 && gy < height && gx >= 0 && gx < width) ? in[gy * width + gx] : 0.0f;
        }
        block.sync();
        const long long y = y0 + ty;
        const int x = x0 + tx;
        if (y < height && x < width) {
            float acc = 0.0f;
#pragma unroll
            for (int i = 0; i < N; ++i)
#pragma unroll
                for (int j = 0; j < N; ++j)
                    acc += tap(i * N + j) * halo[ty + i][tx + j];
            out[y * width + x] = acc;
        }
        block.sync();
    }
}

template <Taps F>
static cudaError_t conv_launch(const constmem_conv_job *job, const taps_t &w)
{
    const long long rows = (job->height + TILE - 1) / TILE;
    const dim3 grid((job->width + SPAN * TILE - 1) / (SPAN * TILE), (unsigned)(rows < 65535 ? rows : 65535));
    const dim3 block(SPAN * TILE, TILE);
    switch (job->radius) {
    case 1: conv_tiles<1, F><<<grid, block>>>(job->in, job->out, job->width, job->height, job->w_dev, w); break;
    case 2: conv_tiles<2, F><<<grid, block>>>(job->in, job->out, job->width, job->height, job->w_dev, w); break;
    case 3: conv_tiles<3, F><<<grid, block>>>(job->in, job->out, job->width, job->height, job->w_dev, w); break;
    case 4: conv_tiles<4, F><<<grid, block>>>(job->in, job->out, job->width, job->height, job->w_dev, w); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t constmem_upload_tables(const float *table, const float *big)
{
    cudaError_t e = cudaMemcpyToSymbol(table_small, table, sizeof(table_small));
    return e ? e : cudaMemcpyToSymbol(table_big, big, sizeof(table_big));
}

extern "C" cudaError_t constmem_upload_filter(const float *w, int radius)
{
    if (radius < 1 || radius > CONSTMEM_MAX_RADIUS)
        return cudaErrorInvalidValue;
    return cudaMemcpyToSymbol(filter_c, w, sizeof(float) * (size_t)((2 * radius + 1) * (2 * radius + 1)));
}

extern "C" cudaError_t constmem_lookup(int step, const constmem_lookup_job *j)
{
    if (j == nullptr || j->threads < 1 || j->threads > CONSTMEM_MAX_THREADS || j->passes < 1 ||
        j->passes > CONSTMEM_MAX_PASSES || j->d < 1 || j->d > 32 || (j->d & (j->d - 1)) != 0 ||
        (j->big != 0 && j->big != 1))
        return cudaErrorInvalidValue;
    const unsigned blocks = (unsigned)((j->threads + 255) / 256);
    if ((step == 1 || step == 2) && j->big)
        return cudaErrorInvalidValue;
    if ((step == 1 || step == 5) && j->d != 1)
        return cudaErrorInvalidValue;
    if (step == 5 && !j->big)
        return cudaErrorInvalidValue;
    constexpr int BS = CONSTMEM_BIG_STRIDE, BM = CONSTMEM_BIG_MASK, SM = CONSTMEM_SMALL_MASK;
    switch (step) {
    case 1: lookup_coeffs<<<blocks, 256>>>(j->out, j->threads, j->passes, j->signs); break;
    case 2:
        lookup_walk<Where::ConstSmall, 1, SM><<<blocks, 256>>>(nullptr, j->out, j->threads, j->passes, j->d, j->signs);
        break;
    case 3:
        if (j->big)
            lookup_walk<Where::Ldg, BS, BM><<<blocks, 256>>>(j->table, j->out, j->threads, j->passes, j->d, j->signs);
        else
            lookup_walk<Where::Ldg, 1, SM><<<blocks, 256>>>(j->table, j->out, j->threads, j->passes, j->d, j->signs);
        break;
    case 4:
        if (j->big)
            lookup_walk<Where::Plain, BS, BM><<<blocks, 256>>>(j->table, j->out, j->threads, j->passes, j->d,
                                                               j->signs);
        else
            lookup_walk<Where::Plain, 1, SM><<<blocks, 256>>>(j->table, j->out, j->threads, j->passes, j->d,
                                                              j->signs);
        break;
    case 5:
        lookup_walk<Where::ConstBig, BS, BM><<<blocks, 256>>>(nullptr, j->out, j->threads, j->passes, 1, j->signs);
        break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t constmem_conv(int step, const constmem_conv_job *job)
{
    if (!job || job->width < 1 || job->height < 1 || (long long)job->width * job->height >= (1LL << 31) ||
        job->height > 4194240 || job->radius < 1 || job->radius > CONSTMEM_MAX_RADIUS)
        return cudaErrorInvalidValue;
    taps_t w{};
    if (step == 8) {
        const int n = (2 * job->radius + 1) * (2 * job->radius + 1);
        for (int i = 0; i < n; ++i)
            w[i] = job->w[i];
    }
    switch (step) {
    case 6: return conv_launch<Taps::Constant>(job, w);
    case 7: return conv_launch<Taps::Global>(job, w);
    case 8: return conv_launch<Taps::Param>(job, w);
    default: return cudaErrorInvalidValue;
    }
}
