/* Lab 02: constant memory. Tables read through __constant__, __ldg and
 * plain loads, then a 2D convolution with its filter in three places.
 *
 * Steps (the table is CONSTMEM_STEPS in constmem.h; `constmem_run --list`):
 *   1 broadcast      upload a table with cudaMemcpyToSymbol; read it as coefficients, one address per warp
 *   2 distinct       d different entries per warp and read: the constant cache serves them one by one
 *   3 ldg            the same reads from a global copy through __ldg (the L1 cache)
 *   4 global         the same reads as plain global loads
 *   5 big_table      a 48 KB constant table walked by every warp: past the 8 KB constant cache
 *   6 conv_constant  2D convolution: filter in __constant__, input tile and halo in shared memory, 4 x 8 pixels a thread
 *   7 conv_global    the same convolution, the filter read from global memory
 *   8 conv_param     the same convolution, the filter passed by value as a kernel parameter
 *
 * Build, test and time (see README.md in this folder):
 *   cmake --build --preset default
 *   ./build/constmem_run --step 2             # check and time one step
 *   LAB=02 cmake --workflow --preset progress  # rebuild; which steps pass
 *
 * Constant memory is 64 KB of device memory read through a small cache on
 * each SM (8 KB of working set). A warp's read of __constant__ data is
 * served one address at a time: when all 32 lanes ask for the same word it
 * is one request, broadcast to the warp; when they ask for d different
 * words it is d requests, one after the other. Global loads go through the
 * L1 cache instead, which serves whole 128-byte lines: d words in one line
 * cost about the same as one.
 */
#include "constmem.h"

#include <cml/cml_check.h>
#include <cuda_runtime.h>
#include <stdint.h>

// ------------------------------------------------------------ constant data

// The tables and the filter. A __constant__ variable is a symbol in the
// GPU's constant bank, not a pointer you can pass to cudaMemcpy: in host
// code its name stands for a host-side placeholder. Copy into it with
// cudaMemcpyToSymbol(symbol, src, bytes). All three together take 52.3 KB
// of the 64 KB a program may have.
__constant__ __align__(16) float c_table[CONSTMEM_TABLE_ENTRIES];  // 16: step 1 reads it as float4
__constant__ float c_big[CONSTMEM_BIG_ENTRIES];
__constant__ float c_filter[CONSTMEM_MAX_TAPS];

// Lookup kernels: 1D blocks of 256 threads.
enum { LOOKUP_THREADS = 256 };

// Convolution (steps 6-8): blocks of 32 x 8 threads. Thread (tx, ty)
// computes COLS = 4 neighbouring columns by ROWS = 8 rows of out, so a
// block covers a tile of 128 x 64 pixels (conv_kernel says why this shape).
enum { BLOCK_W = 32, BLOCK_H = 8, CONV_THREADS = BLOCK_W * BLOCK_H };
enum { COLS = 4, ROWS = 8, TILE_W = BLOCK_W * COLS, TILE_H = BLOCK_H * ROWS };
// The shared tile keeps HALO = 4 input columns on each side whatever the
// radius (r <= 4): a tile row is IN_W = 136 floats, 34 float4, so every row
// of the tile, and the image's columns x0 - 4 and x0 + 128 beside a tile,
// start on 16 bytes.
enum { HALO = 4, IN_W = TILE_W + 2 * HALO };
static_assert(HALO >= CONSTMEM_MAX_RADIUS && HALO % 4 == 0, "the halo holds any radius, in whole float4");

// ------------------------------------------------------------ helpers

// Where pass `pass` of warp `warp` starts in its table (constmem.h, "the
// walk"): the same for every lane of the warp. Computed once per pass; the
// 32 reads of the pass then differ by constants the compiler folds into
// the load instructions, so the loop is loads and adds only.
__device__ int walk_base(int warp, int pass, int mask)
{
    return (warp * CONSTMEM_WARP_STEP + pass * CONSTMEM_PASS_STEP) & mask;
}

// The walk's signs (constmem.h) as factors: s[k] = -1 where bit k of
// job->signs is set, +1 where it is clear (walk_signs_of, with the
// launchers, makes them). Passed by value, the struct is a kernel
// parameter, and kernel parameters live in a constant bank too: with k
// known to the compiler, s[k] is read like step 1's coefficients, once
// for the whole warp: an operand of the multiply-add, or a uniform
// register loaded once before the loop. So sum += sg.s[k] * entry costs
// what sum += entry did: one instruction, and no register of the thread's.
struct walk_signs {
    float s[CONSTMEM_PASS_READS];
};

// ------------------------------------------------------------ lookup kernels

