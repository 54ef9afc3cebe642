// Lab 01 GPU part: ONE kernel for steps 5-7, the layout of B's tile run-time
// arguments (row pitch 32 or 33, XOR swizzle on or off) over a [32 * 33]
// array. The probe stages the 32 lane offsets in shared memory first.
#include "banks.h"

#include <cuda_runtime.h>

__global__ void probe_shared_words(const unsigned *lane_word, int rounds, long long *start, long long *stop,
                                   unsigned *sums)
{
    __shared__ unsigned data[BANKS_PROBE_WORDS];
    __shared__ unsigned offsets[BANKS_WARP];
    if (threadIdx.x < BANKS_WARP)
        offsets[threadIdx.x] = lane_word[threadIdx.x];
    for (int w = threadIdx.x; w < BANKS_PROBE_WORDS; w += blockDim.x)
        data[w] = (unsigned)w;
    __syncthreads();
    const int lane = threadIdx.x % BANKS_WARP;
    const unsigned base = offsets[lane];
    volatile unsigned *v = data;
    unsigned total = 0;
    long long t0 = clock64();
    for (int r = 0; r < rounds; ++r)
#pragma unroll
        for (int j = 0; j < BANKS_PROBE_UNROLL; ++j)
            total += v[base + BANKS_WARP * j];
    long long t1 = clock64();
    if (lane == 0) {
        start[threadIdx.x / BANKS_WARP] = t0;
        stop[threadIdx.x / BANKS_WARP] = t1;
    }
    sums[threadIdx.x] = total;
}

__global__ void abt_any_layout(const float *a, const float *b, float *c, int pitch, int swizzle)
{
    __shared__ float sa[BANKS_TILE * BANKS_TILE];
    __shared__ float sb[BANKS_TILE * (BANKS_TILE + 1)];
    const int x = threadIdx.x, y = threadIdx.y;
    const size_t at = (size_t)blockIdx.x * BANKS_TILE * BANKS_TILE + (size_t)y * BANKS_TILE + x;
    const int xmask = swizzle ? BANKS_TILE - 1 : 0;
    sa[y * BANKS_TILE + x] = a[at];
    sb[y * pitch + (x ^ (y & xmask))] = b[at];
    __syncthreads();
    float acc = 0.0f;
#pragma unroll 1
    for (int k = 0; k < BANKS_TILE; ++k)
        acc += sa[y * BANKS_TILE + k] * sb[x * pitch + (k ^ (x & xmask))];
    c[at] = acc;
}

extern "C" cudaError_t banks_probe(const unsigned *lane_word, int rounds, long long *start, long long *stop,
                                   unsigned *sums)
{
    if (rounds < 1 || rounds > BANKS_PROBE_MAX_ROUNDS)
        return cudaErrorInvalidValue;
    probe_shared_words<<<1, BANKS_PROBE_WARPS * BANKS_WARP>>>(lane_word, rounds, start, stop, sums);
    return cudaGetLastError();
}

extern "C" cudaError_t banks_abt(int step, const float *a, const float *b, float *c, int batch)
{
    static const struct { int pitch, swizzle; } layout[3] = {{BANKS_TILE, 0}, {BANKS_TILE + 1, 0}, {BANKS_TILE, 1}};
    if (batch < 1 || step < 5 || step > 7)
        return cudaErrorInvalidValue;
    abt_any_layout<<<batch, dim3(BANKS_TILE, BANKS_TILE)>>>(a, b, c, layout[step - 5].pitch, layout[step - 5].swizzle);
    return cudaGetLastError();
}
