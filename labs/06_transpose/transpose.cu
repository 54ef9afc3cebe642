/* Lab 06: matrix transpose, out = in^T for a rows x cols matrix of floats.
 *
 * Steps (the table is TRANSPOSE_STEPS in transpose.h; `transpose_run --list`):
 *   1 copy             out = in: the speed limit, in step 6's blocks of 32x8 threads
 *   2 naive            out[c][r] = in[r][c]: reads coalesced, a warp's writes hit 32 lines
 *   3 tile             through a 32x32 shared tile: coalesced both ways, 32-way conflicts
 *   4 padded           tile rows 33 floats apart: a tile column spans all 32 banks
 *   5 swizzled         column c of tile row r stored at c ^ r: no conflicts, no padding
 *   6 many_per_thread  32x8 threads on 64x64 tiles, 16 elements each, loads issued
 *                      before the tile is written, stores aligned to 32-byte sectors
 *
 * Build, test and time (see README.md in this folder):
 *   cmake --build --preset default
 *   ./build/transpose_run --step 3            # check and time one step
 *   LAB=06 cmake --workflow --preset progress  # rebuild; which steps pass
 *
 * Every kernel works on tiles of in, 32 columns wide (step 6's are 64): the
 * block owns the tile whose top-left element is (r0, c0), and the tile of
 * out it fills starts at (c0, r0). blockIdx.x runs over tile columns, the tile rows over
 * y (and z, past gridDim.y's limit). The tiles on the right and bottom edges
 * hang over the matrix, so every access checks its row and column.
 */
#include "transpose.h"

#include <cml/cml_check.h>
#include <cuda_runtime.h>

// Tiles are TILE = 32 columns wide: a warp loads one tile row, 32
// consecutive floats (one 128-byte line), and shared memory has 32 banks.
// Steps 3-5: 32x32 tiles, one thread per element.
enum { TILE = 32 };

// Steps 1 and 2 move data in the copy's shape: a tile of COPY_ROWS rows of
// in per block of TILE x BLOCK_ROWS threads. Thread (x, y) handles column x
// of the tile, rows y, y + BLOCK_ROWS, ...: COPY_ROWS / BLOCK_ROWS elements.
// (On an H100 at 8191 x 12289, the copy ran at 2700 GB/s with 32 rows but
// 2300 with 64.) Step 6 uses the same block on bigger tiles, STEP6_ROWS
// rows by STEP6_COLS columns (transpose_kernel6 says why that shape).
enum { BLOCK_ROWS = 8, COPY_ROWS = 32, STEP6_ROWS = 64, STEP6_COLS = 2 * TILE };

// A 32-byte sector, the unit DRAM and the L2 cache move, holds 8 floats.
enum { SECTOR = 8 };

// ------------------------------------------------------------ helpers

// The top-left element (r0, c0) of the tile of in (tile_rows x tile_cols)
// that this block owns. Tile rows count on y and, past the 65535 blocks
// gridDim.y allows, on into z (see tile_grid). Returns false for the spare
// blocks of the last z layer, whose tile starts at or below row `extent`
// (the whole block returns together, before any barrier).
__device__ bool tile_origin(int tile_rows, long long extent, int *r0, int *c0, int tile_cols = TILE)
{
    long long first_row = ((long long)blockIdx.z * gridDim.y + blockIdx.y) * tile_rows;
    if (first_row >= extent)
        return false;
    *r0 = (int)first_row;
    *c0 = (int)blockIdx.x * tile_cols;
    return true;
}

// Where element (r, c) of a ROWS x 32 tile lives in a flat shared array,
// and how many floats the array takes. Shared memory is 32 banks of 4-byte
// words (word w is in bank w % 32); a warp's access takes as many passes as
// the most words it asks of any one bank.
//
// Step 3: row after row. Writing a tile row is conflict-free, but reading
// column c asks for words c, c + 32, c + 64, ...: all in bank c, 32 passes.
template <int ROWS>
struct plain_tile {
    enum { FLOATS = ROWS * TILE };
    __device__ static int at(int r, int c) { return r * TILE + c; }
};

// Step 4: one unused float at the end of every row. Rows start 33 words
// apart, so column c's words lie in banks (c + r) % 32: all different.
template <int ROWS>
struct padded_tile {
    // TODO(step 4): the layout of plain_tile with rows TILE + 1 floats apart:
    // FLOATS = ROWS * (TILE + 1), and element (r, c) at r * (TILE + 1) + c.
    enum { FLOATS = ROWS * TILE };
    __device__ static int at(int r, int c) { (void)r; (void)c; return 0; }
};

