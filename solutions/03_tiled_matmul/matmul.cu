/* Lab 03: tiled matrix multiply, C = A * B in FP32 for any M x K times K x N.
 *
 * Steps (the table is MATMUL_STEPS in matmul.h; `matmul_run --list`):
 *   1 naive            one thread per element of C; a warp's threads walk 32 rows: uncoalesced
 *   2 coalesced        the same, a warp's threads on 32 columns: coalesced B and C, A broadcast
 *   3 shared_tile      32x32 tiles of A and B in shared memory, two barriers, bounds checks
 *   4 dynamic_tile     tile sizes chosen at run time, 64-deep k-tiles: dynamic shared memory
 *   5 blocktile_1d     64x64 block tile, 8 results per thread down a column: fewer shared loads
 *   6 blocktile_2d     128x128 block tile, 8x8 results per thread: an outer product per k
 *   7 vectorized       A's tile stored transposed; 128-bit loads from shared (and global, aligned)
 *   8 warptile         each warp owns a 64x32 piece; its lanes read conflict-free 128-bit words
 *   9 double_buffer    two shared buffers: the next k-tile loads while this one is used; 128x256 tiles
 *
 * Build, test and time (see README.md in this folder):
 *   cmake --build --preset default
 *   ./build/matmul_run --step 3            # check and time one step
 *   LAB=03 cmake --workflow --preset progress  # rebuild; which steps pass
 *
 * Every kernel computes the block tile of C whose top-left element is
 * (blockIdx.y * rows, blockIdx.x * cols), looping over K in k-tiles. Tiles
 * on the bottom and right edges hang over C, and the last k-tile over K:
 * every load outside A or B reads 0 instead, every store outside C is
 * skipped.
 */
#include "matmul.h"

#include <stdint.h>

#include <cml/cml_check.h>
#include <cuda_runtime.h>

// Steps 1 and 2: blocks of 32 x 8 threads, one element of C each.
enum { NAIVE_X = 32, NAIVE_Y = 8 };
// Step 3: 32 x 32 tiles, one thread per element.
enum { TILE = 32 };
// Step 4: k-tiles KT deep (tiles of A T x KT, of B KT x T, T chosen at run
// time): half the barriers of step 3 per multiply-add. On an H100 at 4096^3,
// 32 x 64 ran about 13% faster than step 3, and 16 x 16 tiles 10% slower.
enum { KT = 64 };
// Step 5: a 64 x 64 tile of C per block of 512 threads, k-tiles of 8;
// thread t owns 8 consecutive rows of one column.
enum { BM1 = 64, BN1 = 64, BK1 = 8, TM1 = 8 };
// Steps 6-8: a 128 x 128 tile of C per block of 256 threads, k-tiles of 16
// (on an H100, 16 beat 8 by 5-7% in steps 7-9: half the barriers);
// each thread owns 8 x 8 elements of C (64 accumulators in registers).
// Step 9 keeps BM, BK and THREADS and doubles the width (BN9, below).
enum { BM = 128, BN = 128, BK = 16, TM = 8, TN = 8, THREADS = (BM / TM) * (BN / TN) };
// Steps 7-9 store A's tile transposed, As[k][m], with rows BM + PAD floats
// apart: the four floats a thread stores for one row of A land in four
// rows of As, and the pad moves every other row 16 banks over (see
// store_tiles). 4, not 1: rows must stay 16-byte aligned for float4 reads.
enum { PAD = 4 };
// Steps 8-9: 8 warps as 2 x 4, each owning a 64-row piece of the block
// tile, a quarter of its width: 64 x 32 in step 8. A lane's results are
// 4 x 4 squares, 32 rows and 16 columns apart, so that the 8 x 4 lanes of
// a warp read neighbouring float4s.
enum { WM = 64, WARPS_X = 4, LANE_ROWS = 8, LANE_COLS = 4 };
// Step 9: block tiles of 128 x 256 (warps of 64 x 64, 8 x 16 results a
// lane, TN9 columns): on an H200, 0.945x cuBLAS at 4096^3 where 128 x 128
// made 0.899x (see matmul_kernel9).
enum { BN9 = 256, TN9 = BN9 / WARPS_X / LANE_COLS };

// ------------------------------------------------------------ kernels

// Steps 1 and 2: C(row, col) = sum over k of A(row, k) * B(k, col), straight
// from global memory, summed in a float.
__device__ __forceinline__ void dot_row_col(const float *A, const float *B, float *C, int N, int K, int row,
                                            int col)
{
    // TODO(step 1): sum A(row, k) * B(k, col) for k = 0 .. K-1 and store it
    // at C(row, col). Index with size_t: row * K may pass 2^31 in other
    // labs' sizes, and the habit is cheap.
    // BEGIN SOLUTION
    float acc = 0.0f;
    for (int k = 0; k < K; ++k)
        acc += A[(size_t)row * K + k] * B[(size_t)k * N + col];
    C[(size_t)row * N + col] = acc;
    //@ (void)A; (void)B; (void)C; (void)N; (void)K; (void)row; (void)col;
    // END SOLUTION
}

// Step 1: naive. Thread (x, y) of block (bx, by) computes C(row, col) with
// row = bx * 32 + x, col = by * 8 + y. The 32 threads of a warp (x = 0..31)
// read A at 32 different rows, K floats apart: 32 memory transactions for
// 32 floats. They write C the same way. B's element is the same for all.
__global__ void __launch_bounds__(NAIVE_X * NAIVE_Y)
matmul_kernel1(const float *A, const float *B, float *C, int M, int N, int K)
{
    // TODO(step 1): row = blockIdx.x * NAIVE_X + threadIdx.x and col =
    // blockIdx.y * NAIVE_Y + threadIdx.y; if both are inside C (row < M,
    // col < N), dot_row_col.
    // BEGIN SOLUTION
    int row = blockIdx.x * NAIVE_X + threadIdx.x;
    int col = blockIdx.y * NAIVE_Y + threadIdx.y;
    if (row < M && col < N)
        dot_row_col(A, B, C, N, K, row, col);
    //@ (void)A; (void)B; (void)C; (void)M; (void)N; (void)K;
    // END SOLUTION
}

