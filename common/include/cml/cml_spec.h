/* cml_spec.h: a lab's spec, written once: its cases (sizes, seeds, data),
 * how an output is judged, and the case the grader times.
 *
 * A lab's spec is labs/<lab>/spec.c, defining `const cml_spec cml_lab_spec`.
 * Two programs use it:
 *   - the lab's Criterion tests run each group's cases through the lab's
 *     own checked run (guard zones, poison) and judge every output with
 *     spec->judge (cml_spec_cases, cml_spec_judge);
 *   - the grader's verifier, <stem>_verify (common/src/verify_main.c: this
 *     spec and the kit's host code, never student code), describes the
 *     cases, writes their data for the kit-only harness (harness.h) and
 *     judges the harness's raw outputs with the same spec->judge.
 * So the tests and the grader's verdict cannot disagree on what a case is
 * or when its output is right.
 *
 * The verifier's words (the grader's channel; docs/grading.md §8):
 *   <stem>_verify describe SEED [--cpu]     the cases as JSON (stdout)
 *   <stem>_verify data SEED [--cpu] FILE     every case's data, in order
 *   <stem>_verify judge SEED [--cpu] OUTPUT LIST
 *       OUTPUT: a harness's output file for the cases LIST names
 *       ("STEP:CASE,STEP:CASE,...", CASE an index of describe's list);
 *       one line per entry: "right", "error N" (its CUDA error), "missing"
 *       (the file ends before it), "changed" (the input was changed) or
 *       "wrong<TAB>what the student reads".
 * SEED is the grader's: the public one, or an instructor's secret. */
#ifndef CML_SPEC_H
#define CML_SPEC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CML_SPEC_LABEL 112

/* Who runs a case. */
enum {
    CML_IN_TESTS = 1,    /* the lab's Criterion tests */
    CML_IN_GRADER = 2,   /* the grader's kit-only check (the harness) */
    CML_IN_BOTH = 3,
    CML_FOR_COUNTERS = 4 /* only the grader's hardware counters read on it */
};

typedef struct cml_case {
    uint32_t kind;             /* harness.h's case fields */
    uint64_t a, b, count;      /* count: 32-bit words of data (0 in a tests-only case whose
                                  test makes its data itself, e.g. on the device) */
    uint32_t *data;            /* count words, owned by the list */
    char label[CML_SPEC_LABEL];/* what the student reads, e.g. "n = 65537 int" */
    uint32_t steps;            /* bit s set: step s runs it; 0: every step */
    int where;                 /* CML_IN_* */
    int limit;                 /* at the contract's limits: checked, never traced or counted */
    int tag;                   /* the lab's own (a data kind) */
    int group;                 /* its group's index */
} cml_case;

typedef struct cml_cases {
    cml_case *v;
    size_t n, cap;
    int group;                 /* the group being made (cml_spec_cases sets it) */
} cml_cases;

/* A case appended to list with count words of zeroed data, its label from
 * fmt; NULL when out of memory. where defaults to CML_IN_BOTH, steps to 0. */
cml_case *cml_case_add(cml_cases *list, uint32_t kind, uint64_t a, uint64_t b, uint64_t count, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;
void cml_cases_free(cml_cases *list);

typedef struct cml_group {
    const char *name;          /* the Criterion test that runs it (suite stepN) */
    /* appends the group's cases for seed (cpu: the CPU path's sizes) */
    int (*make)(cml_cases *list, uint64_t seed, int cpu);
    /* 0: each case says where it runs (cml_case.where); else where every
     * case of the group runs, and a program that does not run them never
     * makes them (the verifier skips a CML_IN_TESTS group: its gigabyte
     * cases would cost every verifier run seconds) */
    int where;
} cml_group;

/* A timed step's case (harness.h): its data made by the harness from a
 * public seed (fill), never a hidden test's. */
typedef struct cml_spec_timing {
    uint32_t kind;
    uint64_t a, b, count;
    uint32_t fill;             /* harness.h: 1 ints, 2 floats */
    char label[CML_SPEC_LABEL];
    uint64_t traffic;          /* the fewest bytes of device memory one launch must move */
    uint64_t flops;            /* the operations it must do (0: not a library-bound lab) */
    double close_rel, close_abs; /* a sampled word within close_rel * |ref| + close_abs of the reference's
                                    (both 0: exactly equal bits) */
} cml_spec_timing;

typedef struct cml_spec {
    const char *lab;           /* e.g. "04_reduction" */
    const cml_group *groups;
    size_t ngroups;
    uint64_t (*out_bytes)(const cml_case *c);
    /* 1 when out (nbytes) is right for step; else 0 and what is wrong in msg */
    int (*judge)(const cml_case *c, int step, const void *out, uint64_t nbytes, char *msg, size_t cap);
    /* a timed step's case: 1 and *t, or 0 where the step is not timed */
    int (*timing)(int step, cml_spec_timing *t);
    /* interface functions that take host data to upload (and so may call cudaMemcpy): "a,b" or "" */
    const char *host_copies_in;
} cml_spec;

/* A judge's guard-zone check: `guard` words before an output (`before`)
 * and after it (`after`), each still harness.h's poison 0xffffffff unless
 * a kernel wrote there. 0 when both are untouched; else 1 and, in msg,
 * "a write outside NAME, 3 floats before NAME" or "..., 1 floats past
 * NAME's end" (the first written word, in memory order). */
int cml_spec_outside_write(const uint32_t *before, const uint32_t *after, uint64_t guard, const char *name, char *msg,
                           size_t cap);

/* The lab's spec: labs/<lab>/spec.c, in every program of the lab that links it. */
extern const cml_spec cml_lab_spec;

/* Every case of every group for seed, in group order, those `where` asks
 * for (a mask of CML_IN_*). 0 when a group fails (out of memory). */
int cml_spec_cases(const cml_spec *spec, uint64_t seed, int cpu, int where, cml_cases *list);
/* The cases of one group (by name) that the tests run on step. */
int cml_spec_group_cases(const cml_spec *spec, const char *group, uint64_t seed, int cpu, int step,
                         cml_cases *list);
int cml_case_runs(const cml_case *c, int step);

/* The verifier's main() (verify_main.c). */
int cml_spec_main(const cml_spec *spec, int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif
