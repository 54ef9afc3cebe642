/* cml_cpu_internal.h: between the scheduler (cml_cpu_runtime.c) and the
 * checks (cml_cpu_check.c: race check and the access callbacks;
 * cml_cpu_banks.c: bank counts). Not installed, not for kernels. */
#ifndef CML_CPU_INTERNAL_H
#define CML_CPU_INTERNAL_H

#include "cml_cpu.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

/* Every CUDA thread's stack: this size, aligned to it (a power of two), so
 * that an address is the running thread's local when it lies in the same
 * aligned block as the running code's own stack. */
#define CML_CPU_STACK_BYTES ((size_t)64 * 1024)

/* CML_CPU_CHECK, read once at start-up: 0 (no check: every hook below is
 * skipped and the access callbacks return after one test), or these bits. */
enum { CML_CPU_CHECK_RACE = 1, CML_CPU_CHECK_BANKS = 2, CML_CPU_CHECK_SECTORS = 4, CML_CPU_CHECK_PICTURE = 8 };
extern int cml_cpu_check_mode;
/* Switches the checks on or off (the runtime's own tests; a program uses
 * CML_CPU_CHECK, which also prints the summaries at exit). */
void cml_cpu_check_set_mode(int mode);
/* Distinct hazards the race check has found so far. */
size_t cml_cpu_race_hazards(void);
/* The bank counts' lines (as printed at exit) for every kernel so far. */
void cml_cpu_banks_report(FILE *out);
/* The global-memory sector counts' lines (as printed at exit), likewise. */
void cml_cpu_sectors_report(FILE *out);

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

/* Global-memory sector counts (cml_cpu_sectors.c), fed by the access
 * callbacks with every access to device memory (cudaMalloc memory and
 * __device__ variables), by the same calls as the bank counts. */
void cml_cpu_sectors_block_begin(void);
void cml_cpu_sectors_access(unsigned linear, uintptr_t addr, int size, int store, void *pc);
/* A shared-memory access: not counted, it tells the passes of a loop's
 * global accesses apart (cml_cpu_warp_log_flush). */
void cml_cpu_sectors_anchor(unsigned linear, uintptr_t addr, int size, int store, void *pc);
void cml_cpu_sectors_flush(void);                         /* a barrier or the block's end */
void cml_cpu_sectors_grid_end(const char *kernel);        /* on the launching thread */

/* What device memory p lies in (cml_cpu_runtime.c): 0 none (the host's, a
 * thread-local, a stack), 1 global memory (a cudaMalloc allocation, a
 * __device__ variable), 2 a __constant__ variable. Reads the allocation
 * table without its lock: call while a grid runs (no cudaMalloc or cudaFree
 * can change it then). */
enum { CML_CPU_NOT_DEVICE = 0, CML_CPU_GLOBAL = 1, CML_CPU_CONSTANT = 2 };
int cml_cpu_device_kind(const void *p);

// ------------------------------------------------------------ warp instructions (cml_cpu_warp.c)

/* One lane's access, in the order the lane made it. */
typedef struct cml_cpu_access {
    void *pc;
    uintptr_t addr;
    uint32_t linear, seq; /* the thread's linear index in the block; the order of logging */
    uint8_t size, store;
    uint8_t anchor;       /* logged to number passes (cml_cpu_warp_log_anchor), not counted */
    uint32_t line;        /* (the grouping's: its source line's id) */
} cml_cpu_access;

/* One warp-level instruction as the checks rebuild it: the lanes (mask)
 * that made the access at code address pc in the same pass, and each one's
 * byte address (valid where its mask bit is set). Every lane's access is
 * `size` bytes. */
typedef struct cml_cpu_warp_insn {
    void *pc;
    int store, size;
    unsigned warp;        /* the warp's index in the block */
    uint32_t mask;
    uintptr_t addr[32];
} cml_cpu_warp_insn;

/* A worker's accesses of one kind (shared, global) since the block's last
 * barrier, and the scratch the grouping into instructions needs. Zeroed
 * before first use; merge_vectors set by its owner (below). */
typedef struct cml_cpu_warp_log {
    cml_cpu_access *acc;
    size_t n, cap;
    int merge_vectors;  /* 0: off; 1: runs of 2 or 4 (float2, float4); 4: runs of 4 only */
    int *dp;
    size_t cap_dp;
    cml_cpu_warp_insn *ins;
    size_t cap_ins;
    size_t (*groups)[3];
    size_t cap_groups;
    unsigned *pass;
    size_t cap_pass;
    unsigned char *used;
    size_t cap_used;
    cml_cpu_access *ev;
    size_t cap_ev;
    cml_cpu_access *tmp;   /* the flush's sort (sort_by_warp_pc_lane) */
    size_t cap_tmp;
    struct cml_cpu_kind *kinds;
    size_t cap_kinds;
    size_t *counts;
    size_t cap_counts;
} cml_cpu_warp_log;