// Step 2: coalesced. The same work with the roles of x and y swapped: the
// 32 threads of a warp take 32 neighbouring columns of one row. Their B
// loads and C stores are 128 contiguous bytes; their A load is one float,
// broadcast to the warp.
__global__ void __launch_bounds__(NAIVE_X * NAIVE_Y)
matmul_kernel2(const float *A, const float *B, float *C, int M, int N, int K)
{
    // TODO(step 2): as step 1 with col = blockIdx.x * NAIVE_X + threadIdx.x
    // and row = blockIdx.y * NAIVE_Y + threadIdx.y (the launcher's grid is
    // swapped to match).
    // BEGIN SOLUTION
    int col = blockIdx.x * NAIVE_X + threadIdx.x;
    int row = blockIdx.y * NAIVE_Y + threadIdx.y;
    if (row < M && col < N)
        dot_row_col(A, B, C, N, K, row, col);
    //@ (void)A; (void)B; (void)C; (void)M; (void)N; (void)K;
    // END SOLUTION
}

// Step 3: shared tiles. The block (32 x 32 threads) computes a 32 x 32 tile
// of C. For each k-tile, every thread loads one element of A's tile and
// one of B's into shared memory; then each thread reads a row of As and a
// column of Bs: 32 multiply-adds for 2 global loads, where steps 1-2 did
// 1 for 2. Elements outside A or B load as 0, so the last, partial k-tile
// adds nothing extra.
__global__ void __launch_bounds__(TILE * TILE)
matmul_kernel3(const float *A, const float *B, float *C, int M, int N, int K)
{
    // TODO(step 3): two tiles in shared memory, __shared__ float
    // As[TILE][TILE] and Bs[TILE][TILE]; thread (tx, ty) = (threadIdx.x,
    // threadIdx.y) computes C(row, col), row = blockIdx.y * TILE + ty,
    // col = blockIdx.x * TILE + tx. For each k-tile t (ceil(K / TILE) of
    // them: the last may be partial), it stores A(row, t * TILE + tx) at As[ty][tx]
    // and B(t * TILE + ty, col) at Bs[ty][tx], or 0 where that element lies
    // outside A or B. Wait until the whole block has stored, add
    // As[ty][k] * Bs[k][tx] for k = 0 .. TILE-1, and wait again before the
    // next k-tile overwrites the tiles. Store the sum at C(row, col) if it
    // is inside C.
    // BEGIN SOLUTION
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    int tiles = (K + TILE - 1) / TILE;  // the last k-tile may be partial
    for (int t = 0; t < tiles; ++t) {
        int ka = t * TILE + tx, kb = t * TILE + ty;
        As[ty][tx] = row < M && ka < K ? A[(size_t)row * K + ka] : 0.0f;
        Bs[ty][tx] = kb < K && col < N ? B[(size_t)kb * N + col] : 0.0f;
        __syncthreads();  // read after write: both tiles complete before anyone reads them
#pragma unroll
        for (int k = 0; k < TILE; ++k)
            acc += As[ty][k] * Bs[k][tx];
        __syncthreads();  // write after read: no thread refills the tiles while a slower one still reads
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = acc;
    //@ (void)A; (void)B; (void)C; (void)M; (void)N; (void)K;
    // END SOLUTION
}

// Step 4: the tile sizes chosen at run time. The block (T x T threads)
// still computes a T x T tile of C, but each k-tile is KT deep: As holds
// T x KT floats of A, Bs KT x T of B, and each thread loads KT / T elements
// of each, then adds KT products: one pair of barriers per KT multiply-adds
// instead of per T. The tiles live in one dynamically sized shared array:
// `extern __shared__ float t[];` has no size, the launch gives it (in
// bytes, the third <<<>>> argument). As takes its first T * KT floats and
// Bs the next: pointer arithmetic on a float *, so the offset counts
// floats, not bytes. The kernel is compiled for each shape the launcher may
// choose (template parameters), so that its loops unroll as in step 3;
// which one runs is decided per call.
template <int T, int KT_>
__global__ void __launch_bounds__(T * T)
matmul_kernel4(const float *A, const float *B, float *C, int M, int N, int K)
{
    extern __shared__ float tiles_smem[];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * T + ty, col = blockIdx.x * T + tx;

    // TODO(step 4): As = tiles_smem (T x KT_, row-major: element (r, k) at
    // As[r * KT_ + k]) and Bs = As + T * KT_ (KT_ x T: element (k, c) at
    // Bs[k * T + c]). For each k-tile (k0 = 0, KT_, ... while k0 < K): for
    // s < KT_ / T, store A(row, k0 + s * T + tx) at As[ty * KT_ + s * T + tx]
    // and B(k0 + s * T + ty, col) at Bs[(s * T + ty) * T + tx] (0 outside);
    // barrier; add As[ty * KT_ + k] * Bs[k * T + tx] for k < KT_; barrier.
    // Store the sum at C(row, col) if it is inside C.
    // BEGIN SOLUTION
    float *As = tiles_smem;
    float *Bs = As + T * KT_;  // T * KT_ floats on, not bytes
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += KT_) {
#pragma unroll
        for (int s = 0; s < KT_ / T; ++s) {
            int ka = k0 + s * T + tx, kb = k0 + s * T + ty;
            As[ty * KT_ + s * T + tx] = row < M && ka < K ? A[(size_t)row * K + ka] : 0.0f;
            Bs[(s * T + ty) * T + tx] = kb < K && col < N ? B[(size_t)kb * N + col] : 0.0f;
        }
        __syncthreads();  // both tiles complete
#pragma unroll
        for (int k = 0; k < KT_; ++k)
            acc += As[ty * KT_ + k] * Bs[k * T + tx];
        __syncthreads();  // everyone done reading before the next k-tile
    }
    if (row < M && col < N)
        C[(size_t)row * N + col] = acc;
    //@ (void)A; (void)B; (void)C; (void)M; (void)N; (void)K; (void)tiles_smem; (void)row; (void)col;
    // END SOLUTION
}

