/* vectorized_host.h: the known-good host side of lab 07, shared by its
 * runner, tests and spec: the data, the judge of an output with its
 * diagnosis, and the guarded device buffers of one run. */
#ifndef VECTORIZED_HOST_H
#define VECTORIZED_HOST_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include <cml/cml_buffer.h>
#include "vectorized.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Words of poison on each side of out in an output (the harness's and the
 * tests' layout: VEC_GUARD words, out's n words, VEC_GUARD words). A
 * multiple of 4, so the offset of out from a 16-byte boundary is the
 * case's. */
#define VEC_GUARD 64u
/* What every word of an output holds before a run (harness.h's 0xff bytes):
 * a NaN as a float, and no word of the data (vectorized_make_data). */
#define VEC_POISON 0xffffffffu
/* Guard patterns of the device buffers (cml_buffer.h). */
#define VEC_X_GUARD_BITS 0x49742400u
#define VEC_Y_GUARD_BITS 0x59742400u
#define VEC_OUT_GUARD_BITS 0xA5A5A5A5u
/* The largest element offset of steps 4 and 5 (vectorized.h). */
#define VEC_MAX_OFFSET 3u

/* Steps 1-4 copy; step 5 scale-adds. */
enum { VEC_COPY = 0, VEC_SCALE_ADD = 1 };
int vectorized_kind(int step);
/* The element offset step runs at when the case's is off: off for steps 4
 * and 5, 0 for steps 1-3 (their contract is 16-byte alignment). */
unsigned vectorized_step_offset(int step, unsigned off);
/* Elements one vector of step moves (1, 2 or 4), and its scalar head at
 * element offset off for n elements (steps 4 and 5: up to the first
 * 16-byte boundary, at most n; else 0). */
unsigned vectorized_width(int step);
size_t vectorized_head(int step, unsigned off, size_t n);

/* Seeded data: x[k] with a random sign and |x[k]| in [0.5, 4); y[k] in
 * [-4, 4); the factor a in [0.5, 2). As the copies' ints these are the
 * floats' bits: never VEC_POISON, never a guard pattern, almost all
 * different, so an element from a wrong place shows. Either array may be
 * NULL. */
void vectorized_make_data(float *x, float *y, size_t n, float *a, uint64_t seed, uint64_t stream);

/* The judge of one run. x and y are the arrays the step read (x[0..n),
 * y[0..n), y only for step 5), out the output layout (VEC_GUARD words,
 * out's n words, VEC_GUARD words). Copies are exact; the scale-add is
 * within the bound of a rounding of a * x and one of the sum (so fmaf, a
 * * x + y in float, and the sum in double all pass). Returns 1 when
 * right; else 0 and, in msg, what is wrong and its likely cause. */
int vectorized_judge(int step, const uint32_t *x, const uint32_t *y, float a, size_t n, unsigned off,
                     const uint32_t *out, char *msg, size_t cap);
/* The bound vectorized_judge allows an element of the scale-add, and its
 * exact value (a * x is exact in double; the sum rounds once there). */
double vectorized_scale_add_bound(float a, float x, float y, double *exact);

/* Device buffers of one run: x, y (step 5) and out, each a guarded
 * cml_dbuf with `room` (0..3) spare elements in front, so that a step can
 * run at any element offset up to room. x[k] lives at element k of the
 * payload: a step at offset off reads x + off (the host's x_host + off),
 * and out + off + VEC_GUARD is its out (the payload: room + 2 VEC_GUARD + n
 * words, all poisoned). */
typedef struct vectorized_buffers {
    size_t n;
    unsigned room, off; /* off: the offset steps 4 and 5 run at (<= room) */
    float a;
    cml_dbuf x, y, out;
} vectorized_buffers;

/* x_host and y_host: room + n floats each (y_host may be NULL: no step 5). */
cudaError_t vectorized_buffers_alloc(vectorized_buffers *b, size_t n, unsigned room, unsigned off, float a,
                                     const float *x_host, const float *y_host);
void vectorized_buffers_free(vectorized_buffers *b);

/* In vectorized_call.c, the one place that calls the lab's kernels. */
cudaError_t vectorized_run_step(vectorized_buffers *b, int step);
/* Every word of out's payload to VEC_POISON. */
cudaError_t vectorized_poison(vectorized_buffers *b);

typedef struct vectorized_result {
    cudaError_t err;   /* a CUDA error (then nothing else is set) */
    int guards_intact;
    char guard_msg[200];
} vectorized_result;

/* After a launch of step: waits, copies its output layout (VEC_GUARD +
 * n + VEC_GUARD words) into layout and checks the buffers' guards. Returns
 * 1 when no CUDA error and every guard is intact. */
int vectorized_fetch(vectorized_buffers *b, int step, uint32_t *layout, vectorized_result *res);
/* One checked run: poison, launch, fetch. */
int vectorized_run_checked(vectorized_buffers *b, int step, uint32_t *layout, vectorized_result *res);

#ifdef __cplusplus
}
#endif
#endif