// Step 1: the table as coefficients (constmem.h): every lane of the warp
// reads the same entry, at an address the compiler knows. Such a read is
// fetched once for the whole warp, never by each thread. How, depends on
// the GPU (CUDA 13's SASS): on sm_75 and sm_80 the multiply-add takes the
// entry straight from the constant bank as an operand (FFMA R4, R2,
// c[0x3][0x40], R4: no load instruction at all); on sm_90 one ULDC.64
// loads two entries into the warp's uniform registers, which the
// multiply-adds read (FFMA R4, R2, UR8, R4); on sm_100 and sm_120 one
// LDCU.128 loads four.
__global__ void __launch_bounds__(LOOKUP_THREADS)
lookup_kernel_broadcast(float *__restrict__ out, int threads, int passes, walk_signs sg)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= threads)
        return;
    float sum = 0.0f;

    // TODO(step 1): for each pass p = 0 .. passes - 1, with x = (t + p) % 3
    // - 1 as a float, add c_table[32 * (p % 32) + k] * x into acc[k] for k =
    // 0 .. CONSTMEM_PASS_READS - 1 (float acc[CONSTMEM_PASS_READS] = {}: one
    // sum per read k); then add up sg.s[k] * acc[k] into sum (a multiply-add
    // takes one constant operand, here the entry: the sign waits for the
    // end). Take the passes in groups of 32 (p = p0 + q, p0 a multiple of
    // 32) and unroll the loops over q and k (#pragma unroll): then 32 * q +
    // k is a constant in every read, and so is k in acc[k] (acc stays in
    // registers). No index may depend on the lane: that is what makes a
    // read a broadcast. (Reading a row's entries four at a time, float4
    // number 8 * q + k / 4 of c_table, makes the same machine code, and
    // nvcc compiles it in about a third of the time.)
    // BEGIN SOLUTION
    // The entries are read four at a time, float4 number 8 * q + k4 of the
    // table: entries 32 * q + 4 * k4 .. + 3, at addresses the compiler
    // knows as well. The machine code (sm_90, CUDA 13) is instruction for
    // instruction that of c_table[32 * q + k] one by one, but nvcc compiles
    // the kernel in about a third of the time: 256 reads for it to track in
    // the unrolled loop instead of 1,024.
    float acc[CONSTMEM_PASS_READS] = {};
    const float4 *rows = reinterpret_cast<const float4 *>(c_table);
    for (int p0 = 0; p0 < passes; p0 += 32) {
#pragma unroll
        for (int q = 0; q < 32; ++q) {
            if (p0 + q < passes) {
                float x = (float)((t + p0 + q) % 3 - 1);
#pragma unroll
                for (int k4 = 0; k4 < CONSTMEM_PASS_READS / 4; ++k4) {
                    float4 e = rows[8 * q + k4];
                    acc[4 * k4 + 0] += e.x * x;
                    acc[4 * k4 + 1] += e.y * x;
                    acc[4 * k4 + 2] += e.z * x;
                    acc[4 * k4 + 3] += e.w * x;
                }
            }
        }
    }
#pragma unroll
    for (int k = 0; k < CONSTMEM_PASS_READS; ++k)
        sum += sg.s[k] * acc[k];
    //@ (void)passes; (void)sg;
    // END SOLUTION
    out[t] = sum;
}

// Step 2: lane l reads entry base + l % d + k: d different words per read,
// which the constant cache serves one after another.
__global__ void __launch_bounds__(LOOKUP_THREADS)
lookup_kernel_distinct(float *__restrict__ out, int threads, int passes, int d, walk_signs sg)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= threads)
        return;
    float sum = 0.0f;

    // TODO(step 2): for each pass (lane = t % 32, warp = t / 32), first =
    // walk_base(warp, p, CONSTMEM_SMALL_MASK) + lane % d, computed once per
    // pass (d is a power of two: lane % d is lane & (d - 1)); then sum +=
    // sg.s[k] * c_table[first + k] for k = 0 .. CONSTMEM_PASS_READS - 1,
    // the loop over k unrolled.
    // BEGIN SOLUTION
    int warp = t / 32, lane = t % 32;
    for (int p = 0; p < passes; ++p) {
        int first = walk_base(warp, p, CONSTMEM_SMALL_MASK) + (lane & (d - 1));
#pragma unroll
        for (int k = 0; k < CONSTMEM_PASS_READS; ++k)
            sum += sg.s[k] * c_table[first + k];
    }
    //@ (void)passes; (void)d; (void)sg;
    // END SOLUTION
    out[t] = sum;
}

// Step 3: the same walk over a copy of the table in global memory, through
// __ldg: the read-only path of the L1 cache. A warp's d words lie in one
// or two 128-byte lines, which L1 serves in one go.
template <int STRIDE, int MASK>
__global__ void __launch_bounds__(LOOKUP_THREADS)
lookup_kernel_ldg(const float *__restrict__ table, float *__restrict__ out, int threads, int passes, int d,
                  walk_signs sg)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= threads)
        return;
    float sum = 0.0f;

    // TODO(step 3): as step 2 on `table` with any stride and mask: first =
    // walk_base(warp, p, MASK) + lane % d, then sum += sg.s[k] *
    // __ldg(&table[first + k * STRIDE]) for k = 0 .. CONSTMEM_PASS_READS - 1.
    // BEGIN SOLUTION
    int warp = t / 32, lane = t % 32;
    for (int p = 0; p < passes; ++p) {
        int first = walk_base(warp, p, MASK) + (lane & (d - 1));
#pragma unroll
        for (int k = 0; k < CONSTMEM_PASS_READS; ++k)
            sum += sg.s[k] * __ldg(&table[first + k * STRIDE]);
    }
    //@ (void)table; (void)passes; (void)d; (void)sg;
    // END SOLUTION
    out[t] = sum;
}