// Step 5: 1D register blocking. 512 threads compute a 64 x 64 tile of C;
// thread t owns column t % 64 and the 8 rows 8 * (t / 64) .. + 7. Per k it
// loads one element of Bs into a register and uses it for 8 results: 9
// shared loads for 8 multiply-adds instead of step 3's 2 per 1. The tiles
// are 64 x 8 (A) and 8 x 64 (B): one element of each per thread.
__global__ void __launch_bounds__((BM1 / TM1) * BN1)
matmul_kernel5(const float *A, const float *B, float *C, int M, int N, int K)
{
    // TODO(step 5): tiles __shared__ float As[BM1][BK1], Bs[BK1][BN1]. With
    // t = threadIdx.x: the block tile starts at C(row0, col0), row0 =
    // blockIdx.y * BM1, col0 = blockIdx.x * BN1; the thread owns column
    // tcol = t % BN1 and rows trow = t / BN1 * TM1 .. + TM1 - 1 of it, and
    // loads element (ar, ac) = (t / BK1, t % BK1) of As and (br, bc) =
    // (t / BN1, t % BN1) of Bs. float acc[TM1] = {0}. For each k-tile (k0 = 0, BK1, ...
    // while k0 < K): load A(row0 + ar, k0 + ac) into As[ar][ac] and
    // B(k0 + br, col0 + bc) into Bs[br][bc] (0 outside), barrier; for each
    // k < BK1 read b = Bs[k][tcol] once, then acc[i] += As[trow + i][k] * b
    // for i < TM1; barrier. Store acc[i] at C(row0 + trow + i, col0 + tcol)
    // where inside C.
    // BEGIN SOLUTION
    __shared__ float As[BM1][BK1];
    __shared__ float Bs[BK1][BN1];
    int t = threadIdx.x;
    int row0 = blockIdx.y * BM1, col0 = blockIdx.x * BN1;
    int tcol = t % BN1, trow = t / BN1 * TM1;  // this thread's column and first row in the tile
    int ar = t / BK1, ac = t % BK1;            // the element of As it loads
    int br = t / BN1, bc = t % BN1;            // ... and of Bs
    float acc[TM1] = {0.0f};
    for (int k0 = 0; k0 < K; k0 += BK1) {
        int ga = row0 + ar, ka = k0 + ac, kb = k0 + br, gb = col0 + bc;
        As[ar][ac] = ga < M && ka < K ? A[(size_t)ga * K + ka] : 0.0f;
        Bs[br][bc] = kb < K && gb < N ? B[(size_t)kb * N + gb] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK1; ++k) {
            float b = Bs[k][tcol];  // one shared load, TM1 uses
#pragma unroll
            for (int i = 0; i < TM1; ++i)
                acc[i] += As[trow + i][k] * b;
        }
        __syncthreads();
    }
    int col = col0 + tcol;
#pragma unroll
    for (int i = 0; i < TM1; ++i) {
        int row = row0 + trow + i;
        if (row < M && col < N)
            C[(size_t)row * N + col] = acc[i];
    }
    //@ (void)A; (void)B; (void)C; (void)M; (void)N; (void)K;
    // END SOLUTION
}

// acc[i][j] += a[i] * b[j]: the outer product of a thread's 8 values of A
// (one column of its rows) and TN_ of B (one row of its columns: 8 in
// steps 6-8, 16 in step 9), all in registers.
template <int TN_>
__device__ __forceinline__ void add_outer_product(const float *a, const float *b, float (*acc)[TN_])
{
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN_; ++j)
            acc[i][j] += a[i] * b[j];
}

// Step 6: 2D register blocking. 256 threads compute a 128 x 128 tile of C,
// 8 x 8 elements each: thread t owns rows 8 * (t / 16) .. + 7 and columns
// 8 * (t % 16) .. + 7. Per k it loads 8 elements of A's column and 8 of
// B's row into registers and adds their outer product: 16 shared loads for
// 64 multiply-adds. Each thread loads 8 elements of each 2048-float tile.
__global__ void __launch_bounds__(THREADS)
matmul_kernel6(const float *A, const float *B, float *C, int M, int N, int K)
{
    // TODO(step 6): tiles __shared__ float As[BM][BK], Bs[BK][BN]. With
    // t = threadIdx.x, the block tile starts at C(row0, col0) = (blockIdx.y
    // * BM, blockIdx.x * BN) and the thread owns rows trow = t / (BN / TN) *
    // TM .. + TM - 1 and columns tcol = t % (BN / TN) * TN .. + TN - 1 of it.
    // float acc[TM][TN] = {{0}}. For each k-tile: for
    // s < BM * BK / THREADS, element e = t + s * THREADS of As is As[e / BK][e % BK] =
    // A(row0 + e / BK, k0 + e % BK) and of Bs is Bs[e / BN][e % BN] =
    // B(k0 + e / BN, col0 + e % BN) (0 outside); barrier; for each k < BK,
    // a[i] = As[trow + i][k], b[j] = Bs[k][tcol + j], acc[i][j] += a[i] * b[j];
    // barrier. Then store the 8 x 8 results where inside C.
    // BEGIN SOLUTION
    __shared__ float As[BM][BK];
    __shared__ float Bs[BK][BN];
    int t = threadIdx.x;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    int trow = t / (BN / TN) * TM, tcol = t % (BN / TN) * TN;
    float acc[TM][TN] = {{0.0f}};
    for (int k0 = 0; k0 < K; k0 += BK) {
#pragma unroll
        for (int s = 0; s < BM * BK / THREADS; ++s) {
            int e = t + s * THREADS;
            int ga = row0 + e / BK, ka = k0 + e % BK;
            As[e / BK][e % BK] = ga < M && ka < K ? A[(size_t)ga * K + ka] : 0.0f;
            int kb = k0 + e / BN, gb = col0 + e % BN;
            Bs[e / BN][e % BN] = kb < K && gb < N ? B[(size_t)kb * N + gb] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; ++i)
                a[i] = As[trow + i][k];
#pragma unroll
            for (int j = 0; j < TN; ++j)
                b[j] = Bs[k][tcol + j];
            add_outer_product(a, b, acc);
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            int row = row0 + trow + i, col = col0 + tcol + j;
            if (row < M && col < N)
                C[(size_t)row * N + col] = acc[i][j];
        }
    //@ (void)A; (void)B; (void)C; (void)M; (void)N; (void)K;
    // END SOLUTION
}

