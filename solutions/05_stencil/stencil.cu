/* Lab 05: stencils with halos. Every point of out is a weighted sum of its
 * neighbours in in, for grids of any size; every cell outside the grid holds
 * the boundary value c.outside.
 *
 * Steps (the table is STENCIL_STEPS in stencil.h; `stencil_run --list`):
 *   1 halo_1d     radius 3 in 1D: a shared tile of 2048 points plus 3 halo cells each side
 *   2 tile_2d     3x3 in 2D: a 128x32 shared tile plus a one-cell halo ring, corners too;
 *                 every load of the tile issued before the first store
 *   3 naive_3d    7 points in 3D, one thread per point, seven loads: the caches do the reuse
 *   4 tile_3d     a 32x8x4 shared tile plus its halo: 2040 cells loaded for 1024 points
 *   5 march_z     a 64x16 tile marches 64 planes along z: three planes in shared memory
 *   6 register_z  the z neighbours in registers: one plane in shared, loads a plane ahead;
 *                 the z loop unrolled 4 times, so the rotation of the registers is free
 *
 * Build, test and time (see README.md in this folder):
 *   cmake --build --preset default
 *   ./build/stencil_run --step 6              # check and time one step
 *   LAB=05 cmake --workflow --preset progress  # rebuild; which steps pass
 *
 * The two classic boundary bugs, both in step 1: the first tile's halo lies
 * before the array (in[-3], in[-2], in[-1]: never read them, they are
 * c.outside), and
 * a thread that returns early (its point lies past the end) still has its
 * share of the tile to load before the barrier.
 */
#include "stencil.h"

#include <cml/cml_check.h>
#include <cuda_runtime.h>

enum { R = STENCIL_R };

// Until your steps use them, the skeleton's kernels leave some given
// variables unused, and nvcc would warn about each one.
#if defined(__NVCC__)
#pragma nv_diag_suppress set_but_not_used
#endif

// Step 1: BLOCK1 threads, PER1 points each, strided by BLOCK1 so that a
// warp's loads and stores are 32 consecutive floats: a tile of TILE1 points.
enum { BLOCK1 = 256, PER1 = 8, TILE1 = BLOCK1 * PER1 };

// Step 2: a TX2 x TY2 tile per block of TX2 x YSTEP2 threads; each thread
// computes ROWS2 consecutive rows of one column. 128 columns wide: a tile
// row is four 128-byte lines, and its two ring cells add two 32-byte
// sectors to the sixteen; when nx is not a multiple of 8, every tile edge
// also splits a sector of each row between two blocks, and a wide tile has
// fewer edges. 32 rows tall: the rows above and below add 2/32.
// The loads: thread (tx, ty) loads column x0 + tx of the tile rows ty, ty +
// YSTEP2, ..., LROWS2 = 9 of them (the ring rows above and below included),
// and threads tid < SIDE2 one cell of the ring's left or right column, all
// issued before the first store to the tile: 9 or 10 loads in flight a
// thread, and no division to find a cell's row and column.
// Measured in a study on an H200 (2026-11-29), as a fraction of cudaMemcpy
// device to device at 16384 x 8192 and at 16383 x 8191: the 64 x 32 tile
// loaded by a loop over the cells k = tid, tid + 256, ... (ly = k / 66, lx =
// k % 66: each store waits for its load, 4 loads in flight, three rounds a
// tile) 0.743 and 0.743; the same 64 x 32 tile with its loads issued at
// once 0.991 and 0.784; this 128 x 32 tile 0.986 and 0.920.
enum { TX2 = 128, TY2 = 32, ROWS2 = 8, YSTEP2 = TY2 / ROWS2 };
enum { LROWS2 = (TY2 + 2 + YSTEP2 - 1) / YSTEP2, SIDE2 = 2 * (TY2 + 2) };
static_assert(SIDE2 <= TX2 * YSTEP2, "step 2 loads the ring columns with one cell per thread at most");

// Step 3: one point per thread, blocks of 32 x 8.
enum { TX3 = 32, TY3 = 8 };

// Step 4: a 32 x 8 x 4 tile, one point per thread (1024 threads).
enum { TX4 = 32, TY4 = 8, TZ4 = 4 };

// Step 5: a TXM x TYM tile of the xy plane marches through ZM planes;
// blocks of TXM x (TYM / ROWSM) threads, each computing ROWSM points of its
// column x, rows y, y + TYM / ROWSM, ... (a warp keeps 32 consecutive x).
enum { TXM = 64, TYM = 16, ROWSM = 4, YSTEP = TYM / ROWSM, ZM = 64 };

