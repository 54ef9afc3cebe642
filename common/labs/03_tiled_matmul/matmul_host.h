/* matmul_host.h: the known-good host side of lab 03, shared by its runner
 * and tests: data, the CPU reference in double with each element's error
 * bound, the check with its diagnosis, and the guarded device buffers one
 * run needs. */
#ifndef MATMUL_HOST_H
#define MATMUL_HOST_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include <cml/cml_buffer.h>
#include "matmul.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Poison written to all of C before every run: a quiet NaN. */
#define MM_POISON_BITS 0x7FC0BAD0u
/* Guards around A and B are NaNs too (other payloads): a kernel that reads
 * past the end of A or B multiplies a NaN into C, even by a zero-filled
 * partner, and the check names it. */
#define MM_A_GUARD_BITS 0x7FC0A0A0u
#define MM_B_GUARD_BITS 0x7FC0B0B0u
/* Guard value around C. */
#define MM_C_GUARD_BITS 0xA5A5A5A5u

/* Seeded data, uniform in [-1, 1) (cml_fill_float): products of both signs
 * and sizes, so a dropped or misplaced term shows. */
void mm_make_data(float *a, size_t n, uint64_t seed, uint64_t stream);

/* Unit roundoff of float and the error bound of a dot product of length K
 * computed in float in any order, with or without FMA (Higham, Accuracy and
 * Stability of Numerical Algorithms, 2nd ed., eq. 3.5 with Lemma 3.1):
 * |fl(a.b) - a.b| <= gamma_K * sum |a_k| |b_k|, gamma_K = K u / (1 - K u),
 * u = 2^-24. The reference itself (in double) adds at most gamma_K for
 * u = 2^-53. */
double mm_gamma(int K);

/* The CPU reference: C = A * B in double, and for every element checked the
 * bound sum_k |A(i, k)| |B(k, j)|. Either every element (full), or, when
 * M * N * K is larger than the work asked for, every element of `nrows`
 * rows and `ncols` columns of C (the first and last of each, the rest
 * seeded): a large C stays quick to check on the CPU. Keeps A and B
 * (owned by the caller, alive while the reference is used) for the
 * diagnosis. */
typedef struct mm_reference {
    int M, N, K;
    const float *A, *B;
    int full;
    int nrows, ncols;          /* rows (all N columns) and columns (all M rows) checked */
    int *rows, *cols;
    double *row_val, *row_bound;  /* nrows x N */
    double *col_val, *col_bound;  /* M x ncols (column by column) */
} mm_reference;

#define MM_FULL_CHECK_WORK ((double)(1 << 30))  /* M * N * K up to this: every element */
#define MM_SAMPLE_LINES 24                        /* otherwise: this many rows and columns */

/* Computes the reference (full when M * N * K <= max_work). Returns 0, or
 * -1 when out of host memory. */
int mm_reference_init(mm_reference *ref, const float *A, const float *B, int M, int N, int K,
                      double max_work, uint64_t seed);
void mm_reference_free(mm_reference *ref);

/* Why one element of C is wrong (most specific first). */
typedef enum {
    MM_CAUSE_UNWRITTEN,    /* still the poison */
    MM_CAUSE_NAN,          /* another NaN or an infinity: a read past A or B (guards are NaN) */
    MM_CAUSE_ZERO,         /* exactly 0 where the product is not: nothing was added */
    MM_CAUSE_K_TAIL,       /* the sum stops at the last whole k-tile */
    MM_CAUSE_B_STRIDE,     /* B read with A's row stride, B[k * K + j] */
    MM_CAUSE_OTHER,        /* a race or a wrong index */
    MM_NUM_CAUSES
} mm_cause;

/* One sentence naming the cause and the likely fix. */
const char *mm_cause_text(mm_cause cause);

#define MM_MAX_REPORTED 4
#define MM_MAX_CLASSIFIED 64  /* wrong elements diagnosed one by one (each costs K) */

typedef struct mm_mismatch {
    int row, col;
    double expected, tolerance;
    float got;
} mm_mismatch;

typedef struct mm_check {
    int M, N, K;
    int full;
    size_t checked, wrong;
    size_t by_cause[MM_NUM_CAUSES];  /* over the first MM_MAX_CLASSIFIED wrong elements */
    int reported;
    mm_mismatch first[MM_MAX_REPORTED];
    double worst_ratio;              /* max |got - expected| / tolerance over the checked */
} mm_check;

/* Compares C (M x N, from a step) with the reference: element (i, j)
 * passes when |C - ref| <= (mm_gamma(K) + 2^-53 K) * bound(i, j) (and is
 * not NaN). Returns the number of wrong elements. */
size_t mm_compare(const mm_reference *ref, const float *C, mm_check *chk);

/* The cause of most of the diagnosed wrong elements (MM_CAUSE_OTHER when
 * none is wrong). */
mm_cause mm_likely_cause(const mm_check *chk);

/* "3 of 6000 elements of C are wrong (...): C(0, 32) expected 1.5 +- 2e-06,
 * got nan; ... Likely cause: ..." into buf. Returns buf. */
char *mm_describe(const mm_check *chk, char *buf, size_t len);

/* One sentence for a CUDA error of a step: what usually causes it. */
const char *mm_error_hint(void);

/* Device buffers for one M x N x K product, each with guard zones. */
typedef struct mm_buffers {
    int M, N, K;
    cml_dbuf a, b, c;
} mm_buffers;

cudaError_t mm_buffers_alloc(mm_buffers *b, int M, int N, int K);
void mm_buffers_free(mm_buffers *b);
/* Copies M * K floats of A and K * N of B into the buffers. */
cudaError_t mm_upload(mm_buffers *b, const float *A, const float *B);
/* Calls the student's (or reference) matmul_step (matmul_call.c). */
cudaError_t mm_run_step(mm_buffers *b, int step);

/* One checked run: poisons C, runs the step, fetches C into host_c
 * (M * N floats) and compares it with the reference; checks the guards. */
typedef struct mm_result {
    cudaError_t err;       /* a CUDA error (then nothing else is set) */
    int guards_intact;
    char guard_msg[200];
    mm_check check;
} mm_result;

/* Returns 1 when the step computed C within the bound and touched nothing
 * outside it (matmul_call.c). */
int mm_run_checked(mm_buffers *b, int step, const mm_reference *ref, float *host_c, mm_result *res);
/* Its two halves around a launch: poison all of C; then wait, fetch C,
 * check the guards and compare. */
cudaError_t mm_poison(mm_buffers *b);
int mm_verify(mm_buffers *b, const mm_reference *ref, float *host_c, mm_result *res);

#ifdef __cplusplus
}
#endif
#endif
