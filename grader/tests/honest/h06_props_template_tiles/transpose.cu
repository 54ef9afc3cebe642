/* Lab 06: tile kernels templated on their tile (SIDE) and block height
 * (ROWS), the padded and swizzled layouts as small index functions. The
 * grid's y extent is capped at cudaDeviceProp::maxGridSize[1] (asked once)
 * and the remaining tile rows go into z. Step 6 uses a 16-row block on a
 * 32 x 128 tile: 8 elements per thread, as asked, in another shape. */
#include "transpose.h"

#include <cuda_runtime.h>

enum Layout { PLAIN, PADDED, SWIZZLED };

template <int SIDE, Layout L>
__device__ __forceinline__ int slot(int r, int c)
{
    return L == PADDED ? r * (SIDE + 1) + c : L == SWIZZLED ? r * SIDE + (c ^ (r % SIDE)) : r * SIDE + c;
}

__device__ __forceinline__ long long tile_row_index()
{
    return (long long)blockIdx.z * gridDim.y + blockIdx.y;
}

template <int SIDE, int ROWS>
__global__ void k_copy(const float *in, float *out, int rows, int cols)
{
    long long r0 = tile_row_index() * SIDE;
    int c = blockIdx.x * SIDE + threadIdx.x;
    if (r0 >= rows || c >= cols)
        return;
    for (int k = threadIdx.y; k < SIDE && r0 + k < rows; k += ROWS)
        out[(r0 + k) * cols + c] = in[(r0 + k) * cols + c];
}

template <int SIDE, int ROWS>
__global__ void k_naive(const float *in, float *out, int rows, int cols)
{
    long long r0 = tile_row_index() * SIDE;
    int c = blockIdx.x * SIDE + threadIdx.x;
    if (r0 >= rows || c >= cols)
        return;
    for (int k = threadIdx.y; k < SIDE && r0 + k < rows; k += ROWS)
        out[(long long)c * rows + r0 + k] = in[(r0 + k) * cols + c];
}

/* A tile of TR rows x SIDE columns of in; TR a multiple of SIDE. */
template <int SIDE, int TR, int ROWS, Layout L>
__global__ void k_tile(const float *in, float *out, int rows, int cols)
{
    __shared__ float t[(TR / SIDE) * SIDE * (SIDE + 1)];
    long long r0 = tile_row_index() * TR;
    int c0 = blockIdx.x * SIDE;
    if (r0 >= rows)
        return;   /* the whole block leaves together: no barrier is skipped by half of it */
    int x = threadIdx.x;
    for (int k = threadIdx.y; k < TR; k += ROWS) {
        int q = k / SIDE, r = k % SIDE;   /* square q of the tile, row r in it */
        if (r0 + k < rows && c0 + x < cols)
            t[q * SIDE * (SIDE + 1) + slot<SIDE, L>(r, x)] = in[(r0 + k) * cols + c0 + x];
    }
    __syncthreads();
    for (int k = threadIdx.y; k < SIDE; k += ROWS)
        for (int q = 0; q < TR / SIDE; q++) {
            long long orow = c0 + k, ocol = r0 + q * SIDE + x;
            if (orow < cols && ocol < rows)
                out[orow * rows + ocol] = t[q * SIDE * (SIDE + 1) + slot<SIDE, L>(x, k)];
        }
}

static unsigned max_grid_y(void)
{
    static unsigned cap;
    if (!cap) {
        int dev = 0;
        cudaDeviceProp p;
        cap = (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&p, dev) == cudaSuccess &&
               p.maxGridSize[1] > 0) ? (unsigned)p.maxGridSize[1] : 65535u;
    }
    return cap;
}

static dim3 grid_for(int rows, int cols, int tile_cols, int tile_rows)
{
    unsigned long long tr = ((unsigned long long)rows + tile_rows - 1) / tile_rows;
    unsigned y = tr < max_grid_y() ? (unsigned)tr : max_grid_y();
    return dim3((unsigned)((cols + tile_cols - 1) / tile_cols), y, (unsigned)((tr + y - 1) / y));
}

cudaError_t transpose_step(int step, const float *in, float *out, int rows, int cols)
{
    if (rows < 1 || cols < 1)
        return cudaErrorInvalidValue;
    switch (step) {
    case 1: k_copy<32, 8><<<grid_for(rows, cols, 32, 32), dim3(32, 8)>>>(in, out, rows, cols); break;
    case 2: k_naive<32, 8><<<grid_for(rows, cols, 32, 32), dim3(32, 8)>>>(in, out, rows, cols); break;
    case 3: k_tile<32, 32, 32, PLAIN><<<grid_for(rows, cols, 32, 32), dim3(32, 32)>>>(in, out, rows, cols); break;
    case 4: k_tile<32, 32, 32, PADDED><<<grid_for(rows, cols, 32, 32), dim3(32, 32)>>>(in, out, rows, cols); break;
    case 5: k_tile<32, 32, 32, SWIZZLED><<<grid_for(rows, cols, 32, 32), dim3(32, 32)>>>(in, out, rows, cols); break;
    case 6: k_tile<32, 128, 16, PADDED><<<grid_for(rows, cols, 32, 128), dim3(32, 16)>>>(in, out, rows, cols); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