// Step 6: the same march with a TX6 x TY6 tile through Z6 planes, at least
// MINB6 blocks per SM (the register budget the compiler must keep to). 128
// columns wide: each ring column costs a 32-byte sector per float it needs,
// and when nx is not a multiple of 8 every tile edge splits a sector of out
// between two blocks; wide tiles have fewer edges. (On an H100 this shape
// held up best at 513 x 511 x 509 of the shapes tried.) A block marches 8
// planes: short marches make many blocks (8,192 at 512^3, 20 rounds of the
// 396 an H200 holds at once): likely the last round, when SMs run out of
// work, weighs less (measured: the speed). The z loop is unrolled UNROLL6 times (the
// kernel's comment says why).
// Measured in a study on an H200 (2026-11-29), as a fraction of cudaMemcpy
// device to device at 512^3 and at 513 x 511 x 509: this kernel 0.870 and
// 0.778; the same march with its z loop rolled up (each rotation copy
// waiting for a load), one plane loaded past the block's last and 64-bit
// index arithmetic in every load, 0.805 and 0.681. More bytes in flight
// did not help: 2 or 4 planes ahead (2 blocks per SM) 0.812 / 0.715 and
// 0.825 / 0.739, a 64 x 16 tile 4 planes ahead 0.829 / 0.746.
// Then the length of the march (a second study, same day, same fractions):
// 32 planes 0.864 / 0.771, 16 0.891 / 0.793, 12 0.891 / 0.803, 8 0.892 /
// 0.828, 4 0.843 / 0.808 (each block loads two planes it does not compute,
// a quarter more loads at 8, a half at 4). Two plane buffers in shared
// memory, one barrier a plane instead of two, gained nothing beyond the
// noise (8 planes: 0.892 / 0.829); 128 x 32 tiles won at 512^3 and lost at
// the odd size (0.902 / 0.787 at 16 planes, 0.889 / 0.819 at 4); 64 x 16
// lost (0.843 / 0.788), and no shared memory at all (x neighbours by warp
// shuffles, y in each thread's registers) lost most: 0.76 / 0.63 at best.
// A third study (2026-12-01, the register budget; 50 runs each, this
// kernel 0.89 / 0.83 in the same session): 128 x 8 tiles of 2 rows a
// thread at 4 blocks an SM (32 registers, every warp slot filled) 0.87 /
// 0.79, marching 16 planes 0.84 / 0.77; 128 x 16 tiles of 2 rows a thread
// (1,024-thread blocks, 2 an SM) 0.84 / 0.75, 16 planes 0.82 / 0.75; 128 x
// 32 tiles of 8 rows a thread at 2 blocks (64 registers) 0.88 / 0.82; the
// z loop unrolled twice 0.87 / 0.78; this shape at 4 blocks an SM (32
// registers, 28 bytes spilled) 0.74 / 0.65.
// A fourth (2026-12-01, one round of 50 runs each; this kernel 0.89 / 0.83
// in it): the planes copied from global memory straight into a ring of S
// plane tiles in shared memory by the asynchronous copy (cp.async, 4 bytes
// a thread), S - 2 planes in flight and one barrier a plane, the z
// neighbour below in a register: 0.75 to 0.80 / 0.67 to 0.71 for S = 4, 5
// and 8 (8 at 512^3 only), marches of 8 to 32 planes, 3 or 4 blocks an SM.
// And this kernel at other sizes, to part the odd size's two costs: 512 x
// 511 x 509 0.894 (as at 512^3); 520 x 511 x 509 (every row on a sector, a
// fifth column of tiles 8 wide) 0.867; 513 x 512 x 512 0.825; 640 x 511 x
// 509 (five whole tiles) 0.909. The last tile's idle columns cost about
// 0.03, rows that start off a sector about 0.04.
enum { TX6 = 128, TY6 = 16, ROWS6 = 4, YSTEP6 = TY6 / ROWS6, Z6 = 8, MINB6 = 3, UNROLL6 = 4 };
// The halo ring of a plane tile: a row above, a row below, a column each
// side (no corners: the 7-point stencil has no diagonal neighbours).
enum { RING6 = 2 * TX6 + 2 * TY6 };
static_assert(RING6 <= TX6 * YSTEP6, "step 6 loads the ring with one cell per thread at most");

// ------------------------------------------------------------ helpers

// in(x, y, z), or the boundary value outside the grid (steps 3-6).
__device__ __forceinline__ float load_3d(const float *__restrict__ in, int x, int y, int z, int nx, int ny, int nz,
                                         float outside)
{
    if (x < 0 || x >= nx || y < 0 || y >= ny || z < 0 || z >= nz)
        return outside;
    return in[((size_t)z * ny + y) * nx + x];
}

__device__ __forceinline__ size_t at_3d(int x, int y, int z, int nx, int ny)
{
    return ((size_t)z * ny + y) * nx + x;
}