// Step 4: the same with ordinary loads through a plain pointer (no const
// __restrict__, no __ldg): what most code does.
template <int STRIDE, int MASK>
__global__ void __launch_bounds__(LOOKUP_THREADS)
lookup_kernel_global(const float *table, float *out, int threads, int passes, int d, walk_signs sg)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= threads)
        return;
    float sum = 0.0f;

    // TODO(step 4): step 3 with table[first + k * STRIDE] instead of __ldg.
    // BEGIN SOLUTION
    int warp = t / 32, lane = t % 32;
    for (int p = 0; p < passes; ++p) {
        int first = walk_base(warp, p, MASK) + (lane & (d - 1));
#pragma unroll
        for (int k = 0; k < CONSTMEM_PASS_READS; ++k)
            sum += sg.s[k] * table[first + k * STRIDE];
    }
    //@ (void)table; (void)passes; (void)d; (void)sg;
    // END SOLUTION
    out[t] = sum;
}

// Step 5: broadcast reads again, but of the 48 KB table, 512 bytes apart,
// each warp starting somewhere else: the SM's warps together touch far
// more than the 8 KB the constant cache keeps, and most reads miss.
__global__ void __launch_bounds__(LOOKUP_THREADS)
lookup_kernel_big(float *__restrict__ out, int threads, int passes, walk_signs sg)
{
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= threads)
        return;
    float sum = 0.0f;

    // TODO(step 5): step 2's walk with d = 1 on c_big: base = walk_base(warp,
    // p, CONSTMEM_BIG_MASK), sum += sg.s[k] * c_big[base + k *
    // CONSTMEM_BIG_STRIDE].
    // BEGIN SOLUTION
    int warp = t / 32;
    for (int p = 0; p < passes; ++p) {
        int base = walk_base(warp, p, CONSTMEM_BIG_MASK);
#pragma unroll
        for (int k = 0; k < CONSTMEM_PASS_READS; ++k)
            sum += sg.s[k] * c_big[base + k * CONSTMEM_BIG_STRIDE];
    }
    //@ (void)passes; (void)sg;
    // END SOLUTION
    out[t] = sum;
}

// ------------------------------------------------------------ the filter, three ways

// Each is read as filter[i], i = row * (2r + 1) + column, with i known at
// compile time (the loops below are unrolled for each radius). Then a
// __constant__ weight or a kernel parameter is fetched through the constant
// cache once for the whole warp, as step 1's entries are: an operand of the
// multiply (sm_75, sm_80) or a few uniform loads (ULDC.64 on sm_90: 13 for
// the 25 weights of radius 2, once a warp), never a load by each thread.

// BLOCKS_PER_SM: how many blocks of the convolution each SM should hold
// (see conv_kernel's __launch_bounds__).

// Step 6: the filter in __constant__.
struct constant_filter {
    enum { BLOCKS_PER_SM = 4 };
    __device__ float operator[](int i) const
    {
        // TODO(step 6): weight i of the filter uploaded to c_filter.
        // BEGIN SOLUTION
        return c_filter[i];
        //@ (void)i;
        //@ return 0.0f;
        // END SOLUTION
    }
};

// Step 7: the filter in global memory (w_dev of the job).
struct global_filter {
    enum { BLOCKS_PER_SM = 4 };  // the same: each weight is loaded once a thread (sm_90), and nothing spills
    const float *w;
    __device__ float operator[](int i) const
    {
        // TODO(step 7): weight i of the filter at w, in global memory.
        // BEGIN SOLUTION
        return w[i];
        //@ (void)i;
        //@ return 0.0f;
        // END SOLUTION
    }
};

// Step 8: the filter itself as a kernel parameter, copied into the
// argument by value at every launch. Kernel parameters live in a constant
// bank too: up to 32,764 bytes of them since CUDA 12.1 on Volta and newer
// (4,096 before); this one is 324 bytes.
struct param_filter {
    enum { BLOCKS_PER_SM = 4 };
    float w[CONSTMEM_MAX_TAPS];
    __device__ float operator[](int i) const
    {
        // TODO(step 8): weight i of the copy in w.
        // BEGIN SOLUTION
        return w[i];
        //@ (void)i;
        //@ return 0.0f;
        // END SOLUTION
    }
};

// ------------------------------------------------------------ convolution kernel

