/* Lab 08: registers, local memory and occupancy, on one job: a polynomial
 * of each element, y[i] = coef[0] + coef[1] x[i] + ... + coef[d] x[i]^d.
 *
 * Steps (the table is OCCUPANCY_STEPS in occupancy.h; `occupancy_run --list`):
 *   1 horner   Horner's rule, one element per thread: memory-bound, few registers
 *   3 bounded  step 2's power table under __launch_bounds__(256, 4): no spill
 *   4 ilp      8 independent elements per thread: the copy ceiling at lower occupancy
 * (step 2, the spill, is in occupancy_spill.cu: the manifest compiles that
 * file with -maxrregcount=32.)
 *
 * Build, test and time (see README.md in this folder):
 *   cmake --build --preset default
 *   ./build/occupancy_run --step 3            # check, time, registers, occupancy
 *   LAB=08 cmake --workflow --preset progress  # rebuild; which steps pass
 *
 * Each element costs 8 bytes of DRAM traffic (4 read, 4 written) and 2d
 * FLOPs (d FMAs): at d = 8 that is 2 FLOP/byte, far below what an H100
 * can compute per byte it moves (about 60 TFLOP/s over 3 TB/s, 20
 * FLOP/byte): the steps are memory-bound, and what decides their speed
 * is how many bytes the SMs keep in flight.
 */
#include "occupancy.h"

#include <cuda_runtime.h>

// Step 1's blocks; step 3's (its launch bound names it); step 4's blocks
// and the elements each of its threads keeps in flight.
enum { BLOCK = 256, BOUNDED_BLOCK = 256, BOUNDED_MIN_BLOCKS = 4, ILP_BLOCK = 128, ILP = 8 };

// ------------------------------------------------------------ kernels

// Step 1: Horner's rule, s = (...(c[d] x + c[d-1]) x + ...) x + c[0]: one
// FMA per coefficient and two live floats, whatever the degree. A handful
// of registers, so occupancy is limited by the threads an SM holds (2048
// on an H100: 8 blocks of 256), not by registers.
__global__ void horner_kernel(const float *__restrict__ x, float *__restrict__ y, int n,
                              const float *__restrict__ coef, int degree)
{
    // TODO(step 1): i = blockIdx.x * blockDim.x + threadIdx.x; nothing
    // when i >= n (the last block hangs over the end). Start from
    // s = coef[degree] and, for k = degree - 1 down to 0, s = fmaf(s,
    // x[i], coef[k]) (read x[i] once, before the loop); store s in y[i].
    (void)x, (void)y, (void)n, (void)coef, (void)degree;
}

// Step 3: step 2's power table, with a launch bound instead of a register
// cap. __launch_bounds__(256, 4) promises ptxas that blocks have at most
// 256 threads and asks for 4 of them per SM: 65536 registers / (4 x 256
// threads) = 64 registers per thread. That is room for the 32 powers: no
// spill, at 1024 of the 2048 threads an SM holds (50% occupancy). A bound
// on the kernel overrides -maxrregcount (ptxas says so with -v). A launch
// of more than 256 threads per block now fails.
// TODO(step 3): put __launch_bounds__(BOUNDED_BLOCK, BOUNDED_MIN_BLOCKS)
// between __global__ and the return type, and write the body as step 2's
// spill_kernel (occupancy_spill.cu): p[0..OCC_TABLE_DEGREE] filled upward,
// summed downward with fmaf(coef[k], p[k], s).
__global__ void bounded_kernel(const float *__restrict__ x, float *__restrict__ y, int n,
                               const float *__restrict__ coef)
{
    (void)x, (void)y, (void)n, (void)coef;
}

// Step 4: ILP elements per thread, all loaded before any is used. A warp
// issues its 8 loads back to back, so each thread has 8 x 4 = 32 bytes in
// flight where step 1 had 4: the same bytes in flight per SM with an
// eighth of the threads. Each element j of a thread is ILP_BLOCK apart
// (element base + j * ILP_BLOCK), so every load of a warp is still 32
// consecutive floats. The 8 Horner chains are independent too: the FMA
// latency hides behind the other 7.
__global__ void __launch_bounds__(ILP_BLOCK)
ilp_kernel(const float *__restrict__ x, float *__restrict__ y, int n, const float *__restrict__ coef, int degree)
{
    // TODO(step 4): base = blockIdx.x * (ILP_BLOCK * ILP) + threadIdx.x.
    // Load v[j] = x[base + j * ILP_BLOCK] for j < ILP where that index is
    // below n (an unrolled loop, every load before any use), run Horner on
    // all ILP values at once (one coef[k] read per k for all of them), then
    // store each s[j] whose index is below n. Use long long for the index:
    // base + 7 * 128 may pass 2^31 near the limit of n.
    (void)x, (void)y, (void)n, (void)coef, (void)degree;
}

// ------------------------------------------------------------ launchers

static unsigned blocks_for(int n, int per_block)
{
    return (unsigned)(((long long)n + per_block - 1) / per_block);
}

static cudaError_t step1(const float *x, float *y, int n, const float *coef, int degree)
{
    horner_kernel<<<blocks_for(n, BLOCK), BLOCK>>>(x, y, n, coef, degree);
    return cudaGetLastError();
}

static cudaError_t step3(const float *x, float *y, int n, const float *coef)
{
    bounded_kernel<<<blocks_for(n, BOUNDED_BLOCK), BOUNDED_BLOCK>>>(x, y, n, coef);
    return cudaGetLastError();
}

static cudaError_t step4(const float *x, float *y, int n, const float *coef, int degree)
{
    // TODO(step 4): one block per ILP_BLOCK * ILP elements, rounded up so
    // the last partial chunk gets a block.
    unsigned blocks = blocks_for(n, ILP_BLOCK);
    ilp_kernel<<<blocks, ILP_BLOCK>>>(x, y, n, coef, degree);
    return cudaGetLastError();
}

// ------------------------------------------------------------ dispatch

extern "C" cudaError_t occupancy_step(int step, const float *x, float *y, int n, const float *coef, int degree)
{
    int table = step == 2 || step == 3;
    if (step < 1 || step > OCCUPANCY_NUM_STEPS || n < 0 || degree < 0 ||
        degree > (table ? OCC_TABLE_DEGREE : OCC_MAX_DEGREE) || (table && degree != OCC_TABLE_DEGREE))
        return cudaErrorInvalidValue;
    if (n == 0)
        return cudaSuccess;  // nothing to do: a grid of 0 blocks is an invalid launch
    if (!x || !y || !coef)
        return cudaErrorInvalidValue;
    switch (step) {
    case 1: return step1(x, y, n, coef, degree);
    case 2: return occupancy_spill_step(x, y, n, coef);
    case 3: return step3(x, y, n, coef);
    case 4: return step4(x, y, n, coef, degree);
    }
    return cudaErrorInvalidValue;
}

extern "C" cudaError_t occupancy_step_kernel(int step, const void **kernel, int *block)
{
    switch (step) {
    case 1: *kernel = (const void *)horner_kernel; *block = BLOCK; return cudaSuccess;
    case 2: return occupancy_spill_kernel(kernel, block);
    case 3: *kernel = (const void *)bounded_kernel; *block = BOUNDED_BLOCK; return cudaSuccess;
    case 4: *kernel = (const void *)ilp_kernel; *block = ILP_BLOCK; return cudaSuccess;
    }
    return cudaErrorInvalidValue;
}