// Step 6's loads: the value at offset `at` of plane p, or the boundary value
// where the point lies outside the grid in x or y (ok is false) or p outside
// 0 .. nz - 1. Unsigned 32-bit offsets: stencil_step refuses grids of 2^31
// points or more, so p * psize + at is exact for every point of the grid,
// and one unsigned comparison rejects both p = -1 and p = nz. Fewer
// instructions than load_3d's six comparisons and 64-bit index.
__device__ __forceinline__ float load_at(const float *__restrict__ in, bool ok, int p, int nz, unsigned psize,
                                         unsigned at, float outside)
{
    return ok && (unsigned)p < (unsigned)nz ? in[(unsigned)p * psize + at] : outside;
}

// The 3D stencil of stencil.h from the seven values, always summed in this order.
__device__ __forceinline__ float apply_7(const stencil_coeffs &c, float centre, float xm, float xp, float ym, float yp,
                                         float zm, float zp)
{
    return c.c3[0] * centre + c.c3[1] * xm + c.c3[2] * xp + c.c3[3] * ym + c.c3[4] * yp + c.c3[5] * zm +
           c.c3[6] * zp;
}

// Step 1's boundary: in[g] for 0 <= g < n, else the boundary value.
__device__ __forceinline__ float load_1d(const float *__restrict__ in, long long g, long long n, float outside)
{
    // TODO(step 1): return in[g] when g lies inside the array, `outside` when
    // it does not. Check both ends: the first tile's halo starts at g = -3, and
    // in[-3] is not yours to read (memcheck and the CPU path's bounds check
    // stop there; elsewhere it reads whatever lies before the array).
    // BEGIN SOLUTION
    return g >= 0 && g < n ? in[g] : outside;
    //@ (void)in; (void)g; (void)n; (void)outside;
    //@ return 0.0f;
    // END SOLUTION
}

// Step 2's boundary: in(x, y) for a cell inside the grid, else the boundary value.
__device__ __forceinline__ float load_2d(const float *__restrict__ in, int x, int y, int nx, int ny, float outside)
{
    // TODO(step 2): return in(x, y), in[y * nx + x], when the cell lies
    // inside the grid, `outside` when it does not: the ring of an edge tile
    // has x or y = -1, or past the end.
    // BEGIN SOLUTION
    // One unsigned comparison per axis: a negative x becomes a huge unsigned
    // value, so it fails x < nx too. The 32-bit offset is exact (stencil_step
    // refuses grids of 2^31 points or more) and costs fewer instructions
    // than a 64-bit one.
    return (unsigned)x < (unsigned)nx && (unsigned)y < (unsigned)ny ? in[(unsigned)y * (unsigned)nx + (unsigned)x]
                                                                     : outside;
    //@ (void)in; (void)x; (void)y; (void)nx; (void)ny; (void)outside;
    //@ return 0.0f;
    // END SOLUTION
}

// ------------------------------------------------------------ kernels

// Step 1: 1D stencil of radius R. The block's tile holds in[base - R] ..
// in[base + TILE1 + R - 1] at s[0 .. TILE1 + 2R): R halo cells each side,
// so that every point of the tile finds its 2R + 1 inputs in shared memory.
__global__ void __launch_bounds__(BLOCK1)
stencil_kernel1(const float *__restrict__ in, float *__restrict__ out, long long n, stencil_coeffs c)
{
    __shared__ float s[TILE1 + 2 * R];
    long long base = (long long)blockIdx.x * TILE1;  // the tile's first point
    int t = threadIdx.x;

    // TODO(step 1): thread t loads the points base + t + j * BLOCK1 (j = 0 ..
    // PER1 - 1) into s[R + t + j * BLOCK1], and threads t < R load the halo:
    // s[t] = in[base - R + t] and s[R + TILE1 + t] = in[base + TILE1 + t].
    // Every load through load_1d, and no thread returns before the barrier,
    // even when its points lie past the end: the cells it loads (c.outside
    // there) are its neighbours' inputs. After __syncthreads(), thread t writes
    // out[i] for its points i < n: the sum over k = 0 .. 2R of
    // c.c1[k] * s[t + j * BLOCK1 + k].
    // BEGIN SOLUTION
#pragma unroll
    for (int j = 0; j < PER1; ++j)
        s[R + t + j * BLOCK1] = load_1d(in, base + t + j * BLOCK1, n, c.outside);
    if (t < R) {  // R threads load the halo: R cells before the tile and R after it
        s[t] = load_1d(in, base - R + t, n, c.outside);
        s[R + TILE1 + t] = load_1d(in, base + TILE1 + t, n, c.outside);
    }
    __syncthreads();  // every cell is in shared memory before any thread reads its neighbours
#pragma unroll
    for (int j = 0; j < PER1; ++j) {
        long long i = base + t + j * BLOCK1;
        if (i < n) {
            float sum = 0.0f;
#pragma unroll
            for (int k = 0; k <= 2 * R; ++k)
                sum += c.c1[k] * s[t + j * BLOCK1 + k];
            out[i] = sum;
        }
    }
    //@ (void)in; (void)out; (void)n; (void)c; (void)s; (void)base; (void)t;
    // END SOLUTION
}

