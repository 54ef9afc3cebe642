/* cml_cpu_internal.h: between the scheduler (cml_cpu_runtime.c) and the
 * checks (cml_cpu_check.c: race check and the access callbacks;
 * cml_cpu_banks.c: bank counts). Not installed, not for kernels. */
#ifndef CML_CPU_INTERNAL_H
#define CML_CPU_INTERNAL_H

#include "cml_cpu.h"

#include <stdint.h>
#include <stdio.h>

/* Every CUDA thread's stack: this size, aligned to it (a power of two), so
 * that an address is the running thread's local when it lies in the same
 * aligned block as the running code's own stack. */
#define CML_CPU_STACK_BYTES ((size_t)64 * 1024)

/* CML_CPU_CHECK, read once at start-up: 0 (no check: every hook below is
 * skipped and the access callbacks return after one test), or these bits. */
enum { CML_CPU_CHECK_RACE = 1, CML_CPU_CHECK_BANKS = 2 };
extern int cml_cpu_check_mode;
/* Switches the checks on or off (the runtime's own tests; a program uses
 * CML_CPU_CHECK, which also prints the summaries at exit). */
void cml_cpu_check_set_mode(int mode);
/* Distinct hazards the race check has found so far. */
size_t cml_cpu_race_hazards(void);
/* The bank counts' lines (as printed at exit) for every kernel so far. */
void cml_cpu_banks_report(FILE *out);

/* The scheduler tells the checks about the order it imposes. All calls are
 * made on the worker thread that runs the block. */
void cml_cpu_check_block_begin(const cml_cpu_launch_desc *d, cml_cpu_uint3 block, char *dyn, size_t dyn_bytes);
/* The calling worker's static __shared__ arena (reserved once, then fixed):
 * accesses inside it are shared memory to the checks. */
void cml_cpu_check_static_shared(char *arena, size_t bytes);
void cml_cpu_check_barrier(void);                         /* a __syncthreads released */
void cml_cpu_check_warp_sync(unsigned warp, unsigned go); /* lanes `go` of `warp` passed a warp operation */
void cml_cpu_check_block_end(int completed);              /* 0: the block was abandoned (a fault) */
/* After the grid, on the launching thread: prints what the race check found. */
void cml_cpu_check_grid_end(const cml_cpu_launch_desc *d);

/* Bank counts (cml_cpu_banks.c), fed by the access callbacks: one shared
 * access of `size` bytes at byte address `addr` by thread `linear` of the
 * block, at code address pc. */
void cml_cpu_banks_block_begin(unsigned n_threads);
void cml_cpu_banks_access(unsigned linear, uint32_t addr, int size, int store, void *pc);
void cml_cpu_banks_flush(void);                           /* a barrier or the block's end */
void cml_cpu_banks_grid_end(const char *kernel);          /* on the launching thread */

/* 1 when pc lies in one of the access callbacks (__tsan_read4 & co.). */
int cml_cpu_in_access_hook(const void *pc);

/* "file:line (in fn)" of a code address (addr2line; slow: reports only). */
void cml_cpu_where_is(void *pc, char *buf, size_t len);

#endif
