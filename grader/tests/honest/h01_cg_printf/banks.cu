// Lab 01, GPU part, with cooperative groups. The kernels can print what
// they do (a debugging switch the launchers leave off).
#include "banks.h"

#include <cooperative_groups.h>
#include <cstdio>

namespace cg = cooperative_groups;

static const bool kVerbose = false;

__device__ unsigned read_pattern(volatile const unsigned *words, unsigned base, int rounds)
{
    unsigned s = 0;
    for (int r = 0; r < rounds; ++r)
#pragma unroll
        for (int j = 0; j < BANKS_PROBE_UNROLL; ++j)
            s += words[base + 32 * j];
    return s;
}

__global__ void probe_pattern(const unsigned *lane_word, int rounds, long long *start, long long *stop,
                              unsigned *sums, bool verbose)
{
    __shared__ unsigned words[BANKS_PROBE_WORDS];
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    for (unsigned w = block.thread_rank(); w < BANKS_PROBE_WORDS; w += block.size())
        words[w] = w;
    unsigned base = lane_word[warp.thread_rank()];
    block.sync();
    long long t0 = clock64();
    unsigned s = read_pattern(words, base, rounds);
    long long t1 = clock64();
    if (warp.thread_rank() == 0) {
        start[warp.meta_group_rank()] = t0;
        stop[warp.meta_group_rank()] = t1;
        if (verbose)
            printf("warp %u: %lld cycles\n", warp.meta_group_rank(), t1 - t0);
    }
    sums[block.thread_rank()] = s;
}

enum class Layout { kColumns, kPadded, kXor };

template <Layout L>
struct BTile {
    static constexpr int kPitch = L == Layout::kPadded ? BANKS_TILE + 1 : BANKS_TILE;
    float v[BANKS_TILE][kPitch];
    __device__ float &at(int r, int c) { return v[r][L == Layout::kXor ? (c ^ r) : c]; }
};

template <Layout L>
__global__ void product_abt(const float *a, const float *b, float *c, bool verbose)
{
    __shared__ float ta[BANKS_TILE][BANKS_TILE];
    __shared__ BTile<L> tb;
    cg::thread_block block = cg::this_thread_block();
    const int i = threadIdx.y, j = threadIdx.x;
    const size_t off = (size_t)blockIdx.x * BANKS_TILE * BANKS_TILE + (size_t)i * BANKS_TILE + j;
    ta[i][j] = a[off];
    tb.at(i, j) = b[off];
    block.sync();
    float acc = 0.0f;
#pragma unroll 1
    for (int k = 0; k < BANKS_TILE; ++k)
        acc += ta[i][k] * tb.at(j, k);
    if (verbose && blockIdx.x == 0 && i == 0 && j == 0)
        printf("C[0][0] = %f\n", acc);
    c[off] = acc;
}

extern "C" cudaError_t banks_probe(const unsigned *lane_word, int rounds, long long *start, long long *stop,
                                   unsigned *sums)
{
    if (rounds < 1 || rounds > BANKS_PROBE_MAX_ROUNDS)
        return cudaErrorInvalidValue;
    probe_pattern<<<1, BANKS_PROBE_WARPS * 32>>>(lane_word, rounds, start, stop, sums, kVerbose);
    return cudaGetLastError();
}

extern "C" cudaError_t banks_abt(int step, const float *a, const float *b, float *c, int batch)
{
    if (batch < 1 || step < 5 || step > 7)
        return cudaErrorInvalidValue;
    dim3 block(BANKS_TILE, BANKS_TILE);
    if (step == 5)
        product_abt<Layout::kColumns><<<batch, block>>>(a, b, c, kVerbose);
    else if (step == 6)
        product_abt<Layout::kPadded><<<batch, block>>>(a, b, c, kVerbose);
    else
        product_abt<Layout::kXor><<<batch, block>>>(a, b, c, kVerbose);
    return cudaGetLastError();
}