// Steps 6-8: one block per 128 x 64 tile of out, pixels (y0 .. y0 + 63,
// x0 .. x0 + 127). Its input is that tile grown by r on every side, the
// halo, loaded once into shared memory as tile[i][c] = in(y0 - r + i, x0 -
// HALO + c): 64 + 2r rows of 136 columns (zero where they lie outside the
// image; at r < 4 the outermost columns are loaded and never read). Thread
// (tx, ty) then computes columns 4 tx .. 4 tx + 3, rows ty * 8 .. ty * 8 +
// 7 of the tile: it walks down the 8 + 2r tile rows those need, reads each
// row's 4 + 2r <= 12 pixels once, as three float4, and adds them into every
// output they touch: 4 columns and up to 2r + 1 rows.
//
// Why this shape. A study of variants on an H200 (2026-11-29; 8192 x 8192
// floats, r = 2, the filter in __constant__; speeds as multiples of
// cudaMemcpy's on the same image in the same run) measured the earlier
// version of this kernel, 32 x 64 tiles of one column and 8 rows a thread,
// at 0.60x. It did not wait for DRAM: it ran out of instruction issue.
// For its 8 pixels a thread issued about 640 instructions, 80 a pixel:
// 200 multiply-adds, 60 shared loads and some 350 others, most of them the
// tile load's index arithmetic (a division, a modulo, four compares and a
// 64-bit address for every element). At 4 TB/s the GPU must finish 5e11
// pixels a second (8 bytes each), and it issues 132 SMs x 4 schedulers x
// 1.98 GHz, about 1e12 warp instructions a second: at most ~64 a pixel
// even if every cycle issued one. This kernel needs ~36 (25 of them the
// multiply-adds), ~43 on the scalar path (sm_90 SASS):
//  - 4 columns a thread: each 16-byte shared load (LDS.128) serves 4
//    outputs. 36 shared loads for 32 pixels, 1.1 a pixel, against 7.5;
//    a warp's 32 lanes read 512 contiguous bytes, without bank conflicts.
//  - The tile loaded by rows: warp ty loads tile rows ty, ty + 8, ...: no
//    division, the next row's address one 64-bit add, its test one compare.
//  - VEC (the width a multiple of 4, both pointers 16-byte aligned): the
//    middle of a tile row is one 16-byte load per lane, the outputs go out
//    as float4: a quarter of the load and store instructions. 0.958x
//    cudaMemcpy (1.006x the kit's copy kernel; scalar loads and stores at
//    the same size: 0.905x).
//  - Not VEC (any width): scalar loads, and the outputs staged in the tile
//    so that each warp store is one coalesced run: 0.890x at 8191 x 8193.
//  - 8 rows a thread: 4 rows (128 x 32 tiles, 6 blocks an SM) was as fast
//    at 8192 x 8192 (0.967x) but much slower at 8191 x 8193 (0.755x); 2
//    rows was slower at both (0.797x, 0.688x).
//  - VEC a template parameter, not a kernel argument: as an argument (one
//    kernel a radius and filter with both paths behind a branch) the file
//    compiled in 9.4 s instead of 13.8 s (nvcc on one core of the H200 host), but
//    steps 6, 7, 8 ran at 0.92x, 0.87x, 0.92x at 8192 x 8192 against
//    0.95x, 0.93x, 0.96x, and at 0.86x, 0.80x, 0.86x against 0.88x,
//    0.84x, 0.88x at 8191 x 8193 (2026-12-01, two runs of each in turn).

// The tile's rows at radius R: IN_H rows, warp ty loads rows ty + 8n for
// n < ROWS_PER_WARP; for n < FULL_ROWS that row is in the tile whatever ty
// (so no test is needed there). SIDE_LOADS: halo floats a thread loads on
// the scalar path (the 8 halo columns of every row, 4 at each end).
template <int R>
struct conv_rows {
    enum { IN_H = TILE_H + 2 * R, ROWS_PER_WARP = (IN_H + BLOCK_H - 1) / BLOCK_H, FULL_ROWS = IN_H / BLOCK_H };
    enum { SIDE_LOADS = (IN_H * 2 * HALO + CONV_THREADS - 1) / CONV_THREADS };
};

