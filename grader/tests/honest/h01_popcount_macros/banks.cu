/* Lab 01, GPU part, C style. The probe's words are in dynamic shared
 * memory. C = A*B^T uses blocks of 32 x 8 threads: thread (x, y) computes
 * C[y + 8i][x] for i = 0..3. The three layouts of B's tile are three
 * kernels stamped out by one macro. */
#include "banks.h"

#include <cuda_runtime.h>

#define ROWS_PER_PASS 8

__global__ void bank_probe(const unsigned *lane_word, int rounds, long long *start, long long *stop,
                           unsigned *sums)
{
    extern __shared__ unsigned words[];
    volatile unsigned *vw = words;
    unsigned t = threadIdx.x;
    for (unsigned w = t; w < BANKS_PROBE_WORDS; w += blockDim.x)
        vw[w] = w;
    __syncthreads();
    unsigned at = lane_word[t % BANKS_WARP];
    unsigned total = 0;
    long long t0 = clock64();
    for (int r = 0; r < rounds; r++) {
#pragma unroll
        for (int j = 0; j < BANKS_PROBE_UNROLL; j++)
            total += vw[at + 32u * j];
    }
    long long t1 = clock64();
    if (t % BANKS_WARP == 0) {
        start[t / BANKS_WARP] = t0;
        stop[t / BANKS_WARP] = t1;
    }
    sums[t] = total;
}

#define DEFINE_ABT(NAME, PITCH, COL)                                                   \
    __global__ void NAME(const float *a, const float *b, float *c)                     \
    {                                                                                  \
        __shared__ float sa[BANKS_TILE][BANKS_TILE];                                   \
        __shared__ float sb[BANKS_TILE][PITCH];                                        \
        const float *ma = a + (size_t)blockIdx.x * BANKS_TILE * BANKS_TILE;            \
        const float *mb = b + (size_t)blockIdx.x * BANKS_TILE * BANKS_TILE;            \
        float *mc = c + (size_t)blockIdx.x * BANKS_TILE * BANKS_TILE;                  \
        int x = threadIdx.x;                                                           \
        for (int y = threadIdx.y; y < BANKS_TILE; y += ROWS_PER_PASS) {                \
            sa[y][x] = ma[y * BANKS_TILE + x];                                         \
            sb[y][COL(y, x)] = mb[y * BANKS_TILE + x];                                 \
        }                                                                              \
        __syncthreads();                                                               \
        for (int y = threadIdx.y; y < BANKS_TILE; y += ROWS_PER_PASS) {                \
            float s = 0.0f;                                                            \
            _Pragma("unroll 1") for (int k = 0; k < BANKS_TILE; k++)                   \
                s += sa[y][k] * sb[x][COL(x, k)];                                      \
            mc[y * BANKS_TILE + x] = s;                                                \
        }                                                                              \
    }

#define STRAIGHT(r, k) (k)
#define XORED(r, k) ((k) ^ (r))

DEFINE_ABT(abt_plain, BANKS_TILE, STRAIGHT)
DEFINE_ABT(abt_pad, BANKS_TILE + 1, STRAIGHT)
DEFINE_ABT(abt_xor, BANKS_TILE, XORED)

cudaError_t banks_probe(const unsigned *lane_word, int rounds, long long *start, long long *stop, unsigned *sums)
{
    if (rounds < 1 || rounds > BANKS_PROBE_MAX_ROUNDS)
        return cudaErrorInvalidValue;
    bank_probe<<<1, BANKS_WARP * BANKS_PROBE_WARPS, BANKS_PROBE_WORDS * sizeof(unsigned)>>>(lane_word, rounds,
                                                                                           start, stop, sums);
    return cudaGetLastError();
}

cudaError_t banks_abt(int step, const float *a, const float *b, float *c, int batch)
{
    void (*kernel)(const float *, const float *, float *);
    if (batch < 1)
        return cudaErrorInvalidValue;
    switch (step) {
    case 5: kernel = abt_plain; break;
    case 6: kernel = abt_pad; break;
    case 7: kernel = abt_xor; break;
    default: return cudaErrorInvalidValue;
    }
    kernel<<<batch, dim3(BANKS_TILE, ROWS_PER_PASS)>>>(a, b, c);
    return cudaGetLastError();
}