// Step 5: no padding; the columns of each row are permuted instead. Element
// (r, c) goes to column c ^ r of row r. A row is still 32 different banks
// (XOR with r permutes the columns), and column c now lands in banks c ^ r
// for r = 0..31: all different too. About the speed of step 4, in 1/33
// less shared memory (for a kernel short of shared memory: more blocks per
// SM).
template <int ROWS>
struct swizzled_tile {
    enum { FLOATS = ROWS * TILE };
    // TODO(step 5): element (r, c) at row r, column c ^ r (bitwise XOR).
    // (For tiles taller than 32 rows, XOR with r & 31, that is r % 32.)
    __device__ static int at(int r, int c) { (void)r; (void)c; return 0; }
};

// Step 6: a tile 64 columns wide, padded as in step 4: rows 65 floats
// apart. A warp writes 32 consecutive columns of one tile row (words 65 r +
// c .. 65 r + c + 31: 32 banks) and reads 32 consecutive rows of one column
// (words 65 r + c for r = r1 .. r1 + 31: 65 is 1 more than 2 * 32, so banks
// (r + c) % 32, all different). Unpadded, rows 64 floats apart, that column
// would lie in one bank: a 32-way conflict, as in step 3.
template <int ROWS>
struct wide_padded_tile {
    enum { FLOATS = ROWS * (STEP6_COLS + 1) };
    __device__ static int at(int r, int c) { return r * (STEP6_COLS + 1) + c; }
};

// How many floats past the start of its 32-byte sector element `index` of
// an array lies (arrays start sector-aligned). Only index % 8 matters, so
// the caller may compute the index in 32-bit unsigned arithmetic: it wraps
// modulo 2^32, a multiple of 8, and the remainder stays exact. That is one
// 32-bit multiply-add and a mask per row of out, not a 64-bit product and
// a signed 64-bit remainder.
__device__ int sector_offset(unsigned index)
{
    return (int)(index % SECTOR);
}

// Step 6's tiles cover the rows of in that its windows of out columns reach
// (see transpose_kernel6): rows + SECTOR - 1 when a window may start up to
// SECTOR - 1 columns before its tile, only `rows` when rows is a multiple of
// SECTOR (every row of out starts a sector, the windows are the tiles: at
// 8192 rows, 128 rows of blocks instead of 129, the last storing nothing).
__host__ __device__ long long step6_extent(int rows)
{
    return rows % SECTOR == 0 ? rows : rows + SECTOR - 1LL;
}

// ------------------------------------------------------------ kernels

// Step 1: copy. Not a transpose, but the fastest any kernel that reads and
// writes every element once can go, measured with the blocks of step 6
// (32x8 threads, several elements each; tiles 32 columns wide). A warp
// reads and writes 32 consecutive floats: one 128-byte line each way.
__global__ void __launch_bounds__(TILE * BLOCK_ROWS)
transpose_kernel1(const float *__restrict__ in, float *__restrict__ out, int rows, int cols)
{
    int r0, c0;
    if (!tile_origin(COPY_ROWS, rows, &r0, &c0))
        return;

    // TODO(step 1): copy this block's tile. Thread (x, y) moves the elements
    // (r0 + y + k * BLOCK_ROWS, c0 + x) for k = 0 .. COPY_ROWS / BLOCK_ROWS - 1,
    // from in[r * cols + c] to out[r * cols + c]. Only those inside the
    // matrix (r < rows, c < cols): tiles on the edges hang over it. Index
    // with size_t: rows * cols may pass 2^31.
    (void)in; (void)out; (void)cols; (void)c0;
}

// Step 2: naive transpose, in the copy's shape. The reads are the copy's,
// but element (r, c) goes to out[c * rows + r]: the 32 threads of a warp
// (32 consecutive c) write 32 floats rows * 4 bytes apart, each in its own
// 128-byte line, and fill 4 bytes of a 32-byte sector. Other warps write
// the rest of each sector later.
__global__ void __launch_bounds__(TILE * BLOCK_ROWS)
transpose_kernel2(const float *__restrict__ in, float *__restrict__ out, int rows, int cols)
{
    int r0, c0;
    if (!tile_origin(COPY_ROWS, rows, &r0, &c0))
        return;

    // TODO(step 2): as step 1, but write in(r, c) to out(c, r): out has cols
    // rows of `rows` floats, so that is out[c * rows + r].
    (void)in; (void)out; (void)cols; (void)c0;
}

