/* Lab 04: parallel reduction, the sum of n ints or floats.
 *
 * Steps (the table is REDUCTION_STEPS in reduction.h; `reduction_run --list`):
 *   1 interleaved      tid % (2*s) == 0 picks the adders: every warp diverges
 *   2 strided_index    index = 2*s*tid: no divergence, but bank conflicts
 *   3 sequential       tid < s adds data[tid + s]: conflict-free, half idle
 *   4 first_add        add two elements while loading: half the blocks
 *   5 last_warp        once s <= 32 only one warp works: __syncwarp is enough
 *   6 complete_unroll  block size as a template parameter: no loop at all
 *   7 many_per_thread  each thread sums many elements first (grid-stride)
 *   8 shuffle_vec4     16-byte loads, warp shuffles instead of shared memory
 *
 * Build, test and time (see README.md in this folder):
 *   cmake --build --preset default
 *   ./build/reduction_run --step 3            # check and time one step
 *   LAB=04 cmake --workflow --preset progress  # rebuild; which steps pass
 *
 * Every kernel writes one partial sum per block. The launchers run passes
 * until one value is left, and the last pass writes it to out[0].
 */
#include "reduction.h"

#include <cml/cml_check.h>
#include <cuda_runtime.h>

// ------------------------------------------------------------ helpers

// Dynamic shared memory as an array of T. One extern array of bytes serves
// every instantiation (two extern arrays of different types would clash).
template <typename T>
__device__ T *shared_array()
{
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    return reinterpret_cast<T *>(shared_bytes);
}

// Load one element, or the additive identity past the end of the input.
template <typename T>
__device__ T load_or_zero(const T *in, size_t i, size_t n)
{
    return i < n ? in[i] : T(0);
}

// ------------------------------------------------------------ kernels

// Step 1: interleaved addressing. At distance s, the threads whose tid is a
// multiple of 2*s add their neighbour at tid + s. The % makes the active
// threads sparse: in every warp a few threads work and the rest wait, and
// the modulo itself is slow (a division by a value unknown at compile time,
// with sign handling for int).
template <typename T>
__global__ void reduce_kernel1(const T *in, T *out, size_t n)
{
    T *data = shared_array<T>();
    int tid = threadIdx.x;  // int, as in the classic code: % on signed ints costs more
    size_t i = (size_t)blockIdx.x * blockDim.x + tid;
    data[tid] = load_or_zero(in, i, n);
    __syncthreads();

    // TODO(step 1): sum data[0..blockDim.x) into data[0] with the interleaved
    // tree: for s = 1, 2, 4, ... while s < blockDim.x, every thread whose tid
    // is a multiple of 2*s adds data[tid + s] to data[tid]. Every level must
    // be finished by all threads before the next one starts.
    if (tid == 0)
        out[blockIdx.x] = data[0];
}

// Step 2: strided index. The first blockDim/(2s) threads do the work, so
// whole warps are either busy or idle (no divergence), but thread tid
// touches data[2*s*tid]: at s = 16 two threads of a warp are 32 words apart
// and hit the same bank, and the conflict doubles with every level.
template <typename T>
__global__ void reduce_kernel2(const T *in, T *out, size_t n)
{
    T *data = shared_array<T>();
    unsigned tid = threadIdx.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + tid;
    data[tid] = load_or_zero(in, i, n);
    __syncthreads();

    // TODO(step 2): the same tree as step 1, but let thread tid work on
    // index = 2 * s * tid (when index < blockDim.x), adding data[index + s].
    if (tid == 0)
        out[blockIdx.x] = data[0];
}

// Step 3: sequential addressing. Start with the halves: thread tid adds
// data[tid + s] for s = blockDim/2, blockDim/4, ... A warp reads 32
// consecutive words: no bank conflicts and no divergence. But in the first
// level half the threads only loaded a value and then idle.
//
// The tree runs down to distance `stop` (0 for the whole tree; steps 4 and 5
// reuse it, and step 5 stops at 32).
template <typename T>
__device__ void tree_down_to(T *data, unsigned tid, unsigned stop)
{
    // TODO(step 3): for s = blockDim.x / 2 while s > stop, halving s, the
    // threads with tid < s add data[tid + s] to data[tid]. Each level must be
    // complete before the next one reads it. (blockDim.x is a power of two.)
    (void)data; (void)tid; (void)stop;
}

template <typename T>
__global__ void reduce_kernel3(const T *in, T *out, size_t n)
{
    T *data = shared_array<T>();
    unsigned tid = threadIdx.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + tid;
    data[tid] = i < n ? in[i] : T(0);  // the last block may be partial
    __syncthreads();

    tree_down_to(data, tid, 0);
    if (tid == 0)
        out[blockIdx.x] = data[0];
}