// ------------------------------------------------------------ steps 7-9: tiles through registers

// Steps 7-9 move a k-tile from global memory in two halves: fetch (global
// to registers) and store (registers to shared memory), so that step 9 can
// fetch the next k-tile before using this one. The helpers are templates on
// the block tile's width BN_ (128 in steps 7-8, BN9 = 256 in step 9; the
// compiler deduces it from the arrays passed), so one piece of code serves
// both shapes.
//
// A: thread t fetches A_LOADS float4s of A's BM x BK tile: float4 number
// e = t + s * THREADS (s < A_LOADS) is row e / (BK / 4), k-columns
// (e % (BK / 4)) * 4 .. + 3. With VEC (rows 16-byte aligned: K and N
// multiples of 4) one 128-bit load, else 4 scalar loads.
// B with VEC: float4 number e = t + s * THREADS (s < B_LOADS) is k-row
// e / (BN_ / 4), columns (e % (BN_ / 4)) * 4 .. + 3. B without VEC: warp w
// takes k-rows w * B_ROWS .. + B_ROWS - 1 of the tile (B_ROWS = BK / 8),
// lane l of it columns l, l + 32, l + 64, ...: each load instruction of a
// warp reads 32 neighbouring floats (128 bytes), where 4 scalar loads of
// one float4 each would spread a warp's loads over 512 bytes, a quarter of
// each 32-byte sector used. On an H200 at 4097 x 3001 x 2049 (unaligned
// rows) this alone took step 9 with step 8's 128 x 128 tiles from 0.886x
// to 0.910x cuBLAS (a study run on 2026-11-29).
// CHECKED: the tile may hang over A or B, so every element is checked and
// reads 0 outside (with VEC a float4 lies wholly inside or wholly outside,
// K and N being multiples of 4).
enum { A_LOADS = BM * BK / 4 / THREADS, B_ROWS = BK / (THREADS / 32) };
template <int BN_>
struct tile_regs {
    enum { B_LOADS = BK * BN_ / 4 / THREADS };  // B's floats a thread: 4 * B_LOADS = B_ROWS * BN_ / 32
    float a[4 * A_LOADS], b[4 * B_LOADS];
};

template <bool VEC, bool CHECKED, int BN_>
__device__ __forceinline__ void fetch_tiles(const float *A, const float *B, int M, int N, int K, int row0,
                                            int col0, int k0, tile_regs<BN_> &r)
{
    // TODO(step 7): A: for s < A_LOADS, with e = threadIdx.x + s * THREADS,
    // fill r.a[4 * s .. 4 * s + 3] with A(ga, ka .. ka + 3), ga = row0 +
    // e / (BK / 4), ka = k0 + e % (BK / 4) * 4. B with VEC: for s <
    // r.B_LOADS, e as for A, r.b[4 * s .. 4 * s + 3] = B(kb, gb .. gb + 3),
    // kb = k0 + e / (BN_ / 4), gb = col0 + e % (BN_ / 4) * 4. B without VEC:
    // for rr < B_ROWS and j < BN_ / 32, r.b[rr * (BN_ / 32) + j] = B(kb,
    // gb + 32 * j), kb = k0 + warp * B_ROWS + rr, gb = col0 + lane (warp =
    // threadIdx.x / 32, lane = threadIdx.x % 32). With VEC, each float4 is
    // one load through reinterpret_cast<const float4 *> (when CHECKED: all
    // 4 if inside, else all 0); without VEC, scalar loads, each checked
    // when CHECKED.
    // BEGIN SOLUTION
#pragma unroll
    for (int s = 0; s < A_LOADS; ++s) {
        int e = threadIdx.x + s * THREADS;
        int ga = row0 + e / (BK / 4), ka = k0 + e % (BK / 4) * 4;
        const float *pa = A + (size_t)ga * K + ka;
        if (VEC) {
            float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (!CHECKED || (ga < M && ka < K))
                v = *reinterpret_cast<const float4 *>(pa);
            r.a[4 * s + 0] = v.x, r.a[4 * s + 1] = v.y, r.a[4 * s + 2] = v.z, r.a[4 * s + 3] = v.w;
        } else {
#pragma unroll
            for (int q = 0; q < 4; ++q)
                r.a[4 * s + q] = !CHECKED || (ga < M && ka + q < K) ? pa[q] : 0.0f;
        }
    }
    if (VEC) {
#pragma unroll
        for (int s = 0; s < r.B_LOADS; ++s) {
            int e = threadIdx.x + s * THREADS;
            int kb = k0 + e / (BN_ / 4), gb = col0 + e % (BN_ / 4) * 4;
            float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (!CHECKED || (kb < K && gb < N))
                v = *reinterpret_cast<const float4 *>(B + (size_t)kb * N + gb);
            r.b[4 * s + 0] = v.x, r.b[4 * s + 1] = v.y, r.b[4 * s + 2] = v.z, r.b[4 * s + 3] = v.w;
        }
    } else {
        int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
        for (int rr = 0; rr < B_ROWS; ++rr) {
            int kb = k0 + warp * B_ROWS + rr, gb = col0 + lane;
            const float *pb = B + (size_t)kb * N + gb;
#pragma unroll
            for (int j = 0; j < BN_ / 32; ++j)
                r.b[rr * (BN_ / 32) + j] = !CHECKED || (kb < K && gb + 32 * j < N) ? pb[32 * j] : 0.0f;
        }
    }
    //@ (void)A; (void)B; (void)M; (void)N; (void)K; (void)row0; (void)col0; (void)k0;
    //@ for (int i = 0; i < 4 * A_LOADS; ++i) r.a[i] = 0.0f;
    //@ for (int i = 0; i < 4 * r.B_LOADS; ++i) r.b[i] = 0.0f;
    // END SOLUTION
}