// Loads the block's input tile, tile[i][c] = in(y0 - R + i, x0 - HALO + c),
// 0 outside the image. room = width - x0, the image's columns from x0 on:
// column x0 + dx is in the image where x0 + dx >= 0 and dx < room (dx <
// room cannot overflow where x0 + dx < width could, at the right end of an
// image 2^31 - 1 pixels wide).
template <int R, bool VEC>
__device__ __forceinline__ void conv_load_tile(float (*tile)[IN_W], const float *__restrict__ in, int width,
                                               int height, int x0, int y0)
{
    typedef conv_rows<R> S;
    int tx = threadIdx.x, ty = threadIdx.y, tid = ty * BLOCK_W + tx;
    int room = width - x0;
    long long row_step = (long long)BLOCK_H * width;  // from image row y to y + 8

    // TODO(step 6): load the tile with its halo (see conv_kernel's comment).
    // Every element tile[i][c] (i < S::IN_H, c < IN_W) holds in(y0 - R + i,
    // x0 - HALO + c), or 0 where that pixel is outside the image. Warp ty
    // loads rows i = ty + 8n, n = 0 .. S::ROWS_PER_WARP - 1 (none past
    // S::IN_H); the image's row y + 8 is row_step floats after row y, and
    // indices are 64-bit.
    //  VEC: lane tx loads columns 4 tx .. 4 tx + 3 of the middle (tile
    //    columns HALO + 4 tx ..) as one float4; the halo is one float4 at
    //    each end of a row (tile columns 0 .. 3 and TILE_W + 4 .. TILE_W +
    //    7): thread tid loads row tid / 2, the left one where tid is even.
    //    A float4 lies wholly inside the image or wholly outside.
    //  Not VEC: lane tx loads columns tx, tx + 32, tx + 64, tx + 96 of the
    //    middle (each warp load a coalesced 128-byte run); the halo's 8
    //    floats a row: thread tid loads k = tid + h * CONV_THREADS, h <
    //    S::SIDE_LOADS: row k / 8, halo column k % 8 (4 .. 7: the right end).
    // Issue every load of the thread into registers first, then store them
    // all to the tile: its loads are in flight together, not one at a time.
    // BEGIN SOLUTION
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (VEC) {
        float4 mid[S::ROWS_PER_WARP], side;
        bool in_x = COLS * tx < room;  // width % 4 == 0: all 4 columns in, or all out
        long long first = (long long)(y0 - R + ty) * width + (x0 + COLS * tx);
#pragma unroll
        for (int n = 0; n < S::ROWS_PER_WARP; ++n) {
            int i = ty + BLOCK_H * n, gy = y0 - R + i;
            bool ok = (n < S::FULL_ROWS || i < S::IN_H) && in_x && gy >= 0 && gy < height;
            mid[n] = ok ? *reinterpret_cast<const float4 *>(in + first + n * row_step) : zero;
        }
        int hi = tid >> 1, hdx = tid & 1 ? TILE_W : -HALO, hgy = y0 - R + hi;
        bool ok = hi < S::IN_H && x0 + hdx >= 0 && hdx < room && hgy >= 0 && hgy < height;
        side = ok ? *reinterpret_cast<const float4 *>(in + (long long)hgy * width + x0 + hdx) : zero;

#pragma unroll
        for (int n = 0; n < S::ROWS_PER_WARP; ++n)
            if (n < S::FULL_ROWS || ty + BLOCK_H * n < S::IN_H)
                *reinterpret_cast<float4 *>(&tile[ty + BLOCK_H * n][HALO + COLS * tx]) = mid[n];
        if (hi < S::IN_H)
            *reinterpret_cast<float4 *>(&tile[hi][HALO + hdx]) = side;
    } else {
        float4 mid[S::ROWS_PER_WARP];  // columns tx + 32m in .x .y .z .w
        float side[S::SIDE_LOADS];
        bool in_x[COLS];
#pragma unroll
        for (int m = 0; m < COLS; ++m)
            in_x[m] = tx + BLOCK_W * m < room;
        long long first = (long long)(y0 - R + ty) * width + (x0 + tx);
#pragma unroll
        for (int n = 0; n < S::ROWS_PER_WARP; ++n) {
            int i = ty + BLOCK_H * n, gy = y0 - R + i;
            bool ok = (n < S::FULL_ROWS || i < S::IN_H) && gy >= 0 && gy < height;
            const float *p = in + first + n * row_step;  // read only where ok
            mid[n].x = ok && in_x[0] ? p[0] : 0.0f;
            mid[n].y = ok && in_x[1] ? p[BLOCK_W] : 0.0f;
            mid[n].z = ok && in_x[2] ? p[2 * BLOCK_W] : 0.0f;
            mid[n].w = ok && in_x[3] ? p[3 * BLOCK_W] : 0.0f;
        }
#pragma unroll
        for (int h = 0; h < S::SIDE_LOADS; ++h) {
            int k = tid + CONV_THREADS * h, i = k >> 3, c = k & 7;
            int dx = c < HALO ? c - HALO : TILE_W + c - HALO, gy = y0 - R + i;
            side[h] = 0.0f;
            if (i < S::IN_H && x0 + dx >= 0 && dx < room && gy >= 0 && gy < height)
                side[h] = in[(long long)gy * width + x0 + dx];
        }

#pragma unroll
        for (int n = 0; n < S::ROWS_PER_WARP; ++n)
            if (n < S::FULL_ROWS || ty + BLOCK_H * n < S::IN_H) {
                float *dst = &tile[ty + BLOCK_H * n][HALO + tx];
                dst[0] = mid[n].x;
                dst[BLOCK_W] = mid[n].y;
                dst[2 * BLOCK_W] = mid[n].z;
                dst[3 * BLOCK_W] = mid[n].w;
            }
#pragma unroll
        for (int h = 0; h < S::SIDE_LOADS; ++h) {
            int k = tid + CONV_THREADS * h, i = k >> 3, c = k & 7;
            if (i < S::IN_H)
                tile[i][c < HALO ? c : TILE_W + c] = side[h];
        }
    }
    //@ (void)tile; (void)in; (void)height; (void)y0; (void)tid; (void)room; (void)row_step;
    // END SOLUTION
}