// Step 2: 2D 3x3 stencil. tile[ly][lx] holds in(x0 - 1 + lx, y0 - 1 + ly):
// the TX2 x TY2 points of the block and a ring of one cell around them,
// corners included (the 3x3 stencil has diagonal neighbours). All loads
// first, into registers, then all stores: a store of a loaded value waits
// for its load, so a loop that loads a cell and stores it keeps only the
// few loads the compiler hoists in flight, and pays the memory's latency
// again every few cells.
__global__ void __launch_bounds__(TX2 *YSTEP2)
stencil_kernel2(const float *__restrict__ in, float *__restrict__ out, int nx, int ny, stencil_coeffs c)
{
    __shared__ float tile[TY2 + 2][TX2 + 2];
    int x0 = (int)blockIdx.x * TX2, y0 = (int)blockIdx.y * TY2;
    int tx = (int)threadIdx.x, ty = (int)threadIdx.y, tid = ty * TX2 + tx;
    // The ring column cell this thread loads, if tid < SIDE2: row sy of the
    // left column (sx = 0) for the first TY2 + 2 threads, of the right
    // column (sx = TX2 + 1) for the next TY2 + 2.
    int sy = tid < TY2 + 2 ? tid : tid - (TY2 + 2), sx = tid < TY2 + 2 ? 0 : TX2 + 1;

    // TODO(step 2): issue every load of the tile before the first store:
    // thread (tx, ty) loads the cells of column tx + 1, tile rows ly = ty + i
    // * YSTEP2 (i = 0 .. LROWS2 - 1; only the last can lie past row TY2 + 1),
    // into registers v[i], and threads tid < SIDE2 the ring cell (sy, sx).
    // Every load through load_2d. Then store them all into the tile: a cell
    // outside the grid holds c.outside, so store it, do not skip the cell.
    // After the barrier, thread (tx, ty) computes rows ly0 = ty * ROWS2 ..
    // ly0 + ROWS2 - 1 of its column x = x0 + tx, keeping the three tile rows
    // it needs in registers as it moves down.
    // BEGIN SOLUTION
    float v[LROWS2];  // v[i]: tile row ty + i * YSTEP2, column tx + 1
#pragma unroll
    for (int i = 0; i < LROWS2; ++i) {
        int ly = ty + i * YSTEP2;  // i is a constant here: only the last row needs the test
        v[i] = i < LROWS2 - 1 || ly < TY2 + 2 ? load_2d(in, x0 + tx, y0 - 1 + ly, nx, ny, c.outside) : 0.0f;
    }
    float side = tid < SIDE2 ? load_2d(in, x0 - 1 + sx, y0 - 1 + sy, nx, ny, c.outside) : 0.0f;
#pragma unroll
    for (int i = 0; i < LROWS2; ++i) {
        int ly = ty + i * YSTEP2;
        if (i < LROWS2 - 1 || ly < TY2 + 2)
            tile[ly][tx + 1] = v[i];
    }
    if (tid < SIDE2)
        tile[sy][sx] = side;
    __syncthreads();  // the tile and its ring are loaded before any thread reads a neighbour
    int x = x0 + tx, ly0 = ty * ROWS2;
    if (x < nx) {
        // A window of three tile rows slides down: one new row per point.
        float up[3], mid[3], down[3];
#pragma unroll
        for (int d = 0; d < 3; ++d) {
            up[d] = tile[ly0][tx + d];
            mid[d] = tile[ly0 + 1][tx + d];
        }
        // out(x, y0 + ly0 + r) is at o + r * nx: unsigned, exact for every
        // point stored (below 2^31, as in load_2d).
        unsigned o = (unsigned)(y0 + ly0) * (unsigned)nx + (unsigned)x;
#pragma unroll
        for (int r = 0; r < ROWS2; ++r, o += (unsigned)nx) {
#pragma unroll
            for (int d = 0; d < 3; ++d)
                down[d] = tile[ly0 + r + 2][tx + d];
            float sum = 0.0f;  // one chain of multiply-adds, row by row
#pragma unroll
            for (int d = 0; d < 3; ++d)
                sum += c.c2[0][d] * up[d];
#pragma unroll
            for (int d = 0; d < 3; ++d)
                sum += c.c2[1][d] * mid[d];
#pragma unroll
            for (int d = 0; d < 3; ++d)
                sum += c.c2[2][d] * down[d];
            if (y0 + ly0 + r < ny)
                out[o] = sum;
#pragma unroll
            for (int d = 0; d < 3; ++d) {
                up[d] = mid[d];
                mid[d] = down[d];
            }
        }
    }
    //@ (void)in; (void)out; (void)nx; (void)ny; (void)c; (void)tile; (void)x0; (void)y0; (void)tx; (void)ty;
    //@ (void)sx; (void)sy;
    // END SOLUTION
}

