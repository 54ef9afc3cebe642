// What the CPU path cannot run must stop its build with a message that
// says so (the grader then grades the file on a GPU): each CANNOT_RUN_n
// compiles one such use (tests/CMakeLists.txt, cml_cpu_cannot_run_*).
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

__global__ void cannot_run_kernel(int *out)
{
#if CANNOT_RUN_GRID_SYNC
    cg::this_grid().sync();
#elif CANNOT_RUN_COALESCED
    cg::coalesced_threads();
#elif CANNOT_RUN_WIDE_TILE
    auto tile = cg::tiled_partition<64>(cg::this_thread_block());
    out[1] = (int)tile.thread_rank();
#endif
    out[0] = 1;
}
