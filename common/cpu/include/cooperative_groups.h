/* cooperative_groups.h on the CPU path: the groups CUDA C students use,
 * built on the CPU runtime's barriers and warp operations (cuda_runtime.h),
 * so a block's sync is __syncthreads, a tile's sync and shuffles are warp
 * operations under the tile's lane mask, and the race check and the bank
 * counts see every access as they do without groups. The toolkit's own
 * header must not be reached from the CPU path (it needs nvcc's libcu++):
 * this directory comes first on the include path.
 *
 * What the CPU path cannot run is a compile error that says so (a static
 * assertion naming the CPU path): grid-wide sync (no cooperative launch:
 * blocks run one after another), coalesced_threads() and the partitions
 * by value (which lanes are converged is not known when every CUDA thread
 * is a fiber), and tiles wider than a warp. */
#ifndef CML_CPU_COOPERATIVE_GROUPS_H
#define CML_CPU_COOPERATIVE_GROUPS_H

#include <cuda_runtime.h>

#ifdef __cplusplus

#include <type_traits>

namespace cooperative_groups {

// Members: always inlined, like the CUDA surface's functions (the reports
// name the kernel's line, not this header's).
#define CML_CPU_MI inline __attribute__((always_inline))

namespace cml_cpu_detail {
template <typename T>
struct cannot_run : std::false_type {};
CML_CPU_AI unsigned block_rank(void) { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
CML_CPU_AI unsigned block_threads(void) { return blockDim.x * blockDim.y * blockDim.z; }
} // namespace cml_cpu_detail

// ------------------------------------------------------------ groups

// Any group, as a function taking `const thread_group &` sees it: its size,
// the caller's rank in it, and sync. A tile's sync is a warp operation on
// its lanes; the whole block's is __syncthreads.
class thread_group {
  public:
    CML_CPU_MI void sync() const
    {
        if (whole_block_)
            __syncthreads();
        else
            __syncwarp(mask_);
    }
    CML_CPU_MI unsigned long long size() const { return size_; }
    CML_CPU_MI unsigned long long num_threads() const { return size_; }
    CML_CPU_MI unsigned long long thread_rank() const { return rank_; }

  protected:
    thread_group(unsigned size, unsigned rank, unsigned mask, bool whole_block)
        : size_(size), rank_(rank), mask_(mask), whole_block_(whole_block)
    {
    }
    unsigned size_, rank_, mask_;
    bool whole_block_;
    friend thread_group tiled_partition(const thread_group &parent, unsigned tile_size);
};

class thread_block : public thread_group {
  public:
    CML_CPU_MI void sync() const { __syncthreads(); }
    CML_CPU_MI unsigned size() const { return cml_cpu_detail::block_threads(); }
    CML_CPU_MI unsigned num_threads() const { return cml_cpu_detail::block_threads(); }
    CML_CPU_MI unsigned thread_rank() const { return cml_cpu_detail::block_rank(); }
    CML_CPU_MI dim3 group_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    CML_CPU_MI dim3 thread_index() const { return dim3(threadIdx.x, threadIdx.y, threadIdx.z); }
    CML_CPU_MI dim3 dim_threads() const { return dim3(blockDim.x, blockDim.y, blockDim.z); }
    CML_CPU_MI dim3 group_dim() const { return dim_threads(); }

  private:
    thread_block() : thread_group(cml_cpu_detail::block_threads(), cml_cpu_detail::block_rank(), 0, true) {}
    friend thread_block this_thread_block();
};

CML_CPU_MI thread_block this_thread_block() { return thread_block(); }

// A tile of N consecutive ranks of the block (N a power of two, at most a
// warp): the lanes of one warp, so its operations are warp operations
// under the tile's mask (width N), as nvcc's are.
template <unsigned N, typename Parent = void>
class thread_block_tile : public thread_group {
    static_assert(N <= 32 || cml_cpu_detail::cannot_run<Parent>::value,
                  "cml-cpu: the CPU path cannot run tiles wider than a warp (thread_block_tile<64> and up): grade this "
                  "file on a GPU");
    static_assert(N >= 1 && (N & (N - 1)) == 0, "a tile's size is a power of two");

