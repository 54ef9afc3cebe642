/* Lab 09: sorting 32-bit keys in shared memory, and merging sorted lists.
 *
 * Steps (the table is in labs/09_shared_sort/lab.json; `shared_sort_run --list`):
 *   1 thread_lists  each thread sorts its own list, a column of the shared tile (a column per bank)
 *   2 merge_by_min  the block merges its 128 lists: a reduction finds the smallest head each round
 *   3 merge_path    pairs of sorted runs merged by many threads, each split found by binary search
 *   4 full_sort     any n: sorted tiles (step 2), then merge-path passes until one run is left
 *
 * Build, test and time (see README.md in this folder):
 *   cmake --build --preset default
 *   ./build/shared_sort_run --step 2           # check and time one step
 *   LAB=09 cmake --workflow --preset progress  # rebuild; which steps pass
 *
 * A tile is TILE = THREADS x PER_THREAD keys, one block's. In shared memory
 * thread t owns a column: element i of its list is word i * THREADS + t.
 * Word w is in bank w % 32, so column t stays in bank t % 32 whatever i is:
 * when the 32 threads of a warp each touch their own list, at whatever
 * position, they touch 32 different banks. A tile that ends past n is
 * padded with UINT_MAX, which sorts last and is never written out.
 */
#include "shared_sort.h"

#include <cuda_runtime.h>

// 128 threads of 8 keys (shared_sort.h): a tile of 1024 keys, 4 KiB of
// shared memory.
enum {
    THREADS = SHARED_SORT_THREADS,
    PER_THREAD = SHARED_SORT_PER_THREAD,
    TILE = THREADS * PER_THREAD,
    WARPS = THREADS / 32
};

// The pad of a partial tile: sorts after every key (ties with a real
// UINT_MAX key do not matter: the two are the same value).
#define PAD 0xffffffffu

// Step 3's share of the output per thread.
enum { MERGE_THREADS = 256, MERGE_ITEMS = 8 };

// ------------------------------------------------------------ helpers

// Where element i of thread t's list lives in the tile: a column per
// thread. Steps 1, 2 and 4 all index the tile through this one function.
struct column_layout {
    __device__ static int at(int i, int t) { return i * THREADS + t; }
};

// Loads this block's tile: word j = i * THREADS + t of the tile is
// in[base + j], read by thread t (consecutive threads read consecutive
// words: coalesced), and stored at element i of list t. Past n: PAD.
__device__ void load_tile(unsigned *tile, const unsigned *in, size_t n)
{
    size_t base = (size_t)blockIdx.x * TILE;
    int t = threadIdx.x;
    for (int i = 0; i < PER_THREAD; ++i) {
        size_t g = base + (size_t)i * THREADS + t;
        tile[column_layout::at(i, t)] = g < n ? in[g] : PAD;
    }
}

// Step 1's work: thread t sorts its own list in place, by insertion: its
// PER_THREAD keys, all in bank t % 32.
__device__ void sort_own_list(unsigned *tile)
{
    int t = threadIdx.x;
    // TODO(step 1): sort the PER_THREAD keys of list t, tile[at(0, t)],
    // tile[at(1, t)], ... ascending (insertion sort: take each key in turn
    // and move the larger keys before it one place up). Touch only list t,
    // and only through column_layout::at.
    // BEGIN SOLUTION
    for (int i = 1; i < PER_THREAD; ++i) {
        unsigned key = tile[column_layout::at(i, t)];
        int j = i - 1;
        while (j >= 0 && tile[column_layout::at(j, t)] > key) {
            tile[column_layout::at(j + 1, t)] = tile[column_layout::at(j, t)];
            --j;
        }
        tile[column_layout::at(j + 1, t)] = key;
    }
    //@ (void)t; (void)tile;
    // END SOLUTION
}

// The smaller of two (key, list) heads packed as key << 32 | list: one
// 64-bit compare orders by key, then by list, so two equal keys are two
// different heads and both are merged.
__device__ unsigned long long min_head(unsigned long long a, unsigned long long b)
{
    return a < b ? a : b;
}

// ------------------------------------------------------------ kernels