// Sums the thread's outputs: acc[o][q] is out(y0 + ty * ROWS + o, x0 +
// COLS * tx + q).
template <int R, typename F>
__device__ __forceinline__ void conv_sum(const float (*tile)[IN_W], const F &filter, float (&acc)[ROWS][COLS])
{
    enum { TAPS = 2 * R + 1 };
    int tx = threadIdx.x, ty = threadIdx.y;

    // TODO(step 6): acc[o][q] = the sum over a, b < TAPS of filter[a * TAPS
    // + b] * tile[ty * ROWS + o + a][HALO - R + COLS * tx + q + b]. Read
    // each weight once, w[i] = filter[i] into float w[TAPS * TAPS], and use
    // w in the sums. Walk down the ROWS + 2R tile rows j the thread needs:
    // read the 12 floats at columns 4 tx .. 4 tx + 11 of row ty * ROWS + j
    // once, as three float4, and add them into every output row o they
    // touch (filter row a = j - o), all 4 columns. Unroll every loop
    // (#pragma unroll): then every filter index is a constant, and w and
    // acc stay in registers.
    // BEGIN SOLUTION
    // The weights once each. Written filter[a * TAPS + b] in the sums, each
    // weight is read ROWS * COLS times in the source; the compiler merges
    // those reads into the same machine code as this (sm_90, CUDA 13), but
    // nvcc then takes about a fifth longer on this file.
    float w[TAPS * TAPS];
#pragma unroll
    for (int i = 0; i < TAPS * TAPS; ++i)
        w[i] = filter[i];
#pragma unroll
    for (int o = 0; o < ROWS; ++o)
#pragma unroll
        for (int q = 0; q < COLS; ++q)
            acc[o][q] = 0.0f;
    // Tile row ty * ROWS + j is filter row a = j - o of output row o.
#pragma unroll
    for (int j = 0; j < ROWS + 2 * R; ++j) {
        const float4 *row = reinterpret_cast<const float4 *>(&tile[ty * ROWS + j][COLS * tx]);
        float4 f0 = row[0], f1 = row[1], f2 = row[2];
        float v[12] = {f0.x, f0.y, f0.z, f0.w, f1.x, f1.y, f1.z, f1.w, f2.x, f2.y, f2.z, f2.w};
        // only the output rows o the row touches (0 <= a < TAPS): the same code as testing a in every o,
        // and about 2 s less to compile (nvcc 13, one core; measured when the file took 14 s)
#pragma unroll
        for (int o = j - 2 * R > 0 ? j - 2 * R : 0; o < (j < ROWS ? j + 1 : ROWS); ++o) {
            int a = j - o;
#pragma unroll
            for (int q = 0; q < COLS; ++q)
#pragma unroll
                for (int b = 0; b < TAPS; ++b)
                    acc[o][q] += w[a * TAPS + b] * v[HALO - R + q + b];
        }
    }
    //@ (void)tile; (void)filter; (void)tx; (void)ty;
    //@ for (int o = 0; o < ROWS; ++o)
    //@     for (int q = 0; q < COLS; ++q)
    //@         acc[o][q] = 0.0f;
    // END SOLUTION
}

// Writes the thread's outputs where they lie in the image. Not VEC: through
// the tile, which every warp must be done reading (every thread calls this).
template <bool VEC>
__device__ __forceinline__ void conv_store(float (*tile)[IN_W], const float (&acc)[ROWS][COLS],
                                           float *__restrict__ out, int width, int height, int x0, int y0)
{
    int tx = threadIdx.x, ty = threadIdx.y;
    int room = width - x0;

    // TODO(step 6): write acc[o][q] to out(y0 + ty * ROWS + o, x0 + COLS *
    // tx + q) where that pixel is in the image.
    //  VEC: one float4 a row o (its 4 columns all in the image, or none).
    //  Not VEC: from registers, 4 columns a thread, a warp's store would
    //    touch 16 sectors with 8 bytes in each. Stage the outputs in the
    //    tile instead: wait until every warp is done reading it; each thread
    //    writes its outputs as float4 into the tile seen as a TILE_H x
    //    TILE_W array, stage[(ty * ROWS + o) * TILE_W + COLS * tx + q];
    //    __syncwarp() (a warp reads back only the rows it wrote); then lane
    //    tx stores columns tx, tx + 32, tx + 64, tx + 96 of its warp's rows:
    //    each warp store one coalesced run.
    // BEGIN SOLUTION
    if (VEC) {
#pragma unroll
        for (int o = 0; o < ROWS; ++o) {
            int gy = y0 + ty * ROWS + o;
            if (COLS * tx < room && gy < height)
                *reinterpret_cast<float4 *>(out + (long long)gy * width + x0 + COLS * tx) =
                    make_float4(acc[o][0], acc[o][1], acc[o][2], acc[o][3]);
        }
    } else {
        __syncthreads();  // every warp is done reading the tile before it is overwritten
        float *stage = &tile[0][0];
#pragma unroll
        for (int o = 0; o < ROWS; ++o)
            *reinterpret_cast<float4 *>(stage + (ty * ROWS + o) * TILE_W + COLS * tx) =
                make_float4(acc[o][0], acc[o][1], acc[o][2], acc[o][3]);
        __syncwarp();  // the warp's own rows, written by its own lanes
#pragma unroll
        for (int o = 0; o < ROWS; ++o) {
            int gy = y0 + ty * ROWS + o;
            if (gy < height) {
                float *dst = out + (long long)gy * width + x0;
#pragma unroll
                for (int m = 0; m < COLS; ++m)
                    if (tx + BLOCK_W * m < room)
                        dst[tx + BLOCK_W * m] = stage[(ty * ROWS + o) * TILE_W + tx + BLOCK_W * m];
            }
        }
    }
    //@ (void)tile; (void)acc; (void)out; (void)height; (void)y0; (void)tx; (void)ty; (void)room;
    // END SOLUTION
}