// Step 4: first add during the load. Each block covers 2 * blockDim.x
// elements and each thread adds two of them on the way into shared memory,
// so no thread idles in the first level and half as many blocks run.
template <typename T>
__global__ void reduce_kernel4(const T *in, T *out, size_t n)
{
    T *data = shared_array<T>();
    unsigned tid = threadIdx.x;
    size_t i = (size_t)blockIdx.x * (2 * blockDim.x) + tid;

    // TODO(step 4): load data[tid] as the sum of in[i] and in[i + blockDim.x],
    // each only when it lies inside the array (n need not be a multiple of
    // 2 * blockDim.x).
    data[tid] = load_or_zero(in, i, n);
    __syncthreads();

    tree_down_to(data, tid, 0);
    if (tid == 0)
        out[blockIdx.x] = data[0];
}

// The last six levels, done by the first warp alone (blockDim.x >= 64).
//
// The classic version relied on the 32 threads of a warp running in
// lockstep and marked the array volatile so that every += really went to
// shared memory. Since Volta, threads of a warp are scheduled independently:
// nothing guarantees that thread 0 reads data[16] after thread 16 has
// written it, so volatile alone is a data race. __syncwarp() orders the
// warp's shared-memory accesses: read, sync, write, sync.
template <typename T>
__device__ void warp_tail(T *data, unsigned tid)
{
    volatile T *v = data;
    T x = v[tid];
    // TODO(step 5): add v[tid + 32], v[tid + 16], ... v[tid + 1] into x and
    // store x back to v[tid] after each addition, with __syncwarp() between
    // every read and the write that follows it (and after the write).
    (void)x;
}

// Step 5: unroll the last warp. For s <= 32 only the first warp works, and
// a warp needs no block-wide barrier, just __syncwarp.
template <typename T>
__global__ void reduce_kernel5(const T *in, T *out, size_t n)
{
    T *data = shared_array<T>();
    unsigned tid = threadIdx.x;
    size_t i = (size_t)blockIdx.x * (2 * blockDim.x) + tid;
    data[tid] = load_or_zero(in, i, n) + load_or_zero(in, i + blockDim.x, n);
    __syncthreads();

    tree_down_to(data, tid, 32);
    if (tid < 32)
        warp_tail(data, tid);
    if (tid == 0)
        out[blockIdx.x] = data[0];
}

// Step 6: complete unroll. With the block size known at compile time every
// `if (BLOCK >= ...)` is decided by the compiler and the loop disappears:
// no loop counter, no branch on s, no tid < s test for the levels that
// cannot occur.
template <unsigned BLOCK, typename T>
__device__ void tree_unrolled(T *data, unsigned tid)
{
    // TODO(step 6): the levels s = 512, 256, 128, 64 written out one by one,
    // each guarded by `if (BLOCK >= 2 * s)` (a compile-time test) and
    // followed by __syncthreads(); then the warp tail of step 5.
    (void)data; (void)tid;
}

template <unsigned BLOCK, typename T>
__global__ void __launch_bounds__(BLOCK) reduce_kernel6(const T *in, T *out, size_t n)
{
    __shared__ T data[BLOCK];
    unsigned tid = threadIdx.x;
    size_t i = (size_t)blockIdx.x * (2 * BLOCK) + tid;
    data[tid] = load_or_zero(in, i, n) + load_or_zero(in, i + BLOCK, n);
    __syncthreads();
    tree_unrolled<BLOCK>(data, tid);
    if (tid == 0)
        out[blockIdx.x] = data[0];
}

// Step 7: several elements per thread. A tree over N elements with N threads
// costs N * log N work; letting P = N / log N threads first add log N
// elements each in registers makes the total O(N) and hides memory latency
// behind many independent loads. The grid is sized to fill the GPU once and
// each thread strides through the array.
template <unsigned BLOCK, typename T>
__global__ void __launch_bounds__(BLOCK) reduce_kernel7(const T *in, T *out, size_t n)
{
    __shared__ T data[BLOCK];
    unsigned tid = threadIdx.x;
    T sum = T(0);

    // TODO(step 7): grid-stride loop: start at i = blockIdx.x * 2 * BLOCK + tid,
    // add in[i] and in[i + BLOCK] (each only when < n) into sum, then step i
    // by 2 * BLOCK * gridDim.x while i < n.
    (void)in; (void)n;
    data[tid] = sum;
    __syncthreads();
    tree_unrolled<BLOCK>(data, tid);
    if (tid == 0)
        out[blockIdx.x] = data[0];
}