// A's tile goes in transposed, As[k][m] (rows BM + PAD apart), so that the
// compute loop reads a thread's 8 values of one k as two float4s; B's tile
// goes in as it is, Bs[k][n], where fetch_tiles read it (with VEC one
// float4 store, else 32 neighbouring words a warp: no bank conflicts).
// A warp's 32 lanes store rows m .. m + 7 of A at k-columns 0, 4, 8, 12:
// row k of As starts at bank (k * (BM + PAD)) % 32 = 0, 16, 0, 16, so two
// lanes share each bank (without the pad, all four would). The compute
// loop's reads, the many, are conflict-free either way.
template <bool VEC, int BN_>
__device__ __forceinline__ void store_tiles(const tile_regs<BN_> &r, float (*As)[BM + PAD], float (*Bs)[BN_])
{
    // TODO(step 7): A: for s < A_LOADS and e as in fetch_tiles, As[k + q][m]
    // = r.a[4 * s + q] for q < 4, with m = e / (BK / 4) and k = e % (BK / 4)
    // * 4. B with VEC: for s < r.B_LOADS, the float4 of r.b[4 * s .. 4 * s
    // + 3] at &Bs[e / (BN_ / 4)][e % (BN_ / 4) * 4]; without VEC,
    // Bs[warp * B_ROWS + rr][lane + 32 * j] = r.b[rr * (BN_ / 32) + j].
    // BEGIN SOLUTION
#pragma unroll
    for (int s = 0; s < A_LOADS; ++s) {
        int e = threadIdx.x + s * THREADS;
        int m = e / (BK / 4), k = e % (BK / 4) * 4;
#pragma unroll
        for (int q = 0; q < 4; ++q)
            As[k + q][m] = r.a[4 * s + q];
    }
    if (VEC) {
#pragma unroll
        for (int s = 0; s < r.B_LOADS; ++s) {
            int e = threadIdx.x + s * THREADS;
            *reinterpret_cast<float4 *>(&Bs[e / (BN_ / 4)][e % (BN_ / 4) * 4]) =
                make_float4(r.b[4 * s + 0], r.b[4 * s + 1], r.b[4 * s + 2], r.b[4 * s + 3]);
        }
    } else {
        int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
        for (int rr = 0; rr < B_ROWS; ++rr)
#pragma unroll
            for (int j = 0; j < BN_ / 32; ++j)
                Bs[warp * B_ROWS + rr][lane + 32 * j] = r.b[rr * (BN_ / 32) + j];
    }
    //@ (void)r; (void)As; (void)Bs;
    // END SOLUTION
}

// One k-tile fetched with the checks it needs: none for a tile wholly
// inside A and B (most of them), all of them on the edges. The branch is
// the same for the whole block.
template <bool VEC, int BN_>
__device__ __forceinline__ void fetch_k_tile(const float *A, const float *B, int M, int N, int K, int row0,
                                             int col0, int k0, bool inside, tile_regs<BN_> &r)
{
    if (inside && k0 + BK <= K)
        fetch_tiles<VEC, false>(A, B, M, N, K, row0, col0, k0, r);
    else
        fetch_tiles<VEC, true>(A, B, M, N, K, row0, col0, k0, r);
}

// Stores a 4 x 4 square of results at C(row, col): rows as float4 when C's
// rows are 16-byte aligned (VEC) and the square is inside, else element by
// element where inside.
template <bool VEC>
__device__ __forceinline__ void store_square(float *C, int M, int N, int row, int col, const float (*v)[4])
{
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        if (row + i >= M)
            break;
        float *p = C + (size_t)(row + i) * N + col;
        if (VEC && col + 3 < N) {
            *reinterpret_cast<float4 *>(p) = make_float4(v[i][0], v[i][1], v[i][2], v[i][3]);
        } else {
#pragma unroll
            for (int j = 0; j < 4; ++j)
                if (col + j < N)
                    p[j] = v[i][j];
        }
    }
}