  public:
    // The tile of the calling thread, and where it lies in its parent:
    // meta_rank-th of meta_size tiles.
    CML_CPU_MI thread_block_tile(unsigned meta_rank, unsigned meta_size)
        : thread_group(N, cml_cpu_detail::block_rank() % N, lanes(), false), meta_rank_(meta_rank),
          meta_size_(meta_size)
    {
    }
    // thread_block_tile<N, thread_block> converts to thread_block_tile<N>.
    template <typename P>
    CML_CPU_MI thread_block_tile(const thread_block_tile<N, P> &t)
        : thread_block_tile(t.meta_group_rank(), t.meta_group_size())
    {
    }

    CML_CPU_MI void sync() const { __syncwarp(mask_); }
    CML_CPU_MI static constexpr unsigned size() { return N; }
    CML_CPU_MI static constexpr unsigned num_threads() { return N; }
    CML_CPU_MI unsigned thread_rank() const { return rank_; }
    CML_CPU_MI unsigned meta_group_rank() const { return meta_rank_; }
    CML_CPU_MI unsigned meta_group_size() const { return meta_size_; }

    template <typename T>
    CML_CPU_MI T shfl(T v, int src) const { return __shfl_sync(mask_, v, src, (int)N); }
    template <typename T>
    CML_CPU_MI T shfl_down(T v, unsigned delta) const { return __shfl_down_sync(mask_, v, delta, (int)N); }
    template <typename T>
    CML_CPU_MI T shfl_up(T v, unsigned delta) const { return __shfl_up_sync(mask_, v, delta, (int)N); }
    template <typename T>
    CML_CPU_MI T shfl_xor(T v, unsigned lane_mask) const { return __shfl_xor_sync(mask_, v, (int)lane_mask, (int)N); }
    // Votes: bit r of a ballot is the tile's rank r.
    CML_CPU_MI unsigned ballot(int p) const { return __ballot_sync(mask_, p) >> base(); }
    CML_CPU_MI int any(int p) const { return __any_sync(mask_, p); }
    CML_CPU_MI int all(int p) const { return __all_sync(mask_, p); }
    template <typename T>
    CML_CPU_MI unsigned match_any(T v) const { return __match_any_sync(mask_, v) >> base(); }
    template <typename T>
    CML_CPU_MI unsigned match_all(T v, int &pred) const { return __match_all_sync(mask_, v, &pred) >> base(); }