// Steps 3, 4 and 5: one 32x32 tile per block of 32x32 threads, through
// shared memory laid out by L. Warp y reads row r0 + y of in (coalesced)
// into row y of the tile, and writes row c0 + y of out (coalesced) from
// column y of the tile: the transpose happens in shared memory.
template <typename L>
__global__ void __launch_bounds__(TILE * TILE)
transpose_kernel_tile(const float *__restrict__ in, float *__restrict__ out, int rows, int cols)
{
    __shared__ float tile[L::FLOATS];
    int r0, c0;
    if (!tile_origin(TILE, rows, &r0, &c0))
        return;
    int x = threadIdx.x, y = threadIdx.y;

    // TODO(step 3): thread (x, y) loads in(r0 + y, c0 + x) into the tile at
    // L::at(y, x). When every thread of the block has stored its element,
    // it writes column y of the tile, element L::at(x, y), to out(c0 + y,
    // r0 + x): out[(c0 + y) * rows + r0 + x]. Check both accesses against the
    // matrix: in is rows x cols, out is cols x rows.
    (void)in; (void)out; (void)cols; (void)tile; (void)x; (void)y;
}

// Step 6: the copy's blocks of 32x8 threads on tiles of 64 rows x 64
// columns of in, padded (wide_padded_tile). Each thread loads 16 elements
// (18 with the window's extra rows, below) and stores 16: a sixteenth of
// step 4's threads per element waiting at the barrier and doing index
// arithmetic, 18 loads in flight per thread, 8 blocks per SM.
//
// Each choice was measured on an H200, in a study run on 2026-11-29 (as a
// fraction of cudaMemcpy device to device, at 8192 x 8192 / 8191 x 12289;
// runs of one kernel differ by about 0.5%):
//  - Every load into registers before the first store to the tile. Written
//    straight into the tile (tile[..] = in[..]), the compiler issued 3 loads,
//    then shared stores that wait for those to come back from DRAM, then the
//    other 6: two DRAM round trips per block instead of one. This step with
//    32-column tiles and that code ran at 0.847 / 0.826; loads first, 0.916
//    / 0.874.
//  - 64 columns: a warp's two loads of a tile row read 256 contiguous bytes
//    of in instead of 128, and a block writes 64 rows of out: 0.942 / 0.879.
//  - 4-byte loads, 64 rows. float2 loads (where a pair is 8-byte aligned, an
//    odd cols makes every other row unaligned) ran at 0.941 / 0.883: no gain
//    beyond the noise, for alignment cases. float2 on 128 rows: 0.945 / 0.890,
//    +0.3% at 8192 x 8192 and +1.2% at the odd size, two changes at once, for
//    46 registers a thread instead of 30 and 5 blocks per SM instead of 8.
//  - A second study, same day (this kernel 0.951 / 0.883 in it): 128 rows,
//    4-byte loads 0.951 / 0.896; float2 on 128 rows 0.948 / 0.897; loads
//    that start each row of in on a sector too (a window of 72 columns, the
//    shift undone as the tile is written) 0.944 / 0.881, on 128 rows 0.947
//    / 0.891. None reaches 0.90 at the odd size, and each costs registers.
//  - A fourth (2026-12-01, the tile's height alone; medians of three rounds
//    of 50 runs, taken in turn): 64 rows 0.949 / 0.877; 96 rows 0.905 /
//    0.889 (8192 rows make no whole number of 96-row tiles); 128 rows 0.947
//    / 0.888, for 46 registers a thread instead of 30; 128 rows held to 6
//    blocks an SM (40 registers) 0.869 / 0.734. Still short of 0.90.
//  - A fifth (2026-12-01, medians of three rounds of 50 runs; this kernel
//    0.949 / 0.881 in it): 128 columns x 64 rows with blocks of 32 x 8, 32
//    x 16 and 32 x 32 threads 0.943 / 0.893, 0.937 / 0.891, 0.941 /
//    0.890; 64 x 64 with 32 x 16 threads 0.953 / 0.889; 128 x 32 0.893 /
//    0.875; 64 columns x 128 rows 0.947 / 0.894. None reaches 0.90 at the
//    odd size. In the same session step 1, a copy in the same tiles with
//    4-byte accesses and no transpose, ran at 0.87 and 0.86: at 8191 x
//    12289 this step is 1.03 x the lab's own copy.
//
// And the stores. A warp stores 32 floats, 4 whole 32-byte sectors when it
// starts on a sector boundary. Row c of out starts at element c * rows, on
// a boundary only when rows is a multiple of 8. Otherwise every store of
// steps 3-5 begins and ends inside a sector whose other part another block
// writes, and sectors written in two parts at two times cost the memory
// system dearly: on the H200, a third of the bandwidth (32-column tiles at
// 8191 x 12289: 0.615 of cudaMemcpy without the windows below, 0.874 with
// them).
// So each row of out is cut where its sectors start: this block writes
// columns r0 - s .. r0 - s + STEP6_ROWS - 1 of row c, s = sector_offset(c *
// rows + r0), and therefore also loads the SECTOR rows of in above its
// tile. The tile has SECTOR + STEP6_ROWS rows; tile row t holds in row
// r0 - SECTOR + t. (When rows is a multiple of 8, s is always 0 and those
// rows go unused: read from L2 mostly, they and the windows cost nothing
// measurable at 8192 x 8192, 0.916 with them and without on 32 columns.)
template <typename L>
__global__ void __launch_bounds__(TILE * BLOCK_ROWS)
transpose_kernel6(const float *__restrict__ in, float *__restrict__ out, int rows, int cols)
{
    enum { LOADS = (SECTOR + STEP6_ROWS) / BLOCK_ROWS };  // tile rows per thread: 9
    __shared__ float tile[L::FLOATS];
    int r0, c0;
    if (!tile_origin(STEP6_ROWS, step6_extent(rows), &r0, &c0, STEP6_COLS))
        return;

    // TODO(step 6): thread (x, y) loads tile rows t = y + k * BLOCK_ROWS
    // (k = 0 .. LOADS - 1: all SECTOR + STEP6_ROWS rows), columns x and
    // x + 32 of each, from in(r0 - SECTOR + t, c0 + column), where that lies
    // inside in (the row is negative above the first tile). All 2 * LOADS
    // loads go into registers first, then into the tile at L::at(t, x) and
    // L::at(t, x + 32). After the barrier, thread (x, y) writes the out rows
    // c = c0 + y + k * BLOCK_ROWS (k = 0 .. STEP6_COLS / BLOCK_ROWS - 1):
    // with s = sector_offset((unsigned)c * rows + r0), the columns
    // j = r0 - s + x and j = r0 - s + x + 32 of row c get tile element
    // L::at(j - r0 + SECTOR, c - c0), where 0 <= j < rows and c < cols.
    (void)in; (void)out; (void)cols; (void)c0; (void)tile;
}

