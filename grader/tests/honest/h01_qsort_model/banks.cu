// Lab 01 on the GPU. The probe is `timed_reads`; steps 5-7 are one kernel
// template, `abt_from_tiles<Pitch, Swizzled>`: the layout of B's tile is a
// template argument (steps differ only there).
#include "banks.h"

#include <cuda_runtime.h>

namespace {

__global__ void timed_reads(const unsigned *__restrict__ lane_word, int rounds, long long *start, long long *stop,
                            unsigned *sums)
{
    __shared__ unsigned pool[BANKS_PROBE_WORDS];
    for (unsigned i = threadIdx.x; i < BANKS_PROBE_WORDS; i += blockDim.x)
        pool[i] = i;
    const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
    const unsigned first = lane_word[lane];
    __syncthreads();
    volatile const unsigned *p = pool + first;
    unsigned acc = 0;
    const long long began = clock64();
    for (int r = rounds; r > 0; --r) {
#pragma unroll
        for (int j = 0; j < BANKS_PROBE_UNROLL; ++j)
            acc += p[j * 32];
    }
    const long long ended = clock64();
    if (lane == 0) {
        start[warp] = began;
        stop[warp] = ended;
    }
    sums[threadIdx.x] = acc;
}

template <int Pitch, bool Swizzled>
__global__ void abt_from_tiles(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ c)
{
    __shared__ float ta[BANKS_TILE][BANKS_TILE];
    __shared__ float tb[BANKS_TILE][Pitch];
    const int col = threadIdx.x, row = threadIdx.y;
    const size_t base = (size_t)blockIdx.x * (BANKS_TILE * BANKS_TILE);
    auto slot = [](int r, int k) { return Swizzled ? (k ^ r) : k; };
    ta[row][col] = a[base + row * BANKS_TILE + col];
    tb[row][slot(row, col)] = b[base + row * BANKS_TILE + col];
    __syncthreads();
    float dot = 0.0f;
#pragma unroll 1
    for (int k = 0; k < BANKS_TILE; ++k)
        dot += ta[row][k] * tb[col][slot(col, k)];
    c[base + row * BANKS_TILE + col] = dot;
}

}  // namespace

extern "C" cudaError_t banks_probe(const unsigned *lane_word, int rounds, long long *start, long long *stop,
                                   unsigned *sums)
{
    if (rounds < 1 || rounds > BANKS_PROBE_MAX_ROUNDS)
        return cudaErrorInvalidValue;
    timed_reads<<<1, BANKS_PROBE_WARPS * BANKS_WARP>>>(lane_word, rounds, start, stop, sums);
    return cudaGetLastError();
}

extern "C" cudaError_t banks_abt(int step, const float *a, const float *b, float *c, int batch)
{
    const dim3 threads(BANKS_TILE, BANKS_TILE);
    if (batch < 1)
        return cudaErrorInvalidValue;
    if (step == 5)
        abt_from_tiles<BANKS_TILE, false><<<batch, threads>>>(a, b, c);
    else if (step == 6)
        abt_from_tiles<BANKS_TILE + 1, false><<<batch, threads>>>(a, b, c);
    else if (step == 7)
        abt_from_tiles<BANKS_TILE, true><<<batch, threads>>>(a, b, c);
    else
        return cudaErrorInvalidValue;
    return cudaGetLastError();
}
