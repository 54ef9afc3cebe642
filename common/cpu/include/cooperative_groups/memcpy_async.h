/* cooperative_groups/memcpy_async.h on the CPU path: the copy is done at
 * once, the group's threads each copying a strided share of it; wait()
 * is the group's sync, after which every thread sees the whole copy (the
 * race check sees the copy's writes and the reads after the sync). */
#ifndef CML_CPU_CG_MEMCPY_ASYNC_H
#define CML_CPU_CG_MEMCPY_ASYNC_H

#include <cooperative_groups.h>

#ifdef __cplusplus

#include <cstddef>

namespace cuda {
#ifndef CML_CPU_ALIGNED_SIZE_T
#define CML_CPU_ALIGNED_SIZE_T
template <std::size_t Align>
struct aligned_size_t {
    std::size_t value;
    constexpr aligned_size_t(std::size_t v) : value(v) {}
    constexpr operator std::size_t() const { return value; }
};
#endif
} // namespace cuda

namespace cooperative_groups {

template <typename G, typename T, typename Size>
CML_CPU_MI void memcpy_async(const G &g, T *dst, const T *src, Size bytes_)
{
    std::size_t bytes = (std::size_t)bytes_, step = (std::size_t)g.size(), rank = (std::size_t)g.thread_rank();
    if (bytes % sizeof(T) == 0) {
        for (std::size_t i = rank; i < bytes / sizeof(T); i += step)
            dst[i] = src[i];
    } else {
        for (std::size_t i = rank; i < bytes; i += step)
            reinterpret_cast<char *>(dst)[i] = reinterpret_cast<const char *>(src)[i];
    }
}
// The (dst, dst_count, src, src_count) form: copies the smaller count.
template <typename G, typename T>
CML_CPU_MI void memcpy_async(const G &g, T *dst, std::size_t dst_count, const T *src, std::size_t src_count)
{
    memcpy_async(g, dst, src, (dst_count < src_count ? dst_count : src_count) * sizeof(T));
}
template <typename G>
CML_CPU_MI void wait(const G &g) { g.sync(); }
template <unsigned Stages, typename G>
CML_CPU_MI void wait_prior(const G &g) { g.sync(); }

} // namespace cooperative_groups

#endif /* __cplusplus */

#endif
