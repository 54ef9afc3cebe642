/* Lab 02: constant memory. Tables read through __constant__, __ldg and
 * plain loads, then a 2D convolution with its filter in three places.
 *
 * Steps (the table is CONSTMEM_STEPS in constmem.h; `constmem_run --list`):
 *   1 broadcast      upload a table with cudaMemcpyToSymbol; read it as coefficients, one address per warp
 *   2 distinct       d different entries per warp and read: the constant cache serves them one by one
 *   3 ldg            the same reads from a global copy through __ldg (the L1 cache)
 *   4 global         the same reads as plain global loads
 *   5 big_table      a 48 KB constant table walked by every warp: past the 8 KB constant cache
 *   6 conv_constant  2D convolution: filter in __constant__, input tile and halo in shared memory
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

// ------------------------------------------------------------ constant data

// The tables and the filter. A __constant__ variable is a symbol in the
// GPU's constant bank, not a pointer you can pass to cudaMemcpy: in host
// code its name stands for a host-side placeholder. Copy into it with
// cudaMemcpyToSymbol(symbol, src, bytes). All three together take 52.3 KB
// of the 64 KB a program may have.
__constant__ float c_table[CONSTMEM_TABLE_ENTRIES];
__constant__ float c_big[CONSTMEM_BIG_ENTRIES];
__constant__ float c_filter[CONSTMEM_MAX_TAPS];

// Lookup kernels: 1D blocks of 256 threads.
enum { LOOKUP_THREADS = 256 };

// Convolution: blocks of 32 x 8 threads; each thread computes ROWS pixels
// of one column, so a block covers a tile of 32 x 64 pixels of out.
enum { TILE_W = 32, BLOCK_H = 8, ROWS = 8, TILE_H = BLOCK_H * ROWS, CONV_THREADS = TILE_W * BLOCK_H };

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
// known to the compiler, s[k] is an operand of the multiply-add, read
// through the constant cache like step 1's coefficients. So sum +=
// sg.s[k] * entry costs what sum += entry did: one instruction, no
// register.
struct walk_signs {
    float s[CONSTMEM_PASS_READS];
};

// ------------------------------------------------------------ lookup kernels

// Step 1: the table as coefficients (constmem.h): every lane of the warp
// reads the same entry, at an address the compiler knows. Such a read is
// no instruction of its own: the multiply-add takes the entry straight from
// the constant cache as an operand.
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
    // read a broadcast.
    // BEGIN SOLUTION
    float acc[CONSTMEM_PASS_READS] = {};
    for (int p0 = 0; p0 < passes; p0 += 32) {
#pragma unroll
        for (int q = 0; q < 32; ++q) {
            if (p0 + q < passes) {
                float x = (float)((t + p0 + q) % 3 - 1);
#pragma unroll
                for (int k = 0; k < CONSTMEM_PASS_READS; ++k)
                    acc[k] += c_table[32 * q + k] * x;
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
// __constant__ weight or a kernel parameter is an operand of the multiply
// itself, read through the constant cache: no load instruction at all.

// BLOCKS_PER_SM: how many blocks of the convolution each SM should hold
// (see conv_kernel's __launch_bounds__).

// Step 6: the filter in __constant__.
struct constant_filter {
    enum { BLOCKS_PER_SM = 8 };
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
    enum { BLOCKS_PER_SM = 4 };  // the weights, once loaded, stay in registers: room for them
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
    enum { BLOCKS_PER_SM = 8 };
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

// Steps 6-8: one block per 32 x 64 tile of out, pixels (y0 .. y0 + 63,
// x0 .. x0 + 31). Its input is that tile grown by R on every side, the
// halo: (64 + 2R) x (32 + 2R) pixels, loaded once into shared memory (zero
// where it lies outside the image). Thread (tx, ty) then computes column
// tx, rows ty * ROWS .. ty * ROWS + ROWS - 1 of the tile: it walks down
// the ROWS + 2R input rows those need, reads each row's 2R + 1 pixels from
// the tile once, and adds them into every output row they touch, so each
// shared-memory read serves up to 2R + 1 outputs.
// __launch_bounds__(CONV_THREADS, F::BLOCKS_PER_SM): with the filter in
// the constant bank, room for 8 blocks (2048 threads) on each SM, so at
// most 32 registers a thread. Left to itself the compiler takes more for
// the loads in flight, fits fewer blocks, and the SM keeps fewer bytes in
// flight: slower (on an H100, by a few percent of the copy's speed).
template <int R, typename F>
__global__ void __launch_bounds__(CONV_THREADS, F::BLOCKS_PER_SM)
conv_kernel(const float *__restrict__ in, float *__restrict__ out, int width, int height, F filter)
{
    enum { TAPS = 2 * R + 1, IN_W = TILE_W + 2 * R, IN_H = TILE_H + 2 * R };
    enum { LOADS = (IN_W * IN_H + CONV_THREADS - 1) / CONV_THREADS };  // tile elements per thread, rounded up
    __shared__ float tile[IN_H][IN_W];
    int x0 = blockIdx.x * TILE_W, y0 = blockIdx.y * TILE_H;
    int tx = threadIdx.x, ty = threadIdx.y;

    // TODO(step 6): load the tile with its halo, then compute.
    // 1. Every element tile[i][j] (i < IN_H, j < IN_W) holds in(y0 - R + i,
    //    x0 - R + j), or 0 where that pixel is outside the image (x or y
    //    below 0, or at width / height and beyond). The CONV_THREADS threads
    //    share the IN_H * IN_W elements: thread tid = ty * TILE_W + tx
    //    loads elements k = tid + n * CONV_THREADS, n = 0 .. LOADS - 1
    //    (i = k / IN_W, j = k % IN_W; none past the end, i >= IN_H). Load
    //    all of them into registers first, then store them to the tile.
    // 2. Wait until the whole tile is loaded.
    // 3. Output pixel (y, x) = (y0 + ty * ROWS + o, x0 + tx), o < ROWS, is
    //    the sum over a, b < TAPS of filter[a * TAPS + b] * tile[ty * ROWS +
    //    o + a][tx + b]. Write it where y < height and x < width.
    // BEGIN SOLUTION
    // In two rounds of LOADS each: first every load of the thread (the loop
    // unrolls, the values wait in registers), then every store to the tile.
    // All of a thread's loads are in flight together instead of one at a
    // time, each waiting for the store before it.
    int tid = ty * TILE_W + tx;
    float pre[LOADS];
#pragma unroll
    for (int n = 0; n < LOADS; ++n) {
        int k = tid + n * CONV_THREADS;
        int i = k / IN_W, j = k % IN_W;
        int gy = y0 - R + i, gx = x0 - R + j;
        pre[n] = 0.0f;
        if (i < IN_H && gx >= 0 && gx < width && gy >= 0 && gy < height)
            pre[n] = in[(size_t)gy * width + gx];
    }
#pragma unroll
    for (int n = 0; n < LOADS; ++n) {
        int k = tid + n * CONV_THREADS;
        if (k < IN_W * IN_H)
            tile[k / IN_W][k % IN_W] = pre[n];
    }
    __syncthreads();  // the halo comes from other warps' loads: all of it lands before anyone reads

    float acc[ROWS];
#pragma unroll
    for (int o = 0; o < ROWS; ++o)
        acc[o] = 0.0f;
    // Input row ty * ROWS + j of the tile is filter row a = j - o of output o.
#pragma unroll
    for (int j = 0; j < ROWS + 2 * R; ++j) {
        float v[TAPS];
#pragma unroll
        for (int b = 0; b < TAPS; ++b)
            v[b] = tile[ty * ROWS + j][tx + b];
#pragma unroll
        for (int o = 0; o < ROWS; ++o) {
            int a = j - o;
            if (a >= 0 && a < TAPS) {
#pragma unroll
                for (int b = 0; b < TAPS; ++b)
                    acc[o] += filter[a * TAPS + b] * v[b];
            }
        }
    }
    int x = x0 + tx;
#pragma unroll
    for (int o = 0; o < ROWS; ++o) {
        int y = y0 + ty * ROWS + o;
        if (x < width && y < height)
            out[(size_t)y * width + x] = acc[o];
    }
    //@ (void)in; (void)out; (void)width; (void)height; (void)filter; (void)tile;
    //@ (void)x0; (void)y0; (void)tx; (void)ty;
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

template <int R, typename F>
static cudaError_t conv_launch(const constmem_conv_job *j, const F &filter)
{
    dim3 grid((unsigned)((j->width + TILE_W - 1) / TILE_W), (unsigned)((j->height + TILE_H - 1) / TILE_H));
    conv_kernel<R, F><<<grid, dim3(TILE_W, BLOCK_H)>>>(j->in, j->out, j->width, j->height, filter);
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
