/* Lab 01, part 2: what bank conflicts cost on the GPU.
 *
 * Steps 4-7 (the table is BANKS_STEPS in banks.h; `banks_run --list`):
 *   4 probe          time a warp's shared loads (clock64) for one pattern
 *   5 abt_naive      C = A*B^T from 32x32 tiles: B read by column, 32-way
 *   6 abt_padded     B's tile padded to [32][33]: conflict-free
 *   7 abt_swizzled   B's tile with XOR-swizzled columns: conflict-free
 * (Steps 1-3, the bank model, are in bank_model.c.)
 *
 * Build, test and time (see README.md in this folder):
 *   cmake --build --preset default
 *   ./build/banks_run                    # model vs measurement, per pattern
 *   ./build/banks_run --step 6           # check and time one step
 *   LAB=01 cmake --workflow --preset progress  # rebuild; which steps pass
 */
#include "banks.h"

#include <cuda_runtime.h>

// ------------------------------------------------------------ kernels

// Step 4: the probe. Every warp of the block reads the same pattern at the
// same time, so the shared-memory pipe is always busy: the time per access
// is then set by how many wavefronts each access needs, not by latency.
//
// TODO(step 4): write the probe kernel.
//  - Fill words[w] = w for every w < BANKS_PROBE_WORDS (all threads share the
//    work), then make sure every word is written before any warp reads.
//  - Each thread reads word base + 32*j (base = lane_word[its lane], j = 0 ..
//    BANKS_PROBE_UNROLL-1), `rounds` times over, adding every value to sum.
//    Read through a volatile pointer to the shared array: the compiler must
//    then load every time instead of keeping values in registers (which
//    would time nothing).
//  - Read clock64() just before the first timed load and just after the
//    last; lane 0 of each warp stores them in start[warp] and stop[warp].
//  - Every thread stores its sum in sums[threadIdx.x].
__global__ void probe_kernel(const unsigned *__restrict__ lane_word, int rounds, long long *start,
                             long long *stop, unsigned *sums)
{
    // TODO(step 4): fill, barrier, the timed loads, the clocks and the sums.
    (void)lane_word;
    (void)rounds;
    (void)start;
    (void)stop;
    (void)sums;
}

// Steps 5-7: one block of 32x32 threads per matrix; thread (x, y) computes
// C[y][x] = sum over k of A[y][k] * B[x][k]. In a warp y is fixed and x runs
// over 0..31: A[y][k] is one word for the whole warp (a broadcast), and
// B[x][k] is a column of B's tile, 32 words apart.

// TODO(step 5): load A's and B's 32x32 tiles into shared memory (a warp
// loads a row: coalesced), wait until both are complete, then sum over k in
// order 0..31 and store C[y][x]. Read B's tile as bs[x][k]: a column.
// Put `#pragma unroll 1` on the k loop: unrolled, the compiler may merge
// four neighbouring bs[x][k] into one 16-byte load (LDS.128), which has a
// conflict pattern of its own (your model's step 3 predicts it); here we
// want to see the 32-way conflict of the plain column read.
__global__ void abt_naive_kernel(const float *__restrict__ a, const float *__restrict__ b,
                                 float *__restrict__ c)
{
    // TODO(step 5): two 32x32 tiles, the loads, the barrier, the sum, the store.
    (void)a;
    (void)b;
    (void)c;
}

// TODO(step 6): the same product with B's tile declared [32][33]. Row x now
// starts 33 words after row x-1, so bs[x][k] is in bank (x*33 + k) % 32 =
// (x + k) % 32: a different bank for every lane. The extra column is never
// read; it only shifts the rows.
__global__ void abt_padded_kernel(const float *__restrict__ a, const float *__restrict__ b,
                                  float *__restrict__ c)
{
    // TODO(step 6): step 5 with B's tile padded to [32][33].
    (void)a;
    (void)b;
    (void)c;
}

// TODO(step 7): no padding: store B[y][x] at bs[y][x ^ y] (the column index
// XOR the row, a permutation of 0..31 within each row), and read B[x][k]
// from bs[x][k ^ x]. Over a warp (x = 0..31) k ^ x takes every value once:
// 32 different banks. Same shared memory as step 5, no conflicts.
__global__ void abt_swizzled_kernel(const float *__restrict__ a, const float *__restrict__ b,
                                    float *__restrict__ c)
{
    // TODO(step 7): store B swizzled, wait, read it back unswizzled.
    (void)a;
    (void)b;
    (void)c;
}

// ------------------------------------------------------------ launchers

extern "C" cudaError_t banks_probe(const unsigned *lane_word, int rounds, long long *start, long long *stop,
                                   unsigned *sums)
{
    if (rounds < 1 || rounds > BANKS_PROBE_MAX_ROUNDS)
        return cudaErrorInvalidValue;
    probe_kernel<<<1, BANKS_PROBE_WARPS * BANKS_WARP>>>(lane_word, rounds, start, stop, sums);
    return cudaGetLastError();
}

extern "C" cudaError_t banks_abt(int step, const float *a, const float *b, float *c, int batch)
{
    if (batch < 1)
        return cudaErrorInvalidValue;
    dim3 block(BANKS_TILE, BANKS_TILE);
    switch (step) {
    case 5:
        abt_naive_kernel<<<batch, block>>>(a, b, c);
        break;
    case 6:
        abt_padded_kernel<<<batch, block>>>(a, b, c);
        break;
    case 7:
        abt_swizzled_kernel<<<batch, block>>>(a, b, c);
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
