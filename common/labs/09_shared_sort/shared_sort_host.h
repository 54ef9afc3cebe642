/* shared_sort_host.h: the known-good host side of lab 09, shared by its
 * runner, tests and verifier: the keys, what each step must make of them,
 * the check and its diagnosis, and the guarded device buffers of one run. */
#ifndef SHARED_SORT_HOST_H
#define SHARED_SORT_HOST_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include <cml/cml_buffer.h>
#include "shared_sort.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Written to all of out and scratch before every run: UINT_MAX, the
 * harness's 0xff bytes. The kit's keys are below it, so a UINT_MAX in out is
 * a place never written (or a partial tile's pad that leaked out). */
#define SS_POISON 0xffffffffu
/* Guard patterns around in, out and scratch (cml_buffer.h). */
#define SS_IN_GUARD_BITS 0x49742400u
#define SS_OUT_GUARD_BITS 0xA5A5A5A5u
#define SS_SCRATCH_GUARD_BITS 0x5C5C5C5Cu

/* The merge step: its input is sorted runs, its output pairs of them merged. */
#define SS_MERGE_STEP 3

/* Kinds of keys (a case's tag). All are below SS_POISON. */
typedef enum ss_keys {
    SS_FULL_RANGE,  /* uniform over 0 .. 2^32 - 2: few duplicates */
    SS_FEW_KEYS,    /* 0 .. 15: nearly every key many times */
    SS_ALL_EQUAL,   /* one key, drawn, n times */
    SS_SORTED,      /* ascending, with runs of equal keys */
    SS_REVERSED,    /* descending, with runs of equal keys */
    SS_NUM_KINDS
} ss_keys;
const char *ss_keys_name(ss_keys kind);

/* n seeded keys of `kind` into k. */
void ss_make_keys(uint32_t *k, size_t n, ss_keys kind, uint64_t seed, uint64_t stream);
/* Sorts each run of `width` keys of k in place (step 3's input). */
void ss_sort_runs(uint32_t *k, size_t n, size_t width);

/* What `step` must make of in (n keys; width for step 3), on the CPU. */
void ss_expect(const uint32_t *in, size_t n, int step, size_t width, uint32_t *want);

/* The check: out must equal ss_expect's keys exactly (a sort has one
 * answer). On the first wrong place, the diagnosis: the segment it is in
 * (step 1: a list of a tile; 2: a tile; 3: a merged pair; 4: everything),
 * whether that segment of out holds the same keys as the input's (then
 * they are out of order) or not (a key lost or duplicated: the smallest
 * such key and its two counts), and how many places were never written. */
typedef enum ss_fault { SS_RIGHT, SS_UNWRITTEN, SS_LOST_OR_DUPLICATED, SS_OUT_OF_ORDER } ss_fault;
typedef struct ss_check {
    int step;
    size_t n, width;
    size_t wrong, unwritten;
    size_t first;               /* first wrong place */
    uint32_t expected, got;     /* at first */
    ss_fault fault;             /* of first's segment */
    size_t seg_lo, seg_hi;      /* first's segment, [lo, hi) (step 1: its list's first and last place + 1) */
    size_t tile, list;          /* step 1 and 2: first's tile; step 1: its list */
    uint32_t key;               /* SS_LOST_OR_DUPLICATED: the smallest key whose count differs */
    size_t count_in, count_out; /* its counts in the input's segment and in out's */
    size_t order_at;            /* SS_OUT_OF_ORDER: the first place of the segment smaller than the one before */
    uint32_t order_key, order_before; /* its key and the key before it */
    size_t partial_lost;        /* step 4: out is the sorted keys of every whole tile, then the poison in
                                 * the last partial tile's n % 1024 places: those keys never reached out */
} ss_check;
size_t ss_compare(const uint32_t *in, const uint32_t *out, size_t n, int step, size_t width, ss_check *chk);
/* What is wrong and the likely cause, in a sentence or three. */
char *ss_describe(const ss_check *chk, char *buf, size_t len);

/* Device buffers of one run, each with guard zones. */
typedef struct ss_buffers {
    size_t n, width;
    cml_dbuf in, out, scratch;
} ss_buffers;

cudaError_t ss_buffers_alloc(ss_buffers *b, size_t n, size_t width, const uint32_t *host_in);
void ss_buffers_free(ss_buffers *b);

/* In shared_sort_call.c, the one place that calls the lab's kernels. */
cudaError_t ss_run_step(ss_buffers *b, int step);

typedef struct ss_result {
    cudaError_t err;       /* a CUDA error (then nothing else is set) */
    int guards_intact;
    char guard_msg[240];
    ss_check check;
} ss_result;

/* One checked run: poison, launch, verify. Returns 1 when out is exactly
 * right and nothing outside out and scratch was touched. The runner times
 * the launch between the two halves. */
int ss_run_checked(ss_buffers *b, int step, const uint32_t *host_in, uint32_t *host_out, ss_result *res);
cudaError_t ss_poison(ss_buffers *b);
int ss_verify(ss_buffers *b, int step, const uint32_t *host_in, uint32_t *host_out, ss_result *res);

#ifdef __cplusplus
}
#endif
#endif