// Step 7: step 6 with 128-bit loads. A's tile is stored transposed, so a
// thread's 8 values of A for one k are contiguous, like its 8 of B: four
// LDS.128 per k instead of 16 LDS.32. Global loads are 128-bit when K and
// N allow. Thread t owns rows 8 * (t / 16) .. + 7 and columns
// 8 * (t % 16) .. + 7, as in step 6.
template <bool VEC>
__global__ void __launch_bounds__(THREADS)
matmul_kernel7(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ __align__(16) float As[BK][BM + PAD];
    __shared__ __align__(16) float Bs[BK][BN];
    int t = threadIdx.x;
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    int trow = t / (BN / TN) * TM, tcol = t % (BN / TN) * TN;
    bool inside = row0 + BM <= M && col0 + BN <= N;
    float acc[TM][TN] = {{0.0f}};

    // TODO(step 7): for each k-tile: tile_regs<BN> r;
    // fetch_k_tile<VEC>(..., k0, inside, r), store_tiles<VEC>(r, As, Bs),
    // barrier; for each k < BK read a[0..7] as the two float4s at
    // &As[k][trow] and &As[k][trow + 4], b[0..7] likewise from &Bs[k][tcol],
    // and add the outer product into acc; barrier.
    // BEGIN SOLUTION
    for (int k0 = 0; k0 < K; k0 += BK) {
        tile_regs<BN> r;
        fetch_k_tile<VEC>(A, B, M, N, K, row0, col0, k0, inside, r);
        store_tiles<VEC>(r, As, Bs);
        __syncthreads();
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
            *reinterpret_cast<float4 *>(&a[0]) = *reinterpret_cast<const float4 *>(&As[k][trow]);
            *reinterpret_cast<float4 *>(&a[4]) = *reinterpret_cast<const float4 *>(&As[k][trow + 4]);
            *reinterpret_cast<float4 *>(&b[0]) = *reinterpret_cast<const float4 *>(&Bs[k][tcol]);
            *reinterpret_cast<float4 *>(&b[4]) = *reinterpret_cast<const float4 *>(&Bs[k][tcol + 4]);
            add_outer_product(a, b, acc);
        }
        __syncthreads();
    }
    //@ (void)A; (void)B; (void)M; (void)N; (void)K; (void)As; (void)Bs; (void)inside;
    // END SOLUTION
#pragma unroll
    for (int i = 0; i < TM; i += 4)
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            float sq[4][4];
#pragma unroll
            for (int ii = 0; ii < 4; ++ii)
#pragma unroll
                for (int jj = 0; jj < 4; ++jj)
                    sq[ii][jj] = acc[i + ii][j + jj];
            store_square<VEC>(C, M, N, row0 + trow + i, col0 + tcol + j, sq);
        }
}

// Where a lane's 4 x 4 squares lie in the block tile (steps 8 and 9): the
// 8 warps are 2 x 4, warp w owning rows (w / 4) * 64 .. + 63 and the
// w % 4-th quarter of the columns, BN_ / 4 of them (32 in step 8, 64 in
// step 9). Lane l is at lane row l / 4 and lane column l % 4; its squares
// start at row wrow + i * 32 + lane_row * 4 (i < 2) and column wcol +
// j * 16 + lane_col * 4 (j < BN_ / 64: 2 in step 8, 4 in step 9). For one
// k, the 32 lanes read 8 float4s of As (128 contiguous bytes) and, per j,
// 4 of Bs (64 bytes): every bank once at most, the rest broadcast.
struct warp_place {
    int row, col;  // of the lane's first square, in the block tile
};

template <int BN_>
__device__ __forceinline__ warp_place lane_place(void)
{
    // TODO(step 8): with warp = threadIdx.x / 32 and lane = threadIdx.x % 32:
    // row = (warp / WARPS_X) * WM + (lane / LANE_COLS) * 4 and
    // col = (warp % WARPS_X) * (BN_ / WARPS_X) + (lane % LANE_COLS) * 4.
    // BEGIN SOLUTION
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    warp_place p;
    p.row = warp / WARPS_X * WM + lane / LANE_COLS * 4;
    p.col = warp % WARPS_X * (BN_ / WARPS_X) + lane % LANE_COLS * 4;
    return p;
    //@ warp_place p = {0, 0};
    //@ return p;
    // END SOLUTION
}

// The multiply-adds of one k-tile already in shared memory, for a lane at
// p: per k, two float4s of As (rows p.row and p.row + 32) and TN_ / 4 of
// Bs (columns p.col, p.col + 16, ...), and the 8 x TN_ outer product.
template <int BN_, int TN_>
__device__ __forceinline__ void warp_tile_products(const float (*As)[BM + PAD], const float (*Bs)[BN_],
                                                   warp_place p, float (*acc)[TN_])
{
    // TODO(step 8): for each k < BK: a[0..3] from &As[k][p.row], a[4..7] from
    // &As[k][p.row + WM / 2], and b[4 * j .. 4 * j + 3] from
    // &Bs[k][p.col + j * 4 * LANE_COLS] for j < TN_ / 4 (float4 each);
    // acc[i][j] += a[i] * b[j].
    // BEGIN SOLUTION
#pragma unroll
    for (int k = 0; k < BK; ++k) {
        float a[TM], b[TN_];
        *reinterpret_cast<float4 *>(&a[0]) = *reinterpret_cast<const float4 *>(&As[k][p.row]);
        *reinterpret_cast<float4 *>(&a[4]) = *reinterpret_cast<const float4 *>(&As[k][p.row + WM / 2]);
#pragma unroll
        for (int j = 0; j < TN_ / 4; ++j)
            *reinterpret_cast<float4 *>(&b[4 * j]) =
                *reinterpret_cast<const float4 *>(&Bs[k][p.col + j * 4 * LANE_COLS]);
        add_outer_product(a, b, acc);
    }
    //@ (void)As; (void)Bs; (void)p; (void)acc;
    // END SOLUTION
}

// The lane's 8 x TN_ results into C: square (i, j) of acc (rows 4i..,
// columns 4j..) at block-tile row p.row + i * 32, column p.col + j * 16.
template <bool VEC, int TN_>
__device__ __forceinline__ void store_warp_tile(float *C, int M, int N, int row0, int col0, warp_place p,
                                                const float (*acc)[TN_])
{
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < TN_ / 4; ++j) {
            float sq[4][4];
#pragma unroll
            for (int ii = 0; ii < 4; ++ii)
#pragma unroll
                for (int jj = 0; jj < 4; ++jj)
                    sq[ii][jj] = acc[i * 4 + ii][j * 4 + jj];
            store_square<VEC>(C, M, N, row0 + p.row + i * (WM / 2), col0 + p.col + j * 4 * LANE_COLS, sq);
        }
}

