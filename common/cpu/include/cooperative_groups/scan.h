/* cooperative_groups/scan.h on the CPU path: inclusive and exclusive scans
 * over a tile (Hillis-Steele with shfl_up). */
#ifndef CML_CPU_CG_SCAN_H
#define CML_CPU_CG_SCAN_H

#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

#ifdef __cplusplus

namespace cooperative_groups {

template <unsigned N, typename P, typename T, typename Op>
CML_CPU_MI auto inclusive_scan(const thread_block_tile<N, P> &g, T &&v, Op &&op) -> typename std::decay<T>::type
{
    typename std::decay<T>::type acc = v;
    for (unsigned o = 1; o < N; o *= 2) {
        typename std::decay<T>::type y = g.shfl_up(acc, o);
        if (g.thread_rank() >= o)
            acc = op(y, acc);
    }
    return acc;
}
template <unsigned N, typename P, typename T>
CML_CPU_MI auto inclusive_scan(const thread_block_tile<N, P> &g, T &&v) -> typename std::decay<T>::type
{
    return inclusive_scan(g, v, plus<typename std::decay<T>::type>());
}
// Rank 0 gets T{} (the identity of plus, what the toolkit gives for plus).
template <unsigned N, typename P, typename T, typename Op>
CML_CPU_MI auto exclusive_scan(const thread_block_tile<N, P> &g, T &&v, Op &&op) -> typename std::decay<T>::type
{
    typename std::decay<T>::type inc = inclusive_scan(g, v, op), prev = g.shfl_up(inc, 1);
    return g.thread_rank() == 0 ? typename std::decay<T>::type{} : prev;
}
template <unsigned N, typename P, typename T>
CML_CPU_MI auto exclusive_scan(const thread_block_tile<N, P> &g, T &&v) -> typename std::decay<T>::type
{
    return exclusive_scan(g, v, plus<typename std::decay<T>::type>());
}

} // namespace cooperative_groups

#endif /* __cplusplus */

#endif