// Step 3: 3D 7-point stencil, naive: one thread per point, each neighbour
// read from global memory. Six of the seven loads were loaded by other
// threads too; L1 and L2 catch most of them, which is why this is not as
// slow as seven loads per point sound.
__global__ void __launch_bounds__(TX3 *TY3)
stencil_kernel3(const float *__restrict__ in, float *__restrict__ out, int nx, int ny, int nz, stencil_coeffs c)
{
    int x = (int)(blockIdx.x * TX3 + threadIdx.x), y = (int)(blockIdx.y * TY3 + threadIdx.y), z = (int)blockIdx.z;

    // TODO(step 3): for a point inside the grid, out(x, y, z) = apply_7 of
    // the point and its six neighbours, each read with load_3d (c.outside
    // off the grid).
    // This kernel has no barrier, so a thread past the edge may return.
    // BEGIN SOLUTION
    if (x >= nx || y >= ny)
        return;  // no barrier in this kernel: returning early is safe here
    out[at_3d(x, y, z, nx, ny)] =
        apply_7(c, load_3d(in, x, y, z, nx, ny, nz, c.outside), load_3d(in, x - 1, y, z, nx, ny, nz, c.outside),
                load_3d(in, x + 1, y, z, nx, ny, nz, c.outside), load_3d(in, x, y - 1, z, nx, ny, nz, c.outside),
                load_3d(in, x, y + 1, z, nx, ny, nz, c.outside), load_3d(in, x, y, z - 1, nx, ny, nz, c.outside),
                load_3d(in, x, y, z + 1, nx, ny, nz, c.outside));
    //@ (void)in; (void)out; (void)nx; (void)ny; (void)nz; (void)c; (void)x; (void)y; (void)z;
    // END SOLUTION
}

// Step 4: a 3D shared tile. tile[lz][ly][lx] holds in(x0 - 1 + lx, y0 - 1 +
// ly, z0 - 1 + lz): 34 x 10 x 6 = 2040 cells for 32 x 8 x 4 = 1024 points.
// Every input is loaded once per block, but half the cells are halo, loaded
// again by the neighbouring blocks: the small tile is the cost of 3D.
__global__ void __launch_bounds__(TX4 *TY4 *TZ4)
stencil_kernel4(const float *__restrict__ in, float *__restrict__ out, int nx, int ny, int nz, stencil_coeffs c)
{
    __shared__ float tile[TZ4 + 2][TY4 + 2][TX4 + 2];
    int x0 = (int)blockIdx.x * TX4, y0 = (int)blockIdx.y * TY4, z0 = (int)blockIdx.z * TZ4;
    int tid = ((int)threadIdx.z * TY4 + (int)threadIdx.y) * TX4 + (int)threadIdx.x;

    // TODO(step 4): all threads load the (TZ4 + 2) x (TY4 + 2) x (TX4 + 2)
    // cells, cell k = tid, tid + 1024, ... at lx = k % (TX4 + 2), ly = (k /
    // (TX4 + 2)) % (TY4 + 2), lz = k / ((TX4 + 2) * (TY4 + 2)), through
    // load_3d. Wait for the whole tile, then each thread computes its point
    // (tile cell (tz + 1, ty + 1, tx + 1)) from the tile, if it lies inside
    // the grid.
    // BEGIN SOLUTION
    for (int k = tid; k < (TZ4 + 2) * (TY4 + 2) * (TX4 + 2); k += TX4 * TY4 * TZ4) {
        int lx = k % (TX4 + 2), rest = k / (TX4 + 2);
        int ly = rest % (TY4 + 2), lz = rest / (TY4 + 2);
        tile[lz][ly][lx] = load_3d(in, x0 - 1 + lx, y0 - 1 + ly, z0 - 1 + lz, nx, ny, nz, c.outside);
    }
    __syncthreads();  // the whole tile, halo included, is loaded before any thread reads a neighbour
    int lx = (int)threadIdx.x + 1, ly = (int)threadIdx.y + 1, lz = (int)threadIdx.z + 1;
    int x = x0 + lx - 1, y = y0 + ly - 1, z = z0 + lz - 1;
    if (x < nx && y < ny && z < nz)
        out[at_3d(x, y, z, nx, ny)] =
            apply_7(c, tile[lz][ly][lx], tile[lz][ly][lx - 1], tile[lz][ly][lx + 1], tile[lz][ly - 1][lx],
                    tile[lz][ly + 1][lx], tile[lz - 1][ly][lx], tile[lz + 1][ly][lx]);
    //@ (void)in; (void)out; (void)nx; (void)ny; (void)nz; (void)c; (void)tile; (void)x0; (void)y0; (void)z0; (void)tid;
    // END SOLUTION
}