// Step 8: 16-byte loads and warp shuffles. One int4/float4 load moves four
// elements with one instruction; four of them in flight per thread keep
// enough bytes moving to saturate DRAM. Within a warp, __shfl_down_sync adds
// across lanes through registers: no shared memory and no barrier until the
// warps' 8 partial sums meet.
template <typename T> struct vec4_of;
template <> struct vec4_of<int> { typedef int4 type; };
template <> struct vec4_of<float> { typedef float4 type; };

template <typename T>
__device__ T warp_sum(T x)
{
    // TODO(step 8): butterfly sum across the 32 lanes with
    // __shfl_down_sync(0xffffffff, x, offset) for offset = 16, 8, 4, 2, 1;
    // lane 0 ends with the warp's total.
    return x;
}

template <typename V, typename T>
__device__ T lanes_sum(V v)
{
    return (v.x + v.y) + (v.z + v.w);
}

template <unsigned BLOCK, typename T>
__global__ void __launch_bounds__(BLOCK) reduce_kernel8(const T *__restrict__ in, T *__restrict__ out, size_t n)
{
    typedef typename vec4_of<T>::type V;
    const V *in4 = reinterpret_cast<const V *>(in);  // in is 256-byte aligned
    size_t n4 = n / 4;
    size_t stride = (size_t)BLOCK * gridDim.x;
    size_t i = (size_t)blockIdx.x * BLOCK + threadIdx.x;
    T sum = T(0);

    // TODO(step 8): add every element of in4[0..n4) seen by this thread
    // (grid-stride: i, i + stride, ...) into sum. For speed keep four
    // independent 16-byte loads in flight: a loop that loads in4[i],
    // in4[i + stride], in4[i + 2*stride], in4[i + 3*stride] before adding,
    // then a plain loop for what is left.
    (void)in4; (void)stride; (void)n4; (void)i;
    // The last n % 4 elements do not fill a vector: block 0 adds them.
    if (blockIdx.x == 0 && threadIdx.x < n % 4)
        sum += in[4 * n4 + threadIdx.x];

    __shared__ T warp_sums[BLOCK / 32];
    unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    sum = warp_sum(sum);
    if (lane == 0)
        warp_sums[warp] = sum;
    __syncthreads();  // all warps' sums are in shared memory
    if (warp == 0) {
        sum = lane < BLOCK / 32 ? warp_sums[lane] : T(0);
        sum = warp_sum(sum);
        if (lane == 0)
            out[blockIdx.x] = sum;
    }
}

// ------------------------------------------------------------ launchers

// Runs a one-partial-per-block kernel pass after pass until one value is
// left; the last pass writes it to out. Each block covers `per_block`
// elements. Partials alternate between two regions of scratch: the first
// holds ceil(n / per_block) values, the second starts after it.
template <typename T>
static cudaError_t run_passes(void (*kernel)(const T *, T *, size_t), unsigned block,
                              size_t per_block, size_t smem, const T *in, size_t n, T *out,
                              T *scratch)
{
    T *region[2] = {scratch, scratch + (n + per_block - 1) / per_block};
    int next = 0;
    for (;;) {
        size_t blocks = (n + per_block - 1) / per_block;
        T *dst = blocks == 1 ? out : region[next];
        kernel<<<(unsigned)blocks, block, smem>>>(in, dst, n);
        CML_TRY_LAUNCH();
        if (blocks == 1)
            return cudaSuccess;
        in = dst;
        n = blocks;
        next ^= 1;
    }
}

// 512 threads: 16 warps per block, 4 blocks per SM at full occupancy. (On an
// H100 this ran step 8 about 1% faster than 256; try 128 to 1024.)
enum { BLOCK = 512 };

template <typename T>
static cudaError_t reduce_step1(const T *in, size_t n, T *out, T *scratch)
{
    return run_passes<T>(reduce_kernel1<T>, BLOCK, BLOCK, BLOCK * sizeof(T), in, n, out, scratch);
}

template <typename T>
static cudaError_t reduce_step2(const T *in, size_t n, T *out, T *scratch)
{
    return run_passes<T>(reduce_kernel2<T>, BLOCK, BLOCK, BLOCK * sizeof(T), in, n, out, scratch);
}

template <typename T>
static cudaError_t reduce_step3(const T *in, size_t n, T *out, T *scratch)
{
    return run_passes<T>(reduce_kernel3<T>, BLOCK, BLOCK, BLOCK * sizeof(T), in, n, out, scratch);
}

template <typename T>
static cudaError_t reduce_step4(const T *in, size_t n, T *out, T *scratch)
{
    // Each block covers 2 * BLOCK elements.
    return run_passes<T>(reduce_kernel4<T>, BLOCK, 2 * BLOCK, BLOCK * sizeof(T), in, n, out, scratch);
}

