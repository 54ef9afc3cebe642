/* Lab 07_vectorized: vectorized global memory access. A copy, then a
 * scale-add, with 4-, 8- and 16-byte loads and stores, for any n.
 *
 * Steps (the table is in labs/07_vectorized/lab.json; `vectorized_run --list`):
 *   1 copy_scalar       grid-stride int copy, one 4-byte load and store an element (LDG.E, STG.E)
 *   2 copy_vec2         int2: half the loads and stores (LDG.E.64), the odd last element alone
 *   3 copy_vec4         int4: a quarter of them (LDG.E.128), the n % 4 tail alone
 *   4 copy_any_offset   any 4-byte offset: a scalar head up to a 16-byte boundary, int4 body, tail
 *   5 scale_add_vec4    out = a * x + y in float4 at any offset: three streams, 16 bytes each
 *
 * Build, test and time (see README.md in this folder):
 *   cmake --workflow --preset progress           # which steps pass
 *   ./build/vectorized_run --step 3              # check and time one step
 *   cuobjdump -sass build/CMakeFiles/vectorized_kernels_student.dir/labs/07_vectorized/vectorized.cu.o | grep -E 'LDG|STG'
 */
#include "vectorized.h"

#include <cuda_runtime.h>
#include <stdint.h>

// Threads per block: 8 such blocks fill an SM's 2048 threads.
enum { BLOCK = 256, BLOCKS_PER_SM = 8 };

// ------------------------------------------------------------ grid size

// One wave of blocks: enough to fill every SM, never more than the work
// needs. The grid-stride loops then go round as often as the array asks,
// and each thread keeps several loads in flight over its rounds.
static cudaError_t grid_for(size_t items, unsigned *blocks)
{
    int dev = 0, sms = 0;
    cudaError_t err = cudaGetDevice(&dev);
    if (err == cudaSuccess)
        err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (err != cudaSuccess)
        return err;
    size_t most = (size_t)sms * BLOCKS_PER_SM, need = (items + BLOCK - 1) / BLOCK;
    *blocks = (unsigned)(need < most ? need : most);
    if (*blocks == 0)
        *blocks = 1;  // n = 0 still launches one block, which copies nothing
    return cudaSuccess;
}

// ------------------------------------------------------------ kernels

// Step 1: the baseline. Thread t copies elements t, t + stride, ... where
// stride is the whole grid's width: one 4-byte load and one 4-byte store
// per element (SASS: LDG.E and STG.E).
__global__ void copy_scalar_kernel(const int *in, int *out, size_t n)
{
    // TODO(step 1): a grid-stride loop over the n ints: start at this
    // thread's index in the grid, step by gridDim.x * blockDim.x, copy
    // out[i] = in[i] while i < n.
    (void)in; (void)out; (void)n;
}

// Step 2: int2, 8 bytes a load. in and out are 16-byte aligned, so vector
// i (elements 2i and 2i + 1) is 8-byte aligned and the cast is legal.
// An odd n leaves one element no int2 covers.
__global__ void copy_vec2_kernel(const int *in, int *out, size_t n)
{
    // TODO(step 2): view in and out as int2 arrays of n / 2 vectors; copy
    // them with a grid-stride loop (one int2 load and store each: SASS
    // LDG.E.64 and STG.E.64). Then, when n is odd, one thread copies the
    // last element alone.
    (void)in; (void)out; (void)n;
}

// Step 3: int4, 16 bytes a load, the widest a thread can issue. The n % 4
// elements after the last whole vector are copied one by one.
__global__ void copy_vec4_kernel(const int *in, int *out, size_t n)
{
    // TODO(step 3): view in and out as int4 arrays of n / 4 vectors; copy
    // them with a grid-stride loop (SASS LDG.E.128 and STG.E.128). Then
    // copy the n % 4 elements of the tail (elements 4 * (n / 4) .. n - 1)
    // with scalar accesses, one thread each.
    (void)in; (void)out; (void)n;
}

