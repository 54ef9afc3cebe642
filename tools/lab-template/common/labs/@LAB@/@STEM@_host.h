/* @STEM@_host.h: the known-good host side of lab @LAB@, shared by its
 * runner and tests: data, the CPU result, the check, and the guarded device
 * buffers of one run. (Made by tools/new-lab: replace the example with the
 * lab's own.) */
#ifndef @STEM_UPPER@_HOST_H
#define @STEM_UPPER@_HOST_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include <cml/cml_buffer.h>
#include "@STEM@.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Written to all of out before every run: a quiet NaN no result ever is. */
#define @STEM_UPPER@_POISON_BITS 0x7FC0BAD0u
/* Guard patterns around in and out (cml_buffer.h). */
#define @STEM_UPPER@_IN_GUARD_BITS 0x49742400u
#define @STEM_UPPER@_OUT_GUARD_BITS 0xA5A5A5A5u

/* Seeded data in [-4, 4) and a seeded factor a in [0.5, 2). */
void @STEM@_make_data(float *in, size_t n, float *a, uint64_t seed, uint64_t stream);

/* What a step must compute, on the CPU. */
void @STEM@_cpu(const float *in, float *out, size_t n, float a);

/* The check: out must equal the CPU result bit for bit (one multiply per
 * element, no rounding freedom). */
typedef struct @STEM@_check {
    size_t checked, wrong, unwritten;
    size_t first;          /* index of the first wrong element */
    float expected, got;   /* at first */
} @STEM@_check;
size_t @STEM@_compare(const float *in, const float *out, size_t n, float a, @STEM@_check *chk);
/* "3 of 1000 elements of out are wrong (3 never written): out[997] expected 1.5, got nan" */
char *@STEM@_describe(const @STEM@_check *chk, char *buf, size_t len);

/* Device buffers of one run, each with guard zones. */
typedef struct @STEM@_buffers {
    size_t n;
    float a;
    cml_dbuf in, out;
} @STEM@_buffers;

cudaError_t @STEM@_buffers_alloc(@STEM@_buffers *b, size_t n, float a, const float *host_in);
void @STEM@_buffers_free(@STEM@_buffers *b);

/* In @STEM@_call.c, the one place that calls the lab's kernels. */
cudaError_t @STEM@_run_step(@STEM@_buffers *b, int step);

typedef struct @STEM@_result {
    cudaError_t err;       /* a CUDA error (then nothing else is set) */
    int guards_intact;
    char guard_msg[200];
    @STEM@_check check;
} @STEM@_result;

/* One checked run: poison, launch, verify. Returns 1 when out is exactly
 * right and nothing outside it was touched. The runner times the launch
 * between the two halves. */
int @STEM@_run_checked(@STEM@_buffers *b, int step, const float *host_in, float *host_out, @STEM@_result *res);
cudaError_t @STEM@_poison(@STEM@_buffers *b);
int @STEM@_verify(@STEM@_buffers *b, const float *host_in, float *host_out, @STEM@_result *res);

#ifdef __cplusplus
}
#endif
#endif
