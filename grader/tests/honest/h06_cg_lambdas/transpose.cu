/* Lab 06 with cooperative groups and lambdas. Every launch is one
 * dimensional: blockIdx.x numbers the tiles row-major, so a 1 x N or an
 * N x 1 matrix never meets a grid limit. Steps 3-5 use 32 x 32 threads (one
 * element each), step 6 32 x 8 threads (eight each). How a tile is laid out
 * in shared memory is a small policy class. */
#include "transpose.h"

#include <cooperative_groups.h>

namespace cg = cooperative_groups;

namespace {

constexpr int S = 32;

struct TileAt {
    long long row0, col0;
};

__device__ TileAt tile_at(long long tiles_across, int tile_rows)
{
    long long t = blockIdx.x;
    return TileAt{(t / tiles_across) * tile_rows, (t % tiles_across) * S};
}

struct Unpadded {
    static constexpr int kWidth = S;
    __device__ static int col(int r, int c) { (void)r; return c; }
};
struct OneMore {
    static constexpr int kWidth = S + 1;
    __device__ static int col(int r, int c) { (void)r; return c; }
};
struct Xor {
    static constexpr int kWidth = S;
    __device__ static int col(int r, int c) { return c ^ (r & (S - 1)); }
};

__global__ void flip_copy(const float *src, float *dst, int rows, int cols, long long across)
{
    TileAt t = tile_at(across, S);
    auto inside = [=](long long r, long long c) { return r < rows && c < cols; };
    for (int k = threadIdx.y; k < S; k += blockDim.y) {
        long long r = t.row0 + k, c = t.col0 + threadIdx.x;
        if (inside(r, c))
            dst[r * cols + c] = src[r * cols + c];
    }
}

__global__ void flip_naive(const float *src, float *dst, int rows, int cols, long long across)
{
    TileAt t = tile_at(across, S);
    auto inside = [=](long long r, long long c) { return r < rows && c < cols; };
    for (int k = threadIdx.y; k < S; k += blockDim.y) {
        long long r = t.row0 + k, c = t.col0 + threadIdx.x;
        if (inside(r, c))
            dst[c * rows + r] = src[r * cols + c];
    }
}

// 32 x 32 threads: thread (x, y) loads in(row0 + y, col0 + x) and stores
// out(col0 + y, row0 + x) = in(row0 + x, col0 + y).
template <class Layout>
__global__ void flip_square(const float *src, float *dst, int rows, int cols, long long across)
{
    __shared__ float tile[S][Layout::kWidth];
    cg::thread_block block = cg::this_thread_block();
    TileAt t = tile_at(across, S);
    const int x = threadIdx.x, y = threadIdx.y;
    long long r = t.row0 + y, c = t.col0 + x;
    if (r < rows && c < cols)
        tile[y][Layout::col(y, x)] = src[r * cols + c];
    block.sync();
    long long orow = t.col0 + y, ocol = t.row0 + x;
    if (orow < cols && ocol < rows)
        dst[orow * rows + ocol] = tile[x][Layout::col(x, y)];
}

// 32 x 8 threads, a 32 x 32 tile, four loads and four stores... times two:
// each block does two vertically adjacent tiles (64 rows of in), so every
// thread moves 8 elements.
template <class Layout>
__global__ void flip_eight(const float *src, float *dst, int rows, int cols, long long across)
{
    __shared__ float tile[2 * S][Layout::kWidth];
    cg::thread_block block = cg::this_thread_block();
    TileAt t = tile_at(across, 2 * S);
    const int x = threadIdx.x;
    auto load = [&](int k) {
        long long r = t.row0 + k, c = t.col0 + x;
        if (r < rows && c < cols)
            tile[k][Layout::col(k, x)] = src[r * cols + c];
    };
    auto store = [&](int k, int half) {
        long long orow = t.col0 + k, ocol = t.row0 + half * S + x;
        if (orow < cols && ocol < rows)
            dst[orow * rows + ocol] = tile[half * S + x][Layout::col(half * S + x, k)];
    };
#pragma unroll
    for (int k = threadIdx.y; k < 2 * S; k += 8)
        load(k);
    block.sync();
#pragma unroll
    for (int k = threadIdx.y; k < S; k += 8) {
        store(k, 0);
        store(k, 1);
    }
}

long long across_of(int cols) { return (cols + S - 1) / S; }
unsigned tiles_of(int rows, int cols, int tile_rows)
{
    return (unsigned)(across_of(cols) * ((rows + (long long)tile_rows - 1) / tile_rows));
}

}  // namespace

extern "C" cudaError_t transpose_step(int step, const float *in, float *out, int rows, int cols)
{
    if (rows < 1 || cols < 1)
        return cudaErrorInvalidValue;
    const long long across = across_of(cols);
    const dim3 wide(S, 8), square(S, S);
    switch (step) {
    case 1: flip_copy<<<tiles_of(rows, cols, S), wide>>>(in, out, rows, cols, across); break;
    case 2: flip_naive<<<tiles_of(rows, cols, S), wide>>>(in, out, rows, cols, across); break;
    case 3: flip_square<Unpadded><<<tiles_of(rows, cols, S), square>>>(in, out, rows, cols, across); break;
    case 4: flip_square<OneMore><<<tiles_of(rows, cols, S), square>>>(in, out, rows, cols, across); break;
    case 5: flip_square<Xor><<<tiles_of(rows, cols, S), square>>>(in, out, rows, cols, across); break;
    case 6: flip_eight<OneMore><<<tiles_of(rows, cols, 2 * S), wide>>>(in, out, rows, cols, across); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