template <typename T>
static cudaError_t reduce_step5(const T *in, size_t n, T *out, T *scratch)
{
    return run_passes<T>(reduce_kernel5<T>, BLOCK, 2 * BLOCK, BLOCK * sizeof(T), in, n, out, scratch);
}

// The block size is a template parameter, so a size chosen at run time is
// mapped onto the instantiations with a switch.
template <typename T>
static cudaError_t reduce_step6(const T *in, size_t n, T *out, T *scratch)
{
    const unsigned block = BLOCK;  // any of the sizes below: the switch has them all
    switch (block) {
    case 1024: return run_passes<T>(reduce_kernel6<1024, T>, 1024, 2048, 0, in, n, out, scratch);
    case 512: return run_passes<T>(reduce_kernel6<512, T>, 512, 1024, 0, in, n, out, scratch);
    case 256: return run_passes<T>(reduce_kernel6<256, T>, 256, 512, 0, in, n, out, scratch);
    case 128: return run_passes<T>(reduce_kernel6<128, T>, 128, 256, 0, in, n, out, scratch);
    case 64: return run_passes<T>(reduce_kernel6<64, T>, 64, 128, 0, in, n, out, scratch);
    default: return cudaErrorInvalidConfiguration;  // the warp tail needs >= 64
    }
}

// Blocks that fill every multiprocessor once (asked of the device the first
// time; the answer cannot change while the program runs on one GPU).
template <typename Kernel>
static cudaError_t resident_blocks(Kernel kernel, unsigned block, int *blocks)
{
    static int sms = 0;
    if (sms == 0)
        CML_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    int per_sm = 0;
    CML_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, (int)block, 0));
    *blocks = sms * (per_sm > 0 ? per_sm : 1);
    return cudaSuccess;
}

// Two passes: a fixed grid of `blocks` blocks writes `blocks` partials, then
// one block sums those (the kernels work for any n and any grid).
template <typename T>
static cudaError_t two_passes(void (*kernel)(const T *, T *, size_t), unsigned block, size_t per_block,
                              int blocks, const T *in, size_t n, T *out, T *scratch)
{
    size_t needed = (n + per_block - 1) / per_block;
    if ((size_t)blocks > needed)
        blocks = (int)needed;  // no block without work
    if (blocks <= 1) {
        kernel<<<1, block>>>(in, out, n);
        CML_TRY_LAUNCH();
        return cudaSuccess;
    }
    kernel<<<blocks, block>>>(in, scratch, n);
    CML_TRY_LAUNCH();
    kernel<<<1, block>>>(scratch, out, (size_t)blocks);
    CML_TRY_LAUNCH();
    return cudaSuccess;
}

template <typename T>
static cudaError_t reduce_step7(const T *in, size_t n, T *out, T *scratch)
{
    static int blocks = 0;
    if (blocks == 0)
        CML_TRY(resident_blocks(reduce_kernel7<BLOCK, T>, BLOCK, &blocks));
    return two_passes<T>(reduce_kernel7<BLOCK, T>, BLOCK, 2 * BLOCK, blocks, in, n, out, scratch);
}

template <typename T>
static cudaError_t reduce_step8(const T *in, size_t n, T *out, T *scratch)
{
    static int blocks = 0;
    if (blocks == 0)
        CML_TRY(resident_blocks(reduce_kernel8<BLOCK, T>, BLOCK, &blocks));
    // scratch is 256-byte aligned, so the second pass can load vectors too.
    return two_passes<T>(reduce_kernel8<BLOCK, T>, BLOCK, 4 * BLOCK, blocks, in, n, out, scratch);
}

// ------------------------------------------------------------ dispatcher

template <typename T>
static cudaError_t reduce_sum(int step, const T *in, size_t n, T *out, T *scratch)
{
    switch (step) {
    case 1: return reduce_step1(in, n, out, scratch);
    case 2: return reduce_step2(in, n, out, scratch);
    case 3: return reduce_step3(in, n, out, scratch);
    case 4: return reduce_step4(in, n, out, scratch);
    case 5: return reduce_step5(in, n, out, scratch);
    case 6: return reduce_step6(in, n, out, scratch);
    case 7: return reduce_step7(in, n, out, scratch);
    case 8: return reduce_step8(in, n, out, scratch);
    default: return cudaErrorInvalidValue;
    }
}

extern "C" cudaError_t reduce_sum_int(int step, const int *in, size_t n, int *out, int *scratch)
{
    return reduce_sum<int>(step, in, n, out, scratch);
}

extern "C" cudaError_t reduce_sum_float(int step, const float *in, size_t n, float *out, float *scratch)
{
    return reduce_sum<float>(step, in, n, out, scratch);
}