void cml_cpu_warp_log_add(cml_cpu_warp_log *log, unsigned linear, uintptr_t addr, int size, int store, void *pc);
/* An access that only numbers passes (a shared-memory store in the loop
 * whose global loads are counted; see cml_cpu_warp_log_flush). */
void cml_cpu_warp_log_anchor(cml_cpu_warp_log *log, unsigned linear, uintptr_t addr, int size, int store, void *pc);

/* What adding lane's access at addr to instruction `in` costs (bank
 * wavefronts, new sectors); and what to do with each instruction made. */
typedef int (*cml_cpu_insn_cost_fn)(const cml_cpu_warp_insn *in, unsigned lane, uintptr_t addr, void *ctx);
typedef void (*cml_cpu_insn_fn)(const cml_cpu_warp_insn *in, void *ctx);

/* Groups the log into warp instructions and hands each to emit, then
 * empties the log. A warp instruction = the accesses of one warp's lanes at
 * one code address on the same pass since the last barrier (lanes run one
 * after the other between barriers, so lane 5's third pass over a load
 * meets lane 0's third pass). Which pass an access of a lane that made it
 * fewer times than others belongs to: with `cost` (the bank counts), its
 * accesses go, in order, into the passes where cost says they cost least;
 * without (the global counts), a lane's k-th access is its k-th pass, as a
 * GPU runs a loop's trips with every lane still in it, unless the lanes'
 * accesses at another code address (anchors too) number the passes
 * (group_by_pass in cml_cpu_warp.c: a tile loop's load that lanes at a
 * grid's edge skip). With merge_vectors, a lane's 2 or 4 accesses in a row
 * at nearby code addresses, of one size, contiguous and together aligned to
 * their total (an int4 or float4 that g++ took apart into four 4-byte
 * loads) are first made one access again, as nvcc makes one instruction of
 * them. */
void cml_cpu_warp_log_flush(cml_cpu_warp_log *log, cml_cpu_insn_cost_fn cost, cml_cpu_insn_fn emit, void *ctx);

/* Counts per code address, per kernel: what banks and sectors keep alike.
 * Each check has one tally; each worker thread joins it once and adds its
 * instructions' counts (up to 3 numbers each, e.g. requests, sectors,
 * ideal sectors) under (pc, store); after a grid, the launching thread
 * moves them under the kernel's name. */
enum { CML_CPU_TALLY_VALUES = 3 };

/* The worst warp instruction seen at one code address (CML_CPU_PICTURE,
 * cml_cpu_picture.c): its score (compared in order, larger is worse; e.g.
 * wavefronts, then active lanes), where it ran, and its lanes' addresses
 * relative to `base` (shared: the start of its __shared__ variable, named
 * by decl; global: a 128-byte aligned address at or below its lowest). */
typedef struct cml_cpu_worst {
    int have;
    long long score[3];
    unsigned long long order;  /* ties: the lowest linear block index wins */
    cml_cpu_uint3 block;
    unsigned warp;
    int size;
    uint32_t mask;
    uintptr_t base;
    const char *decl;          /* shared only; a static string, or NULL */
    long long offset[32];      /* valid where mask has the lane */
} cml_cpu_worst;

typedef struct cml_cpu_tally_stat {
    void *pc;
    int store;
    unsigned long long v[CML_CPU_TALLY_VALUES];
    cml_cpu_worst *worst;      /* NULL unless CML_CPU_CHECK_PICTURE */
} cml_cpu_tally_stat;

typedef struct cml_cpu_tally_worker { /* one worker thread's share */
    cml_cpu_warp_log log;
    cml_cpu_tally_stat *stats;
    size_t n_stats, cap_stats;
} cml_cpu_tally_worker;

typedef struct cml_cpu_tally_result {
    char *kernel; /* spaces removed */
    void *pc;     /* NULL: a marker that the kernel ran */
    int store;
    unsigned long long v[CML_CPU_TALLY_VALUES];
    cml_cpu_worst *worst;      /* NULL unless CML_CPU_CHECK_PICTURE */
} cml_cpu_tally_result;

typedef struct cml_cpu_tally {
    const char *tag; /* "banks": messages say "cml-cpu banks: ..." */
    pthread_mutex_t lock;
    cml_cpu_tally_worker **workers;
    size_t n_workers;
    cml_cpu_tally_result *results;
    size_t n_results, cap_results;
    int log_opened; /* cml_cpu_tally_log */
    FILE *log;
    int print_launches; /* a line per launch on stderr (CML_CPU_CHECK: a whole program's run) */
} cml_cpu_tally;
#define CML_CPU_TALLY_INIT(tag) {tag, PTHREAD_MUTEX_INITIALIZER, NULL, 0, NULL, 0, 0, 0, NULL, 0}

