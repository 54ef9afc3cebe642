/* Lab 08, step 2, in a file of its own: the manifest (lab.json,
 * "nvcc_flags") compiles this file with -maxrregcount=32, so every kernel
 * here gets at most 32 registers per thread.
 *
 * Steps (the table is OCCUPANCY_STEPS in occupancy.h; `occupancy_run --list`):
 *   2 spill  a table of 32 powers per thread under -maxrregcount=32: it spills to local memory
 *
 * See what the cap did (README.md, "Reading the compiled code"):
 *   cmake --build --preset default
 *   ./build/occupancy_run --step 2           # registers, local bytes, occupancy
 *   cuobjdump -res-usage build/CMakeFiles/occupancy_kernels_student.dir/labs/08_occupancy/occupancy_spill.cu.o
 */
#include "occupancy.h"

#include <cuda_runtime.h>

enum { SPILL_BLOCK = 256 };

// ------------------------------------------------------------ kernel

// Step 2: y = sum of coef[k] * x^k through a table of the powers. The
// table p[0..31] is filled upward (each power from the one before) and
// read downward (the highest power first), so all 32 powers are alive at
// once: 32 floats, plus x, the sum, i and the pointers. Under a cap of 32
// registers ptxas cannot hold them all and parks some in local memory: a
// store (STL) after the power is made, a load (LDL) when it is used.
// Local memory is per thread but lives in device memory, behind L1 and L2.
__global__ void spill_kernel(const float *__restrict__ x, float *__restrict__ y, int n,
                             const float *__restrict__ coef)
{
    // TODO(step 2): one element per thread, i = blockIdx.x * blockDim.x +
    // threadIdx.x; return when i >= n. Fill float p[OCC_TABLE_DEGREE + 1]
    // with p[0] = 1 and p[k] = p[k - 1] * x[i] (an unrolled loop: constant
    // indices keep the table in registers when there is room), then sum
    // s = fmaf(coef[k], p[k], s) from k = OCC_TABLE_DEGREE down to 0 and
    // store s in y[i].
    (void)x, (void)y, (void)n, (void)coef;
}

// ------------------------------------------------------------ launcher

extern "C" cudaError_t occupancy_spill_step(const float *x, float *y, int n, const float *coef)
{
    if (n < 0 || (n > 0 && (!x || !y || !coef)))
        return cudaErrorInvalidValue;
    if (n == 0)
        return cudaSuccess;
    unsigned blocks = (unsigned)((n + SPILL_BLOCK - 1) / SPILL_BLOCK);
    spill_kernel<<<blocks, SPILL_BLOCK>>>(x, y, n, coef);
    return cudaGetLastError();
}

extern "C" cudaError_t occupancy_spill_kernel(const void **kernel, int *block)
{
    *kernel = (const void *)spill_kernel;
    *block = SPILL_BLOCK;
    return cudaSuccess;
}