// One plane of the marching tile: p[ly][lx] = in(x0 - 1 + lx, y0 - 1 + ly,
// z) (c.outside off the grid), all threads of the block together.
__device__ void load_plane(float (*p)[TXM + 2], const float *__restrict__ in, int x0, int y0, int z, int nx, int ny,
                           int nz, float outside, int tid)
{
    // TODO(step 5): cells k = tid, tid + TXM * YSTEP, ... below (TYM + 2) *
    // (TXM + 2), at lx = k % (TXM + 2), ly = k / (TXM + 2), through load_3d.
    // BEGIN SOLUTION
    for (int k = tid; k < (TYM + 2) * (TXM + 2); k += TXM * YSTEP) {
        int ly = k / (TXM + 2), lx = k % (TXM + 2);
        p[ly][lx] = load_3d(in, x0 - 1 + lx, y0 - 1 + ly, z, nx, ny, nz, outside);
    }
    //@ (void)p; (void)in; (void)x0; (void)y0; (void)z; (void)nx; (void)ny; (void)nz; (void)outside; (void)tid;
    // END SOLUTION
}

// Step 5: thread coarsening along z. The block owns a TXM x TYM column of
// the grid from plane zbeg to zend - 1 and walks up it; plane z lives in
// buffer z % 3, so each step loads one new plane (z + 1) into the buffer
// of plane z - 2, which nobody needs any more. The halo costs (TYM + 2) x
// (TXM + 2) cells per TYM x TXM points: 1.16 loads per point instead of
// step 4's 2.
__global__ void __launch_bounds__(TXM *YSTEP)
stencil_kernel5(const float *__restrict__ in, float *__restrict__ out, int nx, int ny, int nz, stencil_coeffs c)
{
    __shared__ float planes[3][TYM + 2][TXM + 2];
    int x0 = (int)blockIdx.x * TXM, y0 = (int)blockIdx.y * TYM, zbeg = (int)blockIdx.z * ZM;
    int zend = min(zbeg + ZM, nz);
    int tid = (int)threadIdx.y * TXM + (int)threadIdx.x;

    // TODO(step 5): load planes zbeg - 1 and zbeg (buffers (zbeg + 2) % 3
    // and zbeg % 3), then for each z: load plane z + 1 into buffer (z + 1) %
    // 3, wait, compute the ROWSM points of this thread in plane z (rows y0 +
    // ty + j * YSTEP, column x0 + tx; tile cell (ty + j * YSTEP + 1, tx + 1))
    // from the three buffers, and wait again before the next plane: the next
    // load overwrites the buffer other threads may still be reading.
    // BEGIN SOLUTION
    load_plane(planes[(zbeg + 2) % 3], in, x0, y0, zbeg - 1, nx, ny, nz, c.outside, tid);
    load_plane(planes[zbeg % 3], in, x0, y0, zbeg, nx, ny, nz, c.outside, tid);
    int lx = (int)threadIdx.x + 1, x = x0 + lx - 1;
    for (int z = zbeg; z < zend; ++z) {
        load_plane(planes[(z + 1) % 3], in, x0, y0, z + 1, nx, ny, nz, c.outside, tid);
        __syncthreads();  // planes z - 1, z and z + 1 are all in shared memory
        float (*below)[TXM + 2] = planes[(z + 2) % 3], (*here)[TXM + 2] = planes[z % 3],
              (*above)[TXM + 2] = planes[(z + 1) % 3];
#pragma unroll
        for (int j = 0; j < ROWSM; ++j) {
            int ly = (int)threadIdx.y + j * YSTEP + 1, y = y0 + ly - 1;
            if (x < nx && y < ny)
                out[at_3d(x, y, z, nx, ny)] = apply_7(c, here[ly][lx], here[ly][lx - 1], here[ly][lx + 1],
                                                      here[ly - 1][lx], here[ly + 1][lx], below[ly][lx], above[ly][lx]);
        }
        __syncthreads();  // all threads are done with plane z - 1 before its buffer takes plane z + 2
    }
    //@ (void)in; (void)out; (void)nx; (void)ny; (void)nz; (void)c; (void)planes; (void)x0; (void)y0; (void)zend; (void)tid;
    // END SOLUTION
}

