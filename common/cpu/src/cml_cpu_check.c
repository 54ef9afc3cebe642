/* Race check placeholder (replaced below when implemented). */
#include "cml_cpu_internal.h"

void cml_cpu_check_block_begin(const cml_cpu_launch_desc *d, cml_cpu_uint3 block, char *dyn, size_t dyn_bytes)
{
    (void)d, (void)block, (void)dyn, (void)dyn_bytes;
}
void cml_cpu_check_barrier(void) {}
void cml_cpu_check_warp_sync(unsigned warp) { (void)warp; }
void cml_cpu_check_grid_end(const cml_cpu_launch_desc *d) { (void)d; }