// Step 1: every block sorts the THREADS lists of its tile, each in its
// own column, and writes the tile back in the same layout: out[base + i *
// THREADS + t] is element i of list t, sorted.
__global__ void sort_kernel1(const unsigned *in, unsigned *out, size_t n)
{
    __shared__ unsigned tile[TILE];
    load_tile(tile, in, n);
    // Thread t loaded exactly the words of list t: nothing to wait for.
    sort_own_list(tile);
    size_t base = (size_t)blockIdx.x * TILE;
    int t = threadIdx.x;
    // TODO(step 1): write list t back: for each i with base + i * THREADS
    // + t < n, out[that] = tile[column_layout::at(i, t)]. (The PADs sort
    // last, so they are exactly the places past n.)
    // BEGIN SOLUTION
    for (int i = 0; i < PER_THREAD; ++i) {
        size_t g = base + (size_t)i * THREADS + t;
        if (g < n)
            out[g] = tile[column_layout::at(i, t)];
    }
    //@ (void)base; (void)t; (void)out;
    // END SOLUTION
}

// Step 2: sort the lists as in step 1, then merge them: TILE rounds, each
// taking the smallest head of all THREADS lists. Each thread keeps its own
// head; a warp finds its smallest with shuffles, lane 0 posts it in
// warp_min[], and every thread reads the WARPS posts after a barrier. The
// thread whose head won writes it to merged[round] and moves on.
__global__ void sort_kernel2(const unsigned *in, unsigned *out, size_t n)
{
    __shared__ unsigned tile[TILE];
    __shared__ unsigned merged[TILE];
    __shared__ unsigned long long warp_min[WARPS];
    load_tile(tile, in, n);
    sort_own_list(tile);
    int t = threadIdx.x, lane = t % 32, warp = t / 32;
    // TODO(step 2): merge the THREADS sorted lists into merged[0..TILE).
    // Keep how many keys of your list are merged, pos. Each of the TILE
    // rounds: your head is tile[at(pos, t)] << 32 | t (or ~0ull once the
    // list is used up); the block's smallest head (a reduction: shuffles in
    // the warp, one word a warp in warp_min[], a barrier, every thread takes
    // the least of them); the thread that owns it writes the key to
    // merged[round] and advances.
    // Equal keys are two different heads (the list index breaks the tie):
    // advance only the list that won. Barrier again before the next round
    // writes warp_min[] (someone may still be reading it). Then, after a
    // barrier, write merged[j] to out[base + j] for base + j < n,
    // consecutive threads on consecutive j.
    // BEGIN SOLUTION
    // (The head is read afresh each round: carried in a register and
    // reloaded after ++pos, CUDA 13.0's ptxas read one element too far.)
    int pos = 0;  // how many keys of list t are merged
    for (int round = 0; round < TILE; ++round) {
        unsigned long long head = pos < PER_THREAD
                                      ? (unsigned long long)tile[column_layout::at(pos, t)] << 32 | (unsigned)t
                                      : ~0ull;
        unsigned long long m = head;
        for (int d = 16; d > 0; d >>= 1)
            m = min_head(m, __shfl_xor_sync(0xffffffffu, m, d));
        if (lane == 0)
            warp_min[warp] = m;
        __syncthreads();  // every warp posted its smallest head before anyone reads the posts
        unsigned long long best = warp_min[0];
        for (int w = 1; w < WARPS; ++w)
            best = min_head(best, warp_min[w]);
        if (best == head) {  // key and list: only the winning list advances
            merged[round] = (unsigned)(head >> 32);
            ++pos;
        }
        __syncthreads();  // every thread read warp_min[] before the next round overwrites it
    }
    size_t base = (size_t)blockIdx.x * TILE;
    for (int j = t; j < TILE; j += THREADS)
        if (base + j < n)
            out[base + j] = merged[j];
    //@ (void)lane; (void)warp; (void)merged; (void)warp_min; (void)out;
    // END SOLUTION
}

// Merge path (Green, McColl and Bader): the first d outputs of merging
// sorted a[0..na) and b[0..nb) are a[0..i) and b[0..d-i) for the one i
// where a[i-1] <= b[d-i] and b[d-i-1] < a[i] (ties go to a: a key of a
// comes before an equal key of b). Binary search on the diagonal.
__device__ size_t merge_path_split(const unsigned *a, size_t na, const unsigned *b, size_t nb, size_t d)
{
    // TODO(step 3): binary search for i in [max(0, d - nb), min(d, na)]:
    // while lo < hi, mid = (lo + hi) / 2; a[mid] belongs to the first d
    // outputs when a[mid] <= b[d - 1 - mid] (then lo = mid + 1, else hi =
    // mid). Ties must go to a, as in the sequential merge below.
    // BEGIN SOLUTION
    size_t lo = d > nb ? d - nb : 0, hi = d < na ? d : na;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] <= b[d - 1 - mid])
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
    //@ (void)a; (void)na; (void)b; (void)nb; (void)d;
    //@ return 0;
    // END SOLUTION
}

// Step 3: in holds sorted runs of `width` keys (the last may be shorter);
// out gets each pair of runs merged into one run of 2 * width. Thread g
// writes outputs [g * MERGE_ITEMS, (g + 1) * MERGE_ITEMS): for each pair
// they fall in, it finds where its first output's diagonal cuts the two
// runs, then merges sequentially from there.
__global__ void merge_kernel3(const unsigned *in, unsigned *out, size_t n, size_t width)
{
    size_t first = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * MERGE_ITEMS;
    size_t last = first + MERGE_ITEMS < n ? first + MERGE_ITEMS : n;
    // TODO(step 3): for outputs k in [first, last): the pair starts at p =
    // k - k % (2 * width); a = in + p (na = min(width, n - p)), b = a + na
    // (nb = min(width, n - p - na)). Split at d = k - p with
    // merge_path_split, then merge: take a[i] when j == nb or (i < na and
    // a[i] <= b[j]), else b[j], until last or the pair's end; a pair ending
    // before last means the next pair starts at its end.
    // BEGIN SOLUTION
    size_t k = first;
    while (k < last) {
        size_t p = k - k % (2 * width);
        const unsigned *a = in + p;
        size_t na = n - p < width ? n - p : width;
        const unsigned *b = a + na;
        size_t nb = n - p - na < width ? n - p - na : width;
        size_t end = p + na + nb < last ? p + na + nb : last;
        size_t i = merge_path_split(a, na, b, nb, k - p), j = k - p - i;
        for (; k < end; ++k)
            out[k] = j == nb || (i < na && a[i] <= b[j]) ? a[i++] : b[j++];
    }
    //@ (void)in; (void)out; (void)last; (void)width;
    // END SOLUTION
}

// ------------------------------------------------------------ launchers

static unsigned tiles_of(size_t n)
{
    return (unsigned)((n + TILE - 1) / TILE);
}

static cudaError_t step1(const unsigned *in, unsigned *out, size_t n)
{
    sort_kernel1<<<tiles_of(n), THREADS>>>(in, out, n);
    return cudaGetLastError();
}

static cudaError_t step2(const unsigned *in, unsigned *out, size_t n)
{
    sort_kernel2<<<tiles_of(n), THREADS>>>(in, out, n);
    return cudaGetLastError();
}

static cudaError_t step3(const unsigned *in, unsigned *out, size_t n, size_t width)
{
    if (width == 0)
        return cudaErrorInvalidValue;
    size_t threads = (n + MERGE_ITEMS - 1) / MERGE_ITEMS;
    merge_kernel3<<<(unsigned)((threads + MERGE_THREADS - 1) / MERGE_THREADS), MERGE_THREADS>>>(in, out, n, width);
    return cudaGetLastError();
}

// Step 4: sorted tiles, then passes of step 3 with widths TILE, 2 TILE, ...
// until one run holds all n. The passes go back and forth between out and
// scratch; the tiles start in whichever makes the last pass end in out.
static cudaError_t step4(const unsigned *in, unsigned *out, unsigned *scratch, size_t n)
{
    // TODO(step 4): count the passes (width TILE, doubling while width <
    // n); sort the tiles (step 2's kernel, a block for every tile, the last
    // one partial) into out when the count is even, else into scratch; then
    // each pass merges from one buffer into the other. Check each launch.
    // BEGIN SOLUTION
    int passes = 0;
    for (size_t w = TILE; w < n; w *= 2)
        ++passes;
    unsigned *src = passes % 2 == 0 ? out : scratch, *dst = passes % 2 == 0 ? scratch : out;
    unsigned tiles = (unsigned)((n + TILE - 1) / TILE);
    sort_kernel2<<<tiles, THREADS>>>(in, src, n);
    cudaError_t err = cudaGetLastError();
    for (size_t w = TILE; w < n && err == cudaSuccess; w *= 2) {
        err = step3(src, dst, n, w);
        unsigned *swap = src;
        src = dst;
        dst = swap;
    }
    return err;
    //@ (void)in; (void)out; (void)scratch; (void)n;
    //@ return cudaSuccess;
    // END SOLUTION
}

// ------------------------------------------------------------ dispatcher

extern "C" cudaError_t shared_sort_step(int step, const unsigned *in, unsigned *out, unsigned *scratch, size_t n,
                                        size_t width)
{
    switch (step) {
    case 1: return step1(in, out, n);
    case 2: return step2(in, out, n);
    case 3: return step3(in, out, n, width);
    case 4: return step4(in, out, scratch, n);
    default: return cudaErrorInvalidValue;
    }
}