// Step 6: register tiling. A thread needs planes z - 1 and z + 1 only at
// its own points, so those live in registers (below[], above[]), and only
// plane z, whose x and y neighbours other threads need, goes to shared
// memory: TY6 + 2 by TX6 + 2 floats instead of three times that. The loads
// for plane z + 2 (and the ring of plane z + 1) are issued before the
// barrier of plane z and used an iteration later, so their latency hides
// behind a whole plane's work. Three details keep those loads flowing:
//  - the z loop is unrolled UNROLL6 = 4 times. A value passes through four
//    registers (ahead, above, here, below) in four planes, so after four
//    planes every register is back in its role and the compiler turns the
//    rotation's copies into renames. In a rolled-up loop each copy is an
//    instruction, and `above = ahead` waits for ahead's load: the next
//    plane's loads are then issued only once this plane's have landed.
//  - no load past plane zend, the z + 1 neighbour of the block's last point;
//  - each point's test and offset computed once (ok[], at[]), and every
//    load through load_at: fewer instructions a point, which matters at the
//    H200's bandwidth, where an SM must finish about two points a clock.
__global__ void __launch_bounds__(TX6 *YSTEP6, MINB6)
stencil_kernel6(const float *__restrict__ in, float *__restrict__ out, int nx, int ny, int nz, stencil_coeffs c)
{
    __shared__ float plane[TY6 + 2][TX6 + 2];
    int x0 = (int)blockIdx.x * TX6, y0 = (int)blockIdx.y * TY6, zbeg = (int)blockIdx.z * Z6;
    int zend = min(zbeg + Z6, nz);
    int tid = (int)threadIdx.y * TX6 + (int)threadIdx.x;
    int lx = (int)threadIdx.x + 1, x = x0 + lx - 1;

    // The ring cell this thread loads, if tid < RING6: the row above the
    // tile, the row below, the column left of it, the column right of it.
    int hx = 0, hy = 0;
    if (tid < TX6) {
        hx = 1 + tid;
        hy = 0;
    } else if (tid < 2 * TX6) {
        hx = 1 + tid - TX6;
        hy = TY6 + 1;
    } else if (tid < 2 * TX6 + TY6) {
        hx = 0;
        hy = 1 + tid - 2 * TX6;
    } else {
        hx = TX6 + 1;
        hy = 1 + tid - 2 * TX6 - TY6;
    }
    bool ring = tid < RING6;

    // TODO(step 6): keep below[j], here[j], above[j] = in at (x, y_j) in
    // planes z - 1, z, z + 1, y_j = y0 + ty + j * YSTEP6. First, once: ok[j]
    // (the point lies in the grid in x and y) and at[j] (its offset in a
    // plane), the same for the ring cell; every load goes through load_at.
    // For each z: store here[j] and (ring threads) the ring cell of plane z
    // into the tile; issue the loads of plane z + 2 (into ahead[j]) and of
    // the ring of plane z + 1, none past plane zend; wait; compute the
    // points from the registers and the tile's x and y neighbours; wait
    // again; then rotate: below takes here, here takes above, above takes
    // ahead, in that order. Walk the planes UNROLL6 at a time (an unrolled
    // loop of UNROLL6 planes that leaves at zend), so the rotation is free.
    // BEGIN SOLUTION
    const unsigned psize = (unsigned)nx * (unsigned)ny;  // points in a plane
    bool ok[ROWS6];
    unsigned at[ROWS6];
#pragma unroll
    for (int j = 0; j < ROWS6; ++j) {
        int y = y0 + (int)threadIdx.y + j * YSTEP6;
        ok[j] = x < nx && y < ny;
        at[j] = ok[j] ? (unsigned)y * (unsigned)nx + (unsigned)x : 0u;
    }
    int rx = x0 - 1 + hx, ry = y0 - 1 + hy;
    bool rok = ring && (unsigned)rx < (unsigned)nx && (unsigned)ry < (unsigned)ny;
    unsigned rat = rok ? (unsigned)ry * (unsigned)nx + (unsigned)rx : 0u;

    float below[ROWS6], here[ROWS6], above[ROWS6], ahead[ROWS6];
#pragma unroll
    for (int j = 0; j < ROWS6; ++j) {
        below[j] = load_at(in, ok[j], zbeg - 1, nz, psize, at[j], c.outside);
        here[j] = load_at(in, ok[j], zbeg, nz, psize, at[j], c.outside);
        above[j] = load_at(in, ok[j], zbeg + 1, nz, psize, at[j], c.outside);
    }
    float halo = load_at(in, rok, zbeg, nz, psize, rat, c.outside);
    for (int zs = zbeg;; zs += UNROLL6) {
#pragma unroll
        for (int u = 0; u < UNROLL6; ++u) {
            int z = zs + u;
            if (z >= zend)
                return;  // zend is the block's: all its threads leave here, none waits at a barrier alone
#pragma unroll
            for (int j = 0; j < ROWS6; ++j)
                plane[(int)threadIdx.y + j * YSTEP6 + 1][lx] = here[j];
            if (ring)
                plane[hy][hx] = halo;
            // Plane z + 2 and the next ring: in flight while this plane is computed.
            bool need = z + 2 <= zend;  // plane z + 2 is the z + 1 neighbour of plane z + 1
#pragma unroll
            for (int j = 0; j < ROWS6; ++j)
                ahead[j] = load_at(in, ok[j] && need, z + 2, nz, psize, at[j], c.outside);
            float halo_next = load_at(in, rok && z + 1 < zend, z + 1, nz, psize, rat, c.outside);
            __syncthreads();  // the plane and its ring are in shared memory
            unsigned zoff = (unsigned)z * psize;
#pragma unroll
            for (int j = 0; j < ROWS6; ++j) {
                int ly = (int)threadIdx.y + j * YSTEP6 + 1;
                float v = apply_7(c, here[j], plane[ly][lx - 1], plane[ly][lx + 1], plane[ly - 1][lx],
                                  plane[ly + 1][lx], below[j], above[j]);
                if (ok[j])
                    out[zoff + at[j]] = v;
            }
            __syncthreads();  // every thread has read the plane before the next one overwrites it
#pragma unroll
            for (int j = 0; j < ROWS6; ++j) {
                below[j] = here[j];
                here[j] = above[j];
                above[j] = ahead[j];
            }
            halo = halo_next;
        }
    }
    //@ (void)in; (void)out; (void)nx; (void)ny; (void)nz; (void)c; (void)plane; (void)y0; (void)zend; (void)x;
    //@ (void)hx; (void)hy; (void)ring;
    // END SOLUTION
}