// Step 8: warp tiling. Step 7's loads and tiles; only which results a lane
// owns changes (lane_place): a warp's lanes now read a few neighbouring
// float4s for each k instead of 16 spread over 512 bytes, and a warp's
// working set per k is 64 + 32 floats instead of 16 + 128.
// __launch_bounds__(THREADS, 2): at most 128 registers a thread, so that two
// blocks (16 warps) share an SM. Left to itself the compiler took about 150
// for this shape with double buffering, and only one block fitted; with two, one block's barrier waits overlap
// the other's arithmetic (no spills either way: -Xptxas -v).
template <bool VEC>
__global__ void __launch_bounds__(THREADS, 2)
matmul_kernel8(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ __align__(16) float As[BK][BM + PAD];
    __shared__ __align__(16) float Bs[BK][BN];
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    bool inside = row0 + BM <= M && col0 + BN <= N;
    warp_place p = lane_place<BN>();
    float acc[TM][TN] = {{0.0f}};
    for (int k0 = 0; k0 < K; k0 += BK) {
        tile_regs<BN> r;
        fetch_k_tile<VEC>(A, B, M, N, K, row0, col0, k0, inside, r);
        store_tiles<VEC>(r, As, Bs);
        __syncthreads();  // the k-tile is complete
        warp_tile_products(As, Bs, p, acc);
        __syncthreads();  // all reads done before the next k-tile is stored
    }
    store_warp_tile<VEC>(C, M, N, row0, col0, p, acc);
}

// Step 9: double buffering, on a block tile twice as wide. Two pairs of
// tiles: while the block computes on buffer `cur`, each thread's loads of
// the next k-tile are already in flight (fetched into registers before the
// products, stored after them into the other buffer). One barrier per
// k-tile: it both publishes the next buffer and ends all reads of the
// current one, which is only overwritten after the next barrier.
//
// The tile is 128 x BN9 = 128 x 256, each warp 64 x 64, each lane 8 x 16
// results (128 accumulators): per k a lane reads 2 + 4 float4s of shared
// memory for 128 multiply-adds (step 8: 2 + 2 for 64), and per k-tile a
// block loads 16 x (128 + 256) floats from global memory for 128 x 256
// results (step 8: 16 x 256 for 128 x 128): a quarter fewer shared loads
// and a third fewer global loads per multiply-add. The price: about 235
// registers a thread, so one block (8 warps) an SM, where step 8 keeps two
// (__launch_bounds__(THREADS, 1) lets ptxas take up to 255; no spills:
// -Xptxas -v); the double buffer is what keeps those 8 warps busy across
// the global loads. The two buffers take 2 x 16 x (132 + 256) floats,
// 49,664 bytes: over the 48 KiB a static __shared__ array may have, so
// they live in dynamic shared memory (step 4), sized by the launch.
// Measured on an H200 (a study run on 2026-11-29), against cuBLAS SGEMM
// FP32: 0.945x at 4096^3 and 0.904x at 4097 x 3001 x 2049, where the
// 128 x 128 tiles of step 8's shape with double buffering made 0.899x and
// 0.886x; 256 x 128 (tall) tiles made 0.884x and 0.673x, and k-tiles 8
// deep (twice the barriers) 0.921x and 0.842x.
template <bool VEC>
__global__ void __launch_bounds__(THREADS, 1)
matmul_kernel9(const float *A, const float *B, float *C, int M, int N, int K)
{
    extern __shared__ __align__(16) float tiles9_smem[];
    float(*As)[BK][BM + PAD] = reinterpret_cast<float(*)[BK][BM + PAD]>(tiles9_smem);  // As[2][BK][BM + PAD]
    float(*Bs)[BK][BN9] = reinterpret_cast<float(*)[BK][BN9]>(tiles9_smem + 2 * BK * (BM + PAD));  // Bs[2][BK][BN9]
    int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN9;
    bool inside = row0 + BM <= M && col0 + BN9 <= N;
    warp_place p = lane_place<BN9>();
    float acc[TM][TN9] = {{0.0f}};
    tile_regs<BN9> r;
    fetch_k_tile<VEC>(A, B, M, N, K, row0, col0, 0, inside, r);
    store_tiles<VEC>(r, As[0], Bs[0]);
    __syncthreads();

    // TODO(step 9): for k-tile number n = 0, 1, ... (k0 = n * BK < K), with
    // cur = n % 2: if there is a next k-tile, fetch it into r first; then
    // warp_tile_products on As[cur], Bs[cur]; then store r into As[1 - cur],
    // Bs[1 - cur]; then one barrier.
    // BEGIN SOLUTION
    for (int k0 = 0, cur = 0; k0 < K; k0 += BK, cur ^= 1) {
        bool more = k0 + BK < K;
        if (more)
            fetch_k_tile<VEC>(A, B, M, N, K, row0, col0, k0 + BK, inside, r);  // in flight during the products
        warp_tile_products(As[cur], Bs[cur], p, acc);
        if (more)
            store_tiles<VEC>(r, As[cur ^ 1], Bs[cur ^ 1]);
        __syncthreads();  // next buffer complete; this one free to be overwritten next time
    }
    //@ (void)A; (void)B; (void)M; (void)N; (void)K; (void)inside; (void)r;
    // END SOLUTION
    store_warp_tile<VEC>(C, M, N, row0, col0, p, acc);
}


// ------------------------------------------------------------ launchers

// Block tiles of `rows` x `cols` over C: columns on x, rows on y.
static dim3 tile_grid(int M, int N, int rows, int cols)
{
    return dim3((unsigned)((N + cols - 1) / cols), (unsigned)((M + rows - 1) / rows));
}

