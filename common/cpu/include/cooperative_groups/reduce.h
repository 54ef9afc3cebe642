/* cooperative_groups/reduce.h on the CPU path: cg::reduce over a tile and
 * the operators of the toolkit's header. A butterfly of shfl_xor, so every
 * rank gets the result (as with the toolkit); float sums may differ from a
 * GPU's in the last bits (another order). */
#ifndef CML_CPU_CG_REDUCE_H
#define CML_CPU_CG_REDUCE_H

#include <cooperative_groups.h>

#ifdef __cplusplus

namespace cooperative_groups {

template <typename T = void>
struct plus {
    CML_CPU_MI T operator()(const T &a, const T &b) const { return a + b; }
};
template <typename T = void>
struct less { // the smaller: cg::reduce(tile, v, cg::less<int>()) is a minimum
    CML_CPU_MI T operator()(const T &a, const T &b) const { return b < a ? b : a; }
};
template <typename T = void>
struct greater { // the larger
    CML_CPU_MI T operator()(const T &a, const T &b) const { return a < b ? b : a; }
};
template <typename T = void>
struct bit_and {
    CML_CPU_MI T operator()(const T &a, const T &b) const { return a & b; }
};
template <typename T = void>
struct bit_or {
    CML_CPU_MI T operator()(const T &a, const T &b) const { return a | b; }
};
template <typename T = void>
struct bit_xor {
    CML_CPU_MI T operator()(const T &a, const T &b) const { return a ^ b; }
};

// reduce(tile, value, op): op over the tile's values, on every rank.
template <unsigned N, typename P, typename T, typename Op>
CML_CPU_MI auto reduce(const thread_block_tile<N, P> &g, T &&v, Op &&op) -> typename std::decay<T>::type
{
    typename std::decay<T>::type acc = v;
    for (unsigned o = N / 2; o > 0; o /= 2)
        acc = op(acc, g.shfl_xor(acc, o));
    return acc;
}
// As in CUDA, a whole block is reduced tile by tile (through shared memory),
// not by cg::reduce.
template <typename T, typename Op>
void reduce(const thread_block &, T &&, Op &&)
{
    static_assert(cml_cpu_detail::cannot_run<T>::value,
                  "cml-cpu: cg::reduce takes a tile (cg::tiled_partition<32>(block)), not a whole thread_block");
}

} // namespace cooperative_groups

#endif /* __cplusplus */

#endif