// ------------------------------------------------------------ launchers

// One block per tile of tile_rows x tile_cols covering extent rows: tile columns
// on x, tile rows on y. A grid's y (and z) extent is at most 65535, and a
// tall matrix has more tile rows than that (4,194,321 x 1 has 131,073 of
// 32 rows), so the tile rows that do not fit in y continue in z;
// tile_origin undoes the split.
static dim3 tile_grid(long long extent, int cols, int tile_rows, int tile_cols = TILE)
{
    unsigned tiles_x = ((unsigned)cols + tile_cols - 1) / tile_cols;
    unsigned tiles_y = (unsigned)((extent + tile_rows - 1) / tile_rows);
    unsigned y = tiles_y < 65535u ? tiles_y : 65535u;
    return dim3(tiles_x, y, (tiles_y + y - 1) / y);
}

static const dim3 copy_block(TILE, BLOCK_ROWS);
static const dim3 tile_block(TILE, TILE);

static cudaError_t transpose_step1(const float *in, float *out, int rows, int cols)
{
    transpose_kernel1<<<tile_grid(rows, cols, COPY_ROWS), copy_block>>>(in, out, rows, cols);
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

static cudaError_t transpose_step2(const float *in, float *out, int rows, int cols)
{
    transpose_kernel2<<<tile_grid(rows, cols, COPY_ROWS), copy_block>>>(in, out, rows, cols);
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

static cudaError_t transpose_step3(const float *in, float *out, int rows, int cols)
{
    transpose_kernel_tile<plain_tile<TILE> ><<<tile_grid(rows, cols, TILE), tile_block>>>(in, out, rows, cols);
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

static cudaError_t transpose_step4(const float *in, float *out, int rows, int cols)
{
    transpose_kernel_tile<padded_tile<TILE> ><<<tile_grid(rows, cols, TILE), tile_block>>>(in, out, rows, cols);
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

static cudaError_t transpose_step5(const float *in, float *out, int rows, int cols)
{
    transpose_kernel_tile<swizzled_tile<TILE> ><<<tile_grid(rows, cols, TILE), tile_block>>>(in, out, rows, cols);
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

// The 64-column padded layout: 72 x 65 floats, 18,720 bytes a block.
static cudaError_t transpose_step6(const float *in, float *out, int rows, int cols)
{
    typedef wide_padded_tile<SECTOR + STEP6_ROWS> layout;
    transpose_kernel6<layout><<<tile_grid(step6_extent(rows), cols, STEP6_ROWS, STEP6_COLS), copy_block>>>(in, out, rows, cols);
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

// ------------------------------------------------------------ dispatcher

extern "C" cudaError_t transpose_step(int step, const float *in, float *out, int rows, int cols)
{
    if (rows < 1 || cols < 1)
        return cudaErrorInvalidValue;
    switch (step) {
    case 1: return transpose_step1(in, out, rows, cols);
    case 2: return transpose_step2(in, out, rows, cols);
    case 3: return transpose_step3(in, out, rows, cols);
    case 4: return transpose_step4(in, out, rows, cols);
    case 5: return transpose_step5(in, out, rows, cols);
    case 6: return transpose_step6(in, out, rows, cols);
    default: return cudaErrorInvalidValue;
    }
}
