/* occupancy_host.h: the known-good host side of lab 08, shared by its
 * runner, tests and spec: data, the CPU result and its error bound, the
 * check, and the guarded device buffers of one run. */
#ifndef OCCUPANCY_HOST_H
#define OCCUPANCY_HOST_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include <cml/cml_buffer.h>
#include "occupancy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Written to all of y before every run: a quiet NaN no result ever is. */
#define OCCUPANCY_POISON_BITS 0x7FC0BAD0u
/* Guard patterns around x, coef and y (cml_buffer.h). */
#define OCCUPANCY_X_GUARD_BITS 0x49742400u
#define OCCUPANCY_COEF_GUARD_BITS 0x4C0EF000u
#define OCCUPANCY_Y_GUARD_BITS 0xA5A5A5A5u

/* Seeded data: x in [-1, 1), coef[0..degree] in [-1, 1) (a different
 * stream: no coefficient equals an x by construction). */
void occupancy_make_data(float *x, size_t n, float *coef, int degree, uint64_t seed, uint64_t stream);

/* The polynomial at x in double, and how far a float evaluation may be
 * from it: any order of d multiplications and d additions (Horner's rule,
 * a table of powers, fmaf or not) stays within gamma(2d + 2) * sum |c_k|
 * |x|^k, gamma(m) = m u / (1 - m u), u = 2^-24 (Higham, Accuracy and
 * Stability, 5.1), plus the smallest normal float for underflow. A wrong
 * coefficient, power or element is off by far more. */
double occupancy_ref(double x, const float *coef, int degree, double *bound);

typedef struct occupancy_check {
    size_t checked, wrong, unwritten;
    size_t first, first_unwritten, last_written;  /* indices (last_written: 0 when none) */
    double expected, bound;                        /* at first */
    float got;
    /* every wrong element written, and each what a classic mistake gives:
     * the coefficients in reverse order (coef[k] with x^(degree - k)), or
     * x * p(x) (every power one too high) */
    int all_reversed, all_shifted;
} occupancy_check;
/* Compares y with the CPU result within the bound. Returns the wrong count. */
size_t occupancy_compare(const float *x, const float *coef, int degree, const float *y, size_t n,
                         occupancy_check *chk);
/* "3 of 1000 elements of y are wrong (3 never written): y[997] expected
 * 0.25 (within 1.1e-06), got nan. Likely cause: ..." */
char *occupancy_describe(const occupancy_check *chk, int step, char *buf, size_t len);

/* Device buffers of one run, each with guard zones. */
typedef struct occupancy_buffers {
    size_t n;
    int degree;
    cml_dbuf x, coef, y;
} occupancy_buffers;

cudaError_t occupancy_buffers_alloc(occupancy_buffers *b, size_t n, int degree, const float *host_x,
                                    const float *host_coef);
void occupancy_buffers_free(occupancy_buffers *b);

/* In occupancy_call.c, the one place that calls the lab's kernels. */
cudaError_t occupancy_run_step(occupancy_buffers *b, int step);

typedef struct occupancy_result {
    cudaError_t err;       /* a CUDA error (then nothing else is set) */
    int guards_intact;
    char guard_msg[200];
    occupancy_check check;
} occupancy_result;

/* One checked run: poison, launch, verify. Returns 1 when y is right and
 * nothing outside it was touched. The runner times the launch between the
 * two halves. */
int occupancy_run_checked(occupancy_buffers *b, int step, const float *host_x, const float *host_coef,
                          float *host_y, occupancy_result *res);
cudaError_t occupancy_poison(occupancy_buffers *b);
int occupancy_verify(occupancy_buffers *b, const float *host_x, const float *host_coef, float *host_y,
                     occupancy_result *res);

/* The degree a step computes by default: the table's for steps 2 and 3,
 * `degree` for the others. */
int occupancy_step_degree(int step, int degree);

/* What the runner reports beside a step's speed (occupancy_call.c): the
 * step's kernel's registers and local bytes per thread (regs 0: not known,
 * the CPU path), its block, the blocks an SM holds and the share of the
 * SM's threads that makes (the occupancy API). */
typedef struct occupancy_resources {
    int regs, block, blocks_per_sm;
    size_t local_bytes;
    double occupancy;      /* 0..1; < 0 when not known */
} occupancy_resources;
cudaError_t occupancy_step_resources(int step, occupancy_resources *res);

/* FP32 peak in FLOP/s from the kit's FMA kernel (occupancy_peak.cu): a
 * grid that fills the GPU, each thread 8 independent chains of FMAs,
 * median of `repeat` timed runs after a warm-up. */
cudaError_t occupancy_fp32_peak(int repeat, double *flops);

#ifdef __cplusplus
}
#endif
#endif