// ------------------------------------------------------------ launchers

static unsigned blocks_for(long long n, int per_block)
{
    return (unsigned)((n + per_block - 1) / per_block);
}

static cudaError_t stencil_step1(const float *in, float *out, int n, const stencil_coeffs *c)
{
    stencil_kernel1<<<blocks_for(n, TILE1), BLOCK1>>>(in, out, n, *c);
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

static cudaError_t stencil_step2(const float *in, float *out, int nx, int ny, const stencil_coeffs *c)
{
    dim3 grid(blocks_for(nx, TX2), blocks_for(ny, TY2));
    stencil_kernel2<<<grid, dim3(TX2, YSTEP2)>>>(in, out, nx, ny, *c);
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

static cudaError_t stencil_step3(const float *in, float *out, int nx, int ny, int nz, const stencil_coeffs *c)
{
    dim3 grid(blocks_for(nx, TX3), blocks_for(ny, TY3), (unsigned)nz);
    stencil_kernel3<<<grid, dim3(TX3, TY3)>>>(in, out, nx, ny, nz, *c);
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

static cudaError_t stencil_step4(const float *in, float *out, int nx, int ny, int nz, const stencil_coeffs *c)
{
    dim3 grid(blocks_for(nx, TX4), blocks_for(ny, TY4), blocks_for(nz, TZ4));
    stencil_kernel4<<<grid, dim3(TX4, TY4, TZ4)>>>(in, out, nx, ny, nz, *c);
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

static cudaError_t stencil_step5(const float *in, float *out, int nx, int ny, int nz, const stencil_coeffs *c)
{
    dim3 grid(blocks_for(nx, TXM), blocks_for(ny, TYM), blocks_for(nz, ZM));
    stencil_kernel5<<<grid, dim3(TXM, YSTEP)>>>(in, out, nx, ny, nz, *c);
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

static cudaError_t stencil_step6(const float *in, float *out, int nx, int ny, int nz, const stencil_coeffs *c)
{
    dim3 grid(blocks_for(nx, TX6), blocks_for(ny, TY6), blocks_for(nz, Z6));
    stencil_kernel6<<<grid, dim3(TX6, YSTEP6)>>>(in, out, nx, ny, nz, *c);
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

// ------------------------------------------------------------ dispatcher

extern "C" cudaError_t stencil_step(int step, const float *in, float *out, int nx, int ny, int nz,
                                    const stencil_coeffs *c)
{
    // The limit of stencil.h, nx * ny * nz < 2^31: steps 2 and 6 index with
    // unsigned 32-bit offsets (load_2d, load_at), exact below it.
    if (nx < 1 || ny < 1 || nz < 1 || c == NULL || (long long)nx * ny * nz >= (1LL << 31))
        return cudaErrorInvalidValue;
    switch (step) {
    case 1: return ny == 1 && nz == 1 ? stencil_step1(in, out, nx, c) : cudaErrorInvalidValue;
    case 2: return nz == 1 && ny <= 1000000 ? stencil_step2(in, out, nx, ny, c) : cudaErrorInvalidValue;
    case 3:
    case 4:
    case 5:
    case 6:
        if (ny > 65535 || nz > 65535)
            return cudaErrorInvalidValue;
        switch (step) {
        case 3: return stencil_step3(in, out, nx, ny, nz, c);
        case 4: return stencil_step4(in, out, nx, ny, nz, c);
        case 5: return stencil_step5(in, out, nx, ny, nz, c);
        default: return stencil_step6(in, out, nx, ny, nz, c);
        }
    default: return cudaErrorInvalidValue;
    }
}