// __launch_bounds__(CONV_THREADS, blocks): F::BLOCKS_PER_SM = 4 blocks
// (1024 threads) an SM, so up to 64 registers a thread, for its 32 sums, a
// tile row's 12 pixels and its loads in flight (60-64 registers at r = 1 ..
// 3). At r = 4 the scalar path has 4 x 9 + 3 loads in flight: one block
// fewer, 3, gives them the registers (72-80, no spill). (The earlier
// kernel, capped at 8 blocks and 32 registers, spilled at r = 4.)
template <int R, bool VEC, typename F>
__global__ void __launch_bounds__(CONV_THREADS, R < 4 ? F::BLOCKS_PER_SM : F::BLOCKS_PER_SM - 1)
conv_kernel(const float *__restrict__ in, float *__restrict__ out, int width, int height, F filter)
{
    __shared__ __align__(16) float tile[conv_rows<R>::IN_H][IN_W];
    int x0 = blockIdx.x * TILE_W, y0 = blockIdx.y * TILE_H;

    // TODO(step 6): load the tile (conv_load_tile), wait until all of it has
    // landed, sum the thread's outputs (conv_sum) and store them
    // (conv_store).
    // BEGIN SOLUTION
    conv_load_tile<R, VEC>(tile, in, width, height, x0, y0);
    __syncthreads();  // the halo comes from other warps' loads: all of it lands before anyone reads
    float acc[ROWS][COLS];
    conv_sum<R>(tile, filter, acc);
    conv_store<VEC>(tile, acc, out, width, height, x0, y0);
    //@ (void)in; (void)out; (void)width; (void)height; (void)filter; (void)tile; (void)x0; (void)y0;
    // END SOLUTION
}

// ------------------------------------------------------------ launchers

static dim3 lookup_grid(int threads)
{
    return dim3((unsigned)((threads + LOOKUP_THREADS - 1) / LOOKUP_THREADS));
}

// The factors of the job's signs (walk_signs).
static walk_signs walk_signs_of(unsigned signs)
{
    walk_signs sg;
    for (int k = 0; k < CONSTMEM_PASS_READS; ++k)
        sg.s[k] = (signs >> k) & 1u ? -1.0f : 1.0f;
    return sg;
}

extern "C" cudaError_t constmem_upload_tables(const float *table, const float *big)
{
    // TODO(step 1): copy the CONSTMEM_TABLE_ENTRIES floats at table into
    // c_table with cudaMemcpyToSymbol, checked (CML_TRY returns the error).
    // BEGIN SOLUTION
    CML_TRY(cudaMemcpyToSymbol(c_table, table, sizeof c_table));
    //@ (void)table;
    // END SOLUTION
    // TODO(step 5): the same for big into c_big.
    // BEGIN SOLUTION
    CML_TRY(cudaMemcpyToSymbol(c_big, big, sizeof c_big));
    //@ (void)big;
    // END SOLUTION
    return cudaSuccess;
}

extern "C" cudaError_t constmem_upload_filter(const float *w, int radius)
{
    if (radius < 1 || radius > CONSTMEM_MAX_RADIUS)
        return cudaErrorInvalidValue;
    // TODO(step 6): copy the (2 * radius + 1)^2 weights at w into the start
    // of c_filter.
    // BEGIN SOLUTION
    size_t taps = (size_t)(2 * radius + 1) * (size_t)(2 * radius + 1);
    CML_TRY(cudaMemcpyToSymbol(c_filter, w, taps * sizeof(float)));
    //@ (void)w;
    // END SOLUTION
    return cudaSuccess;
}

