// Lab 06, steps dispatched through a std::array of launchers. Steps 3-5
// share one kernel whose tile lives in dynamic shared memory: the row pitch
// (32 or 33 floats) and whether columns are XOR-swizzled are run-time
// arguments. Grids are 2D, capped at 65535 in y, and blocks loop over the
// tile rows the grid does not cover. Step 6: a tile 64 columns wide and 32
// rows high, 32 x 8 threads, 8 elements per thread.
#include "transpose.h"

#include <array>
#include <cuda_runtime.h>

namespace {

constexpr int kEdge = 32;
constexpr int kThreadRows = 8;
constexpr unsigned kMaxGridY = 65535;

__global__ void copy_kernel_rows(const float *__restrict__ a, float *__restrict__ b, int rows, int cols)
{
    const long long c = (long long)blockIdx.x * kEdge + threadIdx.x;
    for (long long band = blockIdx.y; band * kEdge < rows; band += gridDim.y) {
        for (int k = threadIdx.y; k < kEdge; k += kThreadRows) {
            long long r = band * kEdge + k;
            if (r < rows && c < cols)
                b[r * cols + c] = a[r * cols + c];
        }
    }
}

__global__ void scatter_kernel(const float *__restrict__ a, float *__restrict__ b, int rows, int cols)
{
    const long long c = (long long)blockIdx.x * kEdge + threadIdx.x;
    for (long long band = blockIdx.y; band * kEdge < rows; band += gridDim.y) {
        for (int k = threadIdx.y; k < kEdge; k += kThreadRows) {
            long long r = band * kEdge + k;
            if (r < rows && c < cols)
                b[c * rows + r] = a[r * cols + c];
        }
    }
}

// tile[r * pitch + (swizzle ? c ^ r : c)] holds in(band row r, column c).
__global__ void staged_kernel(const float *__restrict__ a, float *__restrict__ b, int rows, int cols, int pitch,
                              bool swizzle)
{
    extern __shared__ float tile[];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long long c0 = (long long)blockIdx.x * kEdge;
    for (long long band = blockIdx.y; band * kEdge < rows; band += gridDim.y) {
        const long long r0 = band * kEdge;
        for (int k = ty; k < kEdge; k += kThreadRows) {
            long long r = r0 + k, c = c0 + tx;
            if (r < rows && c < cols)
                tile[k * pitch + (swizzle ? tx ^ k : tx)] = a[r * cols + c];
        }
        __syncthreads();
        for (int k = ty; k < kEdge; k += kThreadRows) {
            long long orow = c0 + k, ocol = r0 + tx;
            if (orow < cols && ocol < rows)
                b[orow * rows + ocol] = tile[tx * pitch + (swizzle ? k ^ tx : k)];
        }
        __syncthreads();   // the next band overwrites the tile
    }
}

// 32 rows x 64 columns of in per band step; padded to 65 floats a row.
__global__ void wide_tile_kernel(const float *__restrict__ a, float *__restrict__ b, int rows, int cols)
{
    __shared__ float tile[kEdge][2 * kEdge + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long long c0 = (long long)blockIdx.x * 2 * kEdge;
    for (long long band = blockIdx.y; band * kEdge < rows; band += gridDim.y) {
        const long long r0 = band * kEdge;
#pragma unroll
        for (int k = ty; k < kEdge; k += kThreadRows) {
            long long r = r0 + k;
            if (r < rows) {
                if (c0 + tx < cols)
                    tile[k][tx] = a[r * cols + c0 + tx];
                if (c0 + kEdge + tx < cols)
                    tile[k][kEdge + tx] = a[r * cols + c0 + kEdge + tx];
            }
        }
        __syncthreads();
#pragma unroll
        for (int k = ty; k < 2 * kEdge; k += kThreadRows) {
            long long orow = c0 + k, ocol = r0 + tx;
            if (orow < cols && ocol < rows)
                b[orow * rows + ocol] = tile[tx][k];
        }
        __syncthreads();
    }
}

dim3 grid_for(int rows, int cols, int tile_cols)
{
    unsigned bands = (unsigned)((rows + kEdge - 1) / kEdge);
    return dim3((unsigned)((cols + tile_cols - 1) / tile_cols), bands < kMaxGridY ? bands : kMaxGridY);
}

const dim3 kBlock(kEdge, kThreadRows);

cudaError_t step_copy(const float *a, float *b, int rows, int cols)
{
    copy_kernel_rows<<<grid_for(rows, cols, kEdge), kBlock>>>(a, b, rows, cols);
    return cudaGetLastError();
}
cudaError_t step_naive(const float *a, float *b, int rows, int cols)
{
    scatter_kernel<<<grid_for(rows, cols, kEdge), kBlock>>>(a, b, rows, cols);
    return cudaGetLastError();
}
cudaError_t staged(const float *a, float *b, int rows, int cols, int pitch, bool swizzle)
{
    size_t bytes = sizeof(float) * kEdge * pitch;
    staged_kernel<<<grid_for(rows, cols, kEdge), kBlock, bytes>>>(a, b, rows, cols, pitch, swizzle);
    return cudaGetLastError();
}
cudaError_t step_tile(const float *a, float *b, int rows, int cols) { return staged(a, b, rows, cols, kEdge, false); }
cudaError_t step_padded(const float *a, float *b, int rows, int cols) { return staged(a, b, rows, cols, kEdge + 1, false); }
cudaError_t step_swizzled(const float *a, float *b, int rows, int cols) { return staged(a, b, rows, cols, kEdge, true); }
cudaError_t step_eight(const float *a, float *b, int rows, int cols)
{
    wide_tile_kernel<<<grid_for(rows, cols, 2 * kEdge), kBlock>>>(a, b, rows, cols);
    return cudaGetLastError();
}

using Launcher = cudaError_t (*)(const float *, float *, int, int);
const std::array<Launcher, 6> kSteps = {step_copy, step_naive, step_tile, step_padded, step_swizzled, step_eight};

}  // namespace

extern "C" cudaError_t transpose_step(int step, const float *in, float *out, int rows, int cols)
{
    if (step < 1 || step > (int)kSteps.size() || rows < 1 || cols < 1)
        return cudaErrorInvalidValue;
    return kSteps[(size_t)step - 1](in, out, rows, cols);
}
