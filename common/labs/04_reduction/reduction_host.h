/* reduction_host.h: the known-good host side of lab 04, shared by its
 * runner and tests: data, CPU reference, error bound, diagnosis, and the
 * guarded device buffers one reduction needs. */
#ifndef REDUCTION_HOST_H
#define REDUCTION_HOST_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include <cml/cml_buffer.h>
#include "reduction.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { RED_INT, RED_FLOAT } red_type;

/* Float data: reals in [-1, 1), or small integers in [-8, 8] whose every
 * partial sum is an integer below 2^24 in magnitude, so any order of
 * summation gives the exact total and a single wrong index shows. */
typedef enum { RED_REALS, RED_SMALL_INTS } red_float_kind;

/* Guard value around the input: a kernel that reads k elements past either
 * end of the input adds k * 2^24 to its sum, which red_diagnose names. */
#define RED_INPUT_GUARD_INT 0x01000000u
#define RED_INPUT_GUARD_FLOAT 16777216.0f
/* Poison written to out[0] and scratch before every run. */
#define RED_POISON_INT 0xDEADBEEFu
#define RED_POISON_FLOAT_BITS 0x7FC0BAD0u /* a quiet NaN */
/* Guard value around out and scratch. */
#define RED_OUTPUT_GUARD 0xA5A5A5A5u

/* Integers are drawn from [-r, r] with r = red_int_range(n) = min(1000,
 * INT_MAX / n), at least 1, so no partial sum can overflow an int. */
int red_int_range(size_t n);

void red_make_ints(int *a, size_t n, uint64_t seed, uint64_t stream);
void red_make_floats(float *a, size_t n, red_float_kind kind, uint64_t seed, uint64_t stream);

/* CPU reference: exact 64-bit integer sum. */
int64_t red_cpu_sum_int(const int *a, size_t n);
/* CPU reference in double; *abs_sum gets the sum of |a[i]| (for the bound). */
double red_cpu_sum_float(const float *a, size_t n, double *abs_sum);

/* The float tolerance for n elements: 8 * sqrt(n) * 2^-24 * sum |a[i]|.
 * Rounding errors of a sum in any order are independent and bounded by one
 * unit roundoff u each, so |error| <= lambda * sqrt(n) * u * sum |a_i| except
 * with probability below 2n exp(-lambda^2 / 2) (Higham and Mary, 2019):
 * with lambda = 8 that is under 1e-5 even at n = 2^28. The worst-case bound
 * (n - 1) u sum |a_i| is useless here: above 1 for n >= 2^24. */
double red_float_tolerance(size_t n, double abs_sum);

/* A one-line guess at the cause of a wrong int sum (points at a mistake). */
const char *red_diagnose_int(int got, int64_t expected);
/* The same for floats; tol is the tolerance used. */
const char *red_diagnose_float(float got, double expected, double tol);

/* Device buffers for one reduction of n elements of `type`, each with guard
 * zones (cml_buffer.h). */
typedef struct red_buffers {
    red_type type;
    size_t n;
    cml_dbuf in, out, scratch;
} red_buffers;

cudaError_t red_buffers_alloc(red_buffers *b, red_type type, size_t n);
void red_buffers_free(red_buffers *b);
/* Copies n elements of host data (int or float, per type) into in. */
cudaError_t red_upload(red_buffers *b, const void *host);
/* Poisons out[0] and scratch. */
cudaError_t red_poison(red_buffers *b);
/* Calls the student's (or reference) reduce_sum_int/float for step. */
cudaError_t red_run_step(red_buffers *b, int step);
/* Waits for the GPU and copies out[0] to *result (an int or a float). */
cudaError_t red_fetch(red_buffers *b, void *result);
/* Checks the guard zones of all three buffers. On damage returns 0 and
 * writes which buffer and where into msg. */
int red_guards_intact(red_buffers *b, char *msg, size_t len, cudaError_t *err);

/* What one reduction must give: the exact sum of ints, or the double sum
 * of floats and the tolerance allowed (0 for RED_SMALL_INTS: exact). */
typedef struct red_reference {
    red_type type;
    int64_t isum;
    double fsum, tol;
} red_reference;

/* The reference of n elements of host data (ints or floats of kind). */
void red_reference_of(const void *host, red_type type, red_float_kind kind, size_t n, red_reference *ref);

/* One checked run: poisons out and scratch, runs, fetches out[0], checks
 * the guards of all three buffers and compares with ref. */
typedef struct red_result {
    cudaError_t err;          /* a CUDA error (then nothing else is set) */
    int guards_intact;
    char guard_msg[200];      /* when not intact: which buffer and where */
    union { int i; float f; } got;
    int value_ok;             /* got matches ref */
    int ok;                   /* guards intact and value right */
    char msg[200];            /* when !ok: the guard message, or "expected E, got G: likely cause" */
} red_result;

/* The checked run of a step (reduction_call.c). Returns res->ok. Shared by
 * the tests and the runner, so both check the same way. */
int red_run_checked(red_buffers *b, int step, const red_reference *ref, red_result *res);
/* The second half of a checked run, after the launch: fetch, guards,
 * compare (the runner's timed repeats use it after red_poison + a launch). */
int red_verify(red_buffers *b, const red_reference *ref, red_result *res);
/* The same around any reduction into b->out (the runner's CUB anchor). */
int red_run_checked_with(red_buffers *b, cudaError_t (*run)(void *ctx), void *ctx, const red_reference *ref,
                         red_result *res);

#ifdef __cplusplus
}
#endif
#endif