static cudaError_t matmul_step1(const float *A, const float *B, float *C, int M, int N, int K)
{
    dim3 grid((unsigned)((M + NAIVE_X - 1) / NAIVE_X), (unsigned)((N + NAIVE_Y - 1) / NAIVE_Y));
    matmul_kernel1<<<grid, dim3(NAIVE_X, NAIVE_Y)>>>(A, B, C, M, N, K);
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

static cudaError_t matmul_step2(const float *A, const float *B, float *C, int M, int N, int K)
{
    matmul_kernel2<<<tile_grid(M, N, NAIVE_Y, NAIVE_X), dim3(NAIVE_X, NAIVE_Y)>>>(A, B, C, M, N, K);
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

static cudaError_t matmul_step3(const float *A, const float *B, float *C, int M, int N, int K)
{
    matmul_kernel3<<<tile_grid(M, N, TILE, TILE), dim3(TILE, TILE)>>>(A, B, C, M, N, K);
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

// The tile width, chosen at run time from the shape: 32 x 32 tiles of C
// unless they would leave most SMs idle (a small or thin C), then 16 x 16
// (four times the blocks). T * T threads must fit a block (1024).
static int dynamic_tile_size(int M, int N)
{
    int sms = 0;
    if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) != cudaSuccess)
        sms = 1;
    long long blocks32 = (long long)((M + 31) / 32) * ((N + 31) / 32);
    return blocks32 >= 2LL * sms ? 32 : 16;
}

static cudaError_t matmul_step4(const float *A, const float *B, float *C, int M, int N, int K)
{
    int tile = dynamic_tile_size(M, N);
    // TODO(step 4): the dynamic shared memory the launch asks for: a tile
    // of tile x KT floats and one of KT x tile floats, in bytes.
    // BEGIN SOLUTION
    size_t smem = 2 * (size_t)tile * KT * sizeof(float);
    //@ size_t smem = 0;
    // END SOLUTION
    dim3 grid = tile_grid(M, N, tile, tile);
    if (tile == 32)
        matmul_kernel4<32, KT><<<grid, dim3(32, 32), smem>>>(A, B, C, M, N, K);
    else
        matmul_kernel4<16, KT><<<grid, dim3(16, 16), smem>>>(A, B, C, M, N, K);
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

static cudaError_t matmul_step5(const float *A, const float *B, float *C, int M, int N, int K)
{
    matmul_kernel5<<<tile_grid(M, N, BM1, BN1), (BM1 / TM1) * BN1>>>(A, B, C, M, N, K);
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

static cudaError_t matmul_step6(const float *A, const float *B, float *C, int M, int N, int K)
{
    matmul_kernel6<<<tile_grid(M, N, BM, BN), THREADS>>>(A, B, C, M, N, K);
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

// 128-bit global loads and stores need every row 16-byte aligned: K (A's
// row length) and N (B's and C's) multiples of 4, on 16-byte aligned bases.
static bool rows_aligned(const float *A, const float *B, const float *C, int N, int K)
{
    uintptr_t bases = (uintptr_t)A | (uintptr_t)B | (uintptr_t)C;
    return K % 4 == 0 && N % 4 == 0 && bases % 16 == 0;
}

// Steps 7-9: the kernel compiled for 16-byte aligned rows when the shape
// allows, else the one with scalar global loads.
typedef void (*block_tiled_kernel)(const float *, const float *, float *, int, int, int);

static cudaError_t launch_block_tiled(block_tiled_kernel aligned, block_tiled_kernel any, const float *A,
                                      const float *B, float *C, int M, int N, int K)
{
    block_tiled_kernel kernel = rows_aligned(A, B, C, N, K) ? aligned : any;
    kernel<<<tile_grid(M, N, BM, BN), THREADS>>>(A, B, C, M, N, K);
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

static cudaError_t matmul_step7(const float *A, const float *B, float *C, int M, int N, int K)
{
    return launch_block_tiled(matmul_kernel7<true>, matmul_kernel7<false>, A, B, C, M, N, K);
}

static cudaError_t matmul_step8(const float *A, const float *B, float *C, int M, int N, int K)
{
    return launch_block_tiled(matmul_kernel8<true>, matmul_kernel8<false>, A, B, C, M, N, K);
}

// Step 9: 128 x 256 block tiles, two buffers of A's and B's tiles in
// dynamic shared memory. A block may use more than 48 KiB of it only when
// the kernel is allowed to (cudaFuncSetAttribute, once per kernel; on
// Volta and later up to 96-227 KiB).
static cudaError_t matmul_step9(const float *A, const float *B, float *C, int M, int N, int K)
{
    const size_t smem = 2 * (size_t)BK * (BM + PAD + BN9) * sizeof(float);  // 49,664 bytes
    block_tiled_kernel kernel = rows_aligned(A, B, C, N, K) ? matmul_kernel9<true> : matmul_kernel9<false>;
    CML_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    kernel<<<tile_grid(M, N, BM, BN9), THREADS, smem>>>(A, B, C, M, N, K);
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

// ------------------------------------------------------------ dispatcher

static bool shape_ok(int M, int N, int K)
{
    const long long lim = 1LL << 31;
    if (M < 1 || N < 1 || K < 1 || M > MATMUL_MAX_SIDE || N > MATMUL_MAX_SIDE || K > MATMUL_MAX_SIDE)
        return false;
    return (long long)M * K < lim && (long long)K * N < lim && (long long)M * N < lim;
}

extern "C" cudaError_t matmul_step(int step, const float *A, const float *B, float *C, int M, int N, int K)
{
    if (!shape_ok(M, N, K))
        return cudaErrorInvalidValue;
    switch (step) {
    case 1: return matmul_step1(A, B, C, M, N, K);
    case 2: return matmul_step2(A, B, C, M, N, K);
    case 3: return matmul_step3(A, B, C, M, N, K);
    case 4: return matmul_step4(A, B, C, M, N, K);
    case 5: return matmul_step5(A, B, C, M, N, K);
    case 6: return matmul_step6(A, B, C, M, N, K);
    case 7: return matmul_step7(A, B, C, M, N, K);
    case 8: return matmul_step8(A, B, C, M, N, K);
    case 9: return matmul_step9(A, B, C, M, N, K);
    default: return cudaErrorInvalidValue;
    }
}