// One walk with the kernel of a step: stride and mask of the table it reads.
template <int STRIDE, int MASK>
static cudaError_t lookup_global_walk(int step, const constmem_lookup_job *j)
{
    dim3 grid = lookup_grid(j->threads);
    walk_signs sg = walk_signs_of(j->signs);
    if (step == 3)
        lookup_kernel_ldg<STRIDE, MASK><<<grid, LOOKUP_THREADS>>>(j->table, j->out, j->threads, j->passes, j->d, sg);
    else
        lookup_kernel_global<STRIDE, MASK><<<grid, LOOKUP_THREADS>>>(j->table, j->out, j->threads, j->passes, j->d, sg);
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

extern "C" cudaError_t constmem_lookup(int step, const constmem_lookup_job *j)
{
    if (j == NULL || j->threads < 1 || j->threads > CONSTMEM_MAX_THREADS || j->passes < 1 ||
        j->passes > CONSTMEM_MAX_PASSES || j->d < 1 || j->d > 32 || (j->d & (j->d - 1)) != 0 ||
        (j->big != 0 && j->big != 1))
        return cudaErrorInvalidValue;
    dim3 grid = lookup_grid(j->threads);
    walk_signs sg = walk_signs_of(j->signs);
    switch (step) {
    case 1:
        if (j->d != 1 || j->big)
            return cudaErrorInvalidValue;
        lookup_kernel_broadcast<<<grid, LOOKUP_THREADS>>>(j->out, j->threads, j->passes, sg);
        break;
    case 2:
        if (j->big)
            return cudaErrorInvalidValue;
        lookup_kernel_distinct<<<grid, LOOKUP_THREADS>>>(j->out, j->threads, j->passes, j->d, sg);
        break;
    case 3:
    case 4:
        return j->big ? lookup_global_walk<CONSTMEM_BIG_STRIDE, CONSTMEM_BIG_MASK>(step, j)
                      : lookup_global_walk<1, CONSTMEM_SMALL_MASK>(step, j);
    case 5:
        if (j->d != 1 || !j->big)
            return cudaErrorInvalidValue;
        lookup_kernel_big<<<grid, LOOKUP_THREADS>>>(j->out, j->threads, j->passes, sg);
        break;
    default:
        return cudaErrorInvalidValue;
    }
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

// The 16-byte path (conv_kernel's VEC): the width a multiple of 4 and both
// pointers 16-byte aligned. Then every image row, and every float4 the
// kernel reads or writes, starts on 16 bytes.
static bool conv_vec_ok(const constmem_conv_job *j)
{
    return j->width % 4 == 0 && (uintptr_t)j->in % 16 == 0 && (uintptr_t)j->out % 16 == 0;
}

template <int R, typename F>
static cudaError_t conv_launch(const constmem_conv_job *j, const F &filter)
{
    dim3 grid((unsigned)((j->width - 1) / TILE_W + 1), (unsigned)((j->height - 1) / TILE_H + 1));
    dim3 block(BLOCK_W, BLOCK_H);
    if (conv_vec_ok(j))
        conv_kernel<R, true, F><<<grid, block>>>(j->in, j->out, j->width, j->height, filter);
    else
        conv_kernel<R, false, F><<<grid, block>>>(j->in, j->out, j->width, j->height, filter);
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

// The kernel is compiled for each radius, so that every loop over the
// filter unrolls and every weight index is a constant.
template <typename F>
static cudaError_t conv_any_radius(const constmem_conv_job *j, const F &filter)
{
    switch (j->radius) {
    case 1: return conv_launch<1>(j, filter);
    case 2: return conv_launch<2>(j, filter);
    case 3: return conv_launch<3>(j, filter);
    case 4: return conv_launch<4>(j, filter);
    default: return cudaErrorInvalidValue;
    }
}

extern "C" cudaError_t constmem_conv(int step, const constmem_conv_job *j)
{
    if (j == NULL || j->width < 1 || j->height < 1 || (long long)j->width * j->height >= (1LL << 31) ||
        j->height > 65535 * TILE_H || j->radius < 1 || j->radius > CONSTMEM_MAX_RADIUS)
        return cudaErrorInvalidValue;
    switch (step) {
    case 6:
        return conv_any_radius(j, constant_filter());
    case 7: {
        global_filter f;
        f.w = j->w_dev;
        return conv_any_radius(j, f);
    }
    case 8: {
        param_filter f;
        // TODO(step 8): copy the job's host filter j->w ((2 * radius + 1)^2
        // floats) into f.w, zeros after it; the launch then copies all of f
        // into the kernel's parameters.
        // BEGIN SOLUTION
        int taps = (2 * j->radius + 1) * (2 * j->radius + 1);
        for (int i = 0; i < CONSTMEM_MAX_TAPS; ++i)
            f.w[i] = i < taps ? j->w[i] : 0.0f;
        //@ for (int i = 0; i < CONSTMEM_MAX_TAPS; ++i)
        //@     f.w[i] = 0.0f;
        // END SOLUTION
        return conv_any_radius(j, f);
    }
    default:
        return cudaErrorInvalidValue;
    }
}
