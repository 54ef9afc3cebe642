/* Lab @LAB@: @TITLE@, out[i] = a * in[i].
 *
 * Steps (the table is in labs/@LAB@/lab.json; `@STEM@_run --list`):
 *   1 one_per_thread   one thread per element; the last block checks i < n
 *   2 grid_stride      a fixed grid strides over the array: any n
 *
 * Build, test and time (see README.md in this folder):
 *   cmake --workflow --preset progress        # which steps pass
 *   ./build/@STEM@_run --step 1               # check and time one step
 */
#include "@STEM@.h"

#include <cuda_runtime.h>

enum { BLOCK = 256 };

// ------------------------------------------------------------ kernels

// Step 1: thread i scales element i. The grid is rounded up to whole
// blocks, so the last block has threads past the end of the array.
__global__ void scale_kernel1(const float *in, float *out, size_t n, float a)
{
    // TODO(step 1): i = this thread's index in the whole grid; out[i] =
    // a * in[i], only for i < n (the last block hangs over the end).
    // BEGIN SOLUTION
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a * in[i];
    //@ (void)in; (void)out; (void)n; (void)a;
    // END SOLUTION
}

// Step 2: a fixed grid; each thread strides by the whole grid's width.
__global__ void scale_kernel2(const float *in, float *out, size_t n, float a)
{
    // TODO(step 2): stride = the grid's width in threads; for i = this
    // thread's index, i + stride, ... below n: out[i] = a * in[i].
    // BEGIN SOLUTION
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        out[i] = a * in[i];
    //@ (void)in; (void)out; (void)n; (void)a;
    // END SOLUTION
}

// ------------------------------------------------------------ launchers

static cudaError_t step1(const float *in, float *out, size_t n, float a)
{
    unsigned blocks = (unsigned)((n + BLOCK - 1) / BLOCK);
    scale_kernel1<<<blocks, BLOCK>>>(in, out, n, a);
    return cudaGetLastError();
}

static cudaError_t step2(const float *in, float *out, size_t n, float a)
{
    unsigned blocks = (unsigned)((n + BLOCK - 1) / BLOCK);
    if (blocks > 1024)
        blocks = 1024;  // enough blocks to fill the GPU; the loop covers the rest
    scale_kernel2<<<blocks, BLOCK>>>(in, out, n, a);
    return cudaGetLastError();
}

// ------------------------------------------------------------ dispatcher

extern "C" cudaError_t @STEM@_step(int step, const float *in, float *out, size_t n, float a)
{
    switch (step) {
    case 1: return step1(in, out, n, a);
    case 2: return step2(in, out, n, a);
    default: return cudaErrorInvalidValue;
    }
}
