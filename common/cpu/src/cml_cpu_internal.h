/* cml_cpu_internal.h: between the scheduler (cml_cpu_runtime.c) and the
 * race check (cml_cpu_check.c). Not installed, not for kernels. */
#ifndef CML_CPU_INTERNAL_H
#define CML_CPU_INTERNAL_H

#include "cml_cpu.h"

/* The scheduler tells the checker about the order it imposes. All calls are
 * made on the worker thread that runs the block. */
void cml_cpu_check_block_begin(const cml_cpu_launch_desc *d, cml_cpu_uint3 block, char *dyn, size_t dyn_bytes);
void cml_cpu_check_barrier(void);            /* a __syncthreads released */
void cml_cpu_check_warp_sync(unsigned warp); /* a warp operation released */
/* After the grid: prints what the race check found in it (if enabled). */
void cml_cpu_check_grid_end(const cml_cpu_launch_desc *d);

/* For the checker: the calling CUDA thread (linear index in its block), or
 * -1 outside a kernel; and "file:line (in fn)" of a code address. */
int cml_cpu_current_linear(void);
void cml_cpu_where_is(void *pc, char *buf, size_t len);
void cml_cpu_describe(unsigned linear, char *buf, size_t len);

#endif