/* The calling worker's share of t, made (zeroed) and registered the first time. */
cml_cpu_tally_worker *cml_cpu_tally_join(cml_cpu_tally *t);
/* Returns the worker's entry of (pc, store), valid until the next call. */
cml_cpu_tally_stat *cml_cpu_tally_add(cml_cpu_tally_worker *w, void *pc, int store,
                                      const unsigned long long v[CML_CPU_TALLY_VALUES]);
/* After a grid: every worker's counts go under `kernel`; launch[store][k]
 * gets this launch's sums of loads (0) and stores (1). Returns the
 * kernel's name as the tally keeps it (spaces removed; valid from then on). */
const char *cml_cpu_tally_grid_end(cml_cpu_tally *t, const char *kernel,
                                   unsigned long long launch[2][CML_CPU_TALLY_VALUES]);
/* Sums of every launch so far of kernel (as cml_cpu_bank_totals matches
 * it; NULL: all) for loads (store 0) or stores. Returns 0 when such a kernel
 * ran, -1 otherwise (sum then 0). */
int cml_cpu_tally_sum(cml_cpu_tally *t, const char *kernel, int store, unsigned long long sum[CML_CPU_TALLY_VALUES]);
/* The report: per kernel, in name order, one call of line() per source
 * line and direction (counts summed over the line's code addresses), then
 * total() with the kernel's sums. */
typedef void (*cml_cpu_tally_line_fn)(FILE *out, const char *kernel, const char *where, int store,
                                      const unsigned long long v[CML_CPU_TALLY_VALUES]);
typedef void (*cml_cpu_tally_total_fn)(FILE *out, const char *kernel,
                                       const unsigned long long sum[2][CML_CPU_TALLY_VALUES]);
void cml_cpu_tally_report(cml_cpu_tally *t, FILE *out, cml_cpu_tally_line_fn line, cml_cpu_tally_total_fn total);
/* The results summed per kernel, source line ("file:line", "" for the
 * marker that a kernel ran) and direction, each line's worst instruction
 * kept (have 0 when none was recorded), sorted by kernel, then file and
 * line; *n_lines of them (malloc'd: free it; NULL when out of memory).
 * Call with t->lock held. */
typedef struct cml_cpu_tally_line {
    const char *kernel;
    char where[600];
    int store;
    unsigned long long v[CML_CPU_TALLY_VALUES];
    cml_cpu_worst worst;
} cml_cpu_tally_line;
cml_cpu_tally_line *cml_cpu_tally_lines(cml_cpu_tally *t, size_t *n_lines);
/* A file named by the environment variable `var` (opened once, to append),
 * or NULL: the grader's per-launch logs. */
FILE *cml_cpu_tally_log(cml_cpu_tally *t, const char *var);

// ------------------------------------------------------------ pictures (cml_cpu_picture.c)

/* Under CML_CPU_CHECK_PICTURE: keeps `in` in st->worst when its score is
 * higher (a tie goes to the lower block of the grid; within a block, the
 * first). shared: the lanes' offsets are taken from their __shared__
 * variable's start (cml_cpu_shared_var_of); else from a 128-byte aligned base.
 * Called on the worker thread that runs the block. */
void cml_cpu_worst_keep(cml_cpu_tally_stat *st, const cml_cpu_warp_insn *in, const long long score[3], int shared);
/* Keeps in *into whichever of the two is worse (from may be NULL). */
void cml_cpu_worst_merge(cml_cpu_worst *into, const cml_cpu_worst *from);
/* The shared variable of the calling worker that holds addr (compared on
 * its low 32 bits, as the bank counts keep shared addresses): 1 with its
 * start's low 32 bits and its declaration ("__shared__ float tile[32][33]",
 * or "extern __shared__ (dynamic)"); 0 when none does. */
int cml_cpu_shared_var_of(uint32_t addr, uint32_t *start, const char **decl);
/* The picture records of one tally (per kernel, source line and
 * direction: counts summed, the worst instruction kept) as lines of the
 * CML_CPU_PICTURE file; space "shared" or "global". */
void cml_cpu_tally_picture(cml_cpu_tally *t, FILE *out, const char *space);
void cml_cpu_banks_picture(FILE *out);
/* CML_CPU_PICTURE=<file> read at start-up: the recording on, <file> written at exit. */
void cml_cpu_picture_init(void);
void cml_cpu_sectors_picture(FILE *out);

/* 1 when pc lies in one of the access callbacks (__tsan_read4 & co.). */
int cml_cpu_in_access_hook(const void *pc);

/* "file:line (in fn)" of a code address (addr2line; slow: reports only). */
void cml_cpu_where_is(void *pc, char *buf, size_t len);

#endif