// Elements before in's first 16-byte boundary (0 to 3), never more than n.
// in and out lie at the same offset from a 16-byte boundary, so the same
// head aligns both.
__device__ static size_t head_of(const void *p, size_t n)
{
    // TODO(step 4): the bytes from p up to the next multiple of 16 (0 when
    // p is one), as 4-byte elements; at most n.
    (void)p; (void)n;
    return 0;
}

// Step 4: in and out start at any 4-byte offset. A cast of in itself to
// int4 * would make misaligned 16-byte loads: a GPU stops the kernel with
// cudaErrorMisalignedAddress (716), it does not merely run slower.
__global__ void copy_any_offset_kernel(const int *in, int *out, size_t n)
{
    // TODO(step 4): head = the elements before in's first 16-byte
    // boundary (0..3, and never more than n); threads 0..head-1 copy them
    // one each. Then in + head and out + head are 16-byte aligned: copy
    // (n - head) / 4 int4 vectors from there with a grid-stride loop, and
    // the last (n - head) % 4 elements one each.
    (void)in; (void)out; (void)n;
}

// Step 5: out = a * x + y, all three at the same offset, in float4: two
// 16-byte loads and one 16-byte store a vector. Each element is fmaf(a,
// x, y), rounded once (a GPU contracts a * x + y to the same FFMA).
__global__ void scale_add_vec4_kernel(float a, const float *x, const float *y, float *out, size_t n)
{
    // TODO(step 5): as step 4 (head, float4 body, tail), with three
    // arrays: out[i] = a * x[i] + y[i]; in the body load one float4 of x
    // and one of y, compute its four lanes, store one float4.
    (void)a; (void)x; (void)y; (void)out; (void)n;
}

// ------------------------------------------------------------ launchers

// Each launcher sizes its grid for the items one thread moves a round
// (elements, int2 or int4 vectors) and checks the launch.
static cudaError_t step1(const void *x, void *out, size_t n)
{
    unsigned blocks;
    cudaError_t err = grid_for(n, &blocks);
    if (err != cudaSuccess)
        return err;
    copy_scalar_kernel<<<blocks, BLOCK>>>((const int *)x, (int *)out, n);
    return cudaGetLastError();
}

static cudaError_t step2(const void *x, void *out, size_t n)
{
    unsigned blocks;
    cudaError_t err = grid_for(n / 2, &blocks);
    if (err != cudaSuccess)
        return err;
    copy_vec2_kernel<<<blocks, BLOCK>>>((const int *)x, (int *)out, n);
    return cudaGetLastError();
}

static cudaError_t step3(const void *x, void *out, size_t n)
{
    unsigned blocks;
    cudaError_t err = grid_for(n / 4, &blocks);
    if (err != cudaSuccess)
        return err;
    copy_vec4_kernel<<<blocks, BLOCK>>>((const int *)x, (int *)out, n);
    return cudaGetLastError();
}

static cudaError_t step4(const void *x, void *out, size_t n)
{
    unsigned blocks;
    cudaError_t err = grid_for(n / 4, &blocks);
    if (err != cudaSuccess)
        return err;
    copy_any_offset_kernel<<<blocks, BLOCK>>>((const int *)x, (int *)out, n);
    return cudaGetLastError();
}

static cudaError_t step5(float a, const void *x, const void *y, void *out, size_t n)
{
    unsigned blocks;
    cudaError_t err = grid_for(n / 4, &blocks);
    if (err != cudaSuccess)
        return err;
    scale_add_vec4_kernel<<<blocks, BLOCK>>>(a, (const float *)x, (const float *)y, (float *)out, n);
    return cudaGetLastError();
}

// ------------------------------------------------------------ dispatcher

extern "C" cudaError_t vectorized_step(int step, const void *x, const void *y, void *out, size_t n, float a)
{
    switch (step) {
    case 1: return step1(x, out, n);
    case 2: return step2(x, out, n);
    case 3: return step3(x, out, n);
    case 4: return step4(x, out, n);
    case 5: return step5(a, x, y, out, n);
    default: return cudaErrorInvalidValue;
    }
}