  private:
    unsigned meta_rank_, meta_size_;
    CML_CPU_MI static unsigned base() { return cml_cpu_lane() & ~(N - 1); }
    CML_CPU_MI static unsigned lanes()
    {
        return N == 32 ? 0xffffffffu : ((1u << (N % 32)) - 1u) << base();
    }
};

// tiled_partition<N>(block) and tiled_partition<N>(tile): the caller's
// tile; its meta group is the parent's tiles.
template <unsigned N>
CML_CPU_AI thread_block_tile<N, thread_block> tiled_partition(const thread_block &)
{
    unsigned threads = cml_cpu_detail::block_threads();
    return thread_block_tile<N, thread_block>(cml_cpu_detail::block_rank() / N, (threads + N - 1) / N);
}
template <unsigned N, unsigned M, typename P>
CML_CPU_AI thread_block_tile<N, thread_block_tile<M, P>> tiled_partition(const thread_block_tile<M, P> &)
{
    static_assert(N <= M, "a tile is partitioned into smaller tiles");
    return thread_block_tile<N, thread_block_tile<M, P>>(cml_cpu_detail::block_rank() % M / N, M / N);
}

// tiled_partition(parent, n): a tile whose size is known at run time; only
// sync, size and thread_rank (as in CUDA). A tile wider than a warp works
// only when it is the whole block.
CML_CPU_MI thread_group tiled_partition(const thread_group &parent, unsigned tile_size)
{
    unsigned rank = cml_cpu_detail::block_rank(), threads = cml_cpu_detail::block_threads();
    (void)parent;
    if (tile_size >= threads)
        return thread_group(threads, rank, 0, true);
    if (tile_size > 32 || (tile_size & (tile_size - 1)) != 0)
        cml_cpu_trap("tiled_partition(group, n): the CPU path runs tiles of at most a warp (a power of two) or the "
                     "whole block; grade this file on a GPU");
    unsigned lane = rank % 32, base = lane & ~(tile_size - 1);
    unsigned mask = tile_size == 32 ? 0xffffffffu : ((1u << tile_size) - 1u) << base;
    return thread_group(tile_size, rank % tile_size, mask, false);
}

// The grid: its shape and ranks. sync() needs a cooperative launch, where
// every block runs at once; the CPU path runs blocks one after another.
class grid_group {
  public:
    template <typename T = void>
    void sync() const
    {
        static_assert(cml_cpu_detail::cannot_run<T>::value,
                      "cml-cpu: the CPU path cannot run grid.sync() (a cooperative launch): grade this file on a GPU");
    }
    CML_CPU_MI unsigned long long size() const
    {
        return (unsigned long long)gridDim.x * gridDim.y * gridDim.z * cml_cpu_detail::block_threads();
    }
    CML_CPU_MI unsigned long long num_threads() const { return size(); }
    CML_CPU_MI unsigned long long thread_rank() const
    {
        return block_rank() * cml_cpu_detail::block_threads() + cml_cpu_detail::block_rank();
    }
    CML_CPU_MI unsigned long long block_rank() const
    {
        return blockIdx.x + (unsigned long long)gridDim.x * (blockIdx.y + (unsigned long long)gridDim.y * blockIdx.z);
    }
    CML_CPU_MI unsigned long long num_blocks() const { return (unsigned long long)gridDim.x * gridDim.y * gridDim.z; }
    CML_CPU_MI dim3 group_dim() const { return dim3(gridDim.x, gridDim.y, gridDim.z); }
    CML_CPU_MI dim3 dim_blocks() const { return group_dim(); }
    CML_CPU_MI dim3 block_index() const { return dim3(blockIdx.x, blockIdx.y, blockIdx.z); }
    CML_CPU_MI bool is_valid() const { return true; }
};
CML_CPU_AI grid_group this_grid() { return grid_group(); }

// Which lanes reached a branch together is not known on the CPU path.
template <typename T = void>
void coalesced_threads()
{
    static_assert(cml_cpu_detail::cannot_run<T>::value,
                  "cml-cpu: the CPU path cannot run coalesced_threads() (which lanes are converged is not known there): "
                  "grade this file on a GPU");
}
template <typename G, typename... A>
void binary_partition(const G &, A...)
{
    static_assert(cml_cpu_detail::cannot_run<G>::value,
                  "cml-cpu: the CPU path cannot run binary_partition(): grade this file on a GPU");
}
template <typename G, typename... A>
void labeled_partition(const G &, A...)
{
    static_assert(cml_cpu_detail::cannot_run<G>::value,
                  "cml-cpu: the CPU path cannot run labeled_partition(): grade this file on a GPU");
}

// ------------------------------------------------------------ free functions

template <typename G>
CML_CPU_AI void sync(const G &g) { g.sync(); }
template <typename G>
CML_CPU_AI auto thread_rank(const G &g) -> decltype(g.thread_rank()) { return g.thread_rank(); }
template <typename G>
CML_CPU_AI auto group_size(const G &g) -> decltype(g.size()) { return g.size(); }

} // namespace cooperative_groups

#endif /* __cplusplus */

#endif
