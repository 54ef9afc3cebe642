/* constmem_host.h: the known-good host side of lab 02, shared by its runner
 * and tests: data, the CPU references (the walk's sums, the convolution in
 * double), the checks with their diagnoses, and the guarded device buffers
 * one run needs. */
#ifndef CONSTMEM_HOST_H
#define CONSTMEM_HOST_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include <cml/cml_buffer.h>
#include "constmem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Poison written to every output before a run: a quiet NaN no result is. */
#define CM_POISON_BITS 0x7FC0BAD0u
/* The kit-only harness (common/labs/02_constant_memory/harness.c) poisons
 * with 0xff bytes instead: a NaN too. Either one is "never written". */
#define CM_HARNESS_POISON_BITS 0xFFFFFFFFu
static inline int cm_is_poison(uint32_t bits) { return bits == CM_POISON_BITS || bits == CM_HARNESS_POISON_BITS; }
/* Guard values around the inputs (1e6f) and the outputs. */
#define CM_IN_GUARD_BITS 0x49742400u
#define CM_OUT_GUARD_BITS 0xA5A5A5A5u
/* Table entries are nonzero integers in [-CM_TABLE_MAX, CM_TABLE_MAX]: every
 * sum of a walk (at most 128 * 32 reads) is an integer below 2^24 in
 * magnitude, exact in float whatever the order of the additions, so the
 * check is exact. */
#define CM_TABLE_MAX 4096

/* The d values of a sweep: d = 2^k for slice k. */
#define CM_NUM_D 6
static inline int cm_d(int k) { return 1 << k; }

/* Where the diagnosis of wrong pixels looks for tile edges: every 32
 * columns and 64 rows. The reference convolution's tiles (constmem.cu) are
 * 128 x 64 pixels, so each of their edges is one of these; so is each edge
 * of a 32 x 64 tile (the reference's before, a student's own). */
#define CM_TILE_W 32
#define CM_TILE_H 64

/* What a step runs. */
typedef enum { CM_LOOKUP, CM_CONV } cm_kind;
cm_kind cm_step_kind(int step);
/* The number of d values of a lookup step's sweep (steps 2-4: all six;
 * steps 1 and 5: d = 1 only). */
int cm_step_nd(int step);
/* The pattern slice k of a lookup step's sweep is checked against: d = 2^k,
 * or CM_COEFFS for step 1. */
int cm_step_pattern(int step, int k);
/* The walk a lookup step reads in the runner's rows (1: the big one). */
int cm_step_big(int step);

/* ------------------------------------------------------------ data */

/* Seeded data: table entries as above; image pixels and filter weights
 * uniform in [-1, 1). */
void cm_make_table(float *t, size_t n, uint64_t seed, uint64_t stream);
/* The walk's signs (constmem.h): 32 seeded random bits. Drawn after the
 * upload, so that nothing the upload computes knows them. */
unsigned cm_make_signs(uint64_t seed, uint64_t stream);
void cm_make_image(float *a, size_t n, uint64_t seed, uint64_t stream);
void cm_make_filter(float *w, int radius, uint64_t seed, uint64_t stream);
static inline int cm_taps(int radius) { return (2 * radius + 1) * (2 * radius + 1); }

/* ------------------------------------------------------------ the walk */

/* d = CM_COEFFS stands for step 1's pattern (constmem.h) where a d is asked. */
#define CM_COEFFS 0

/* The sum thread t must write (constmem.h, "the walk"), in double (exact):
 * table is the small table (big = 0) or the big one (big = 1), read k of
 * every pass subtracted where bit k of signs is set; with d = CM_COEFFS,
 * step 1's coefficient sum of the small table instead. */
double cm_walk_sum(const float *table, int big, int d, int t, int passes, unsigned signs);

typedef enum {
    CM_LK_UNWRITTEN,        /* still the poison */
    CM_LK_EMPTY_TABLE,      /* every sum is 0: the table in constant memory was never filled */
    CM_LK_LANE_ADDRESSES,   /* a warp's lanes read more different entries than d */
    CM_LK_SIGNS_IGNORED,    /* the wrong sums are the walk's with every read added */
    CM_LK_OTHER,            /* wrong entries */
    CM_LK_NUM_CAUSES
} cm_lookup_cause;

#define CM_MAX_REPORTED 4

typedef struct cm_lookup_check {
    int d, big, passes, threads;   /* d = CM_COEFFS: step 1's pattern */
    unsigned signs;
    size_t checked, wrong, unwritten;
    size_t unsigned_sums;    /* wrong sums that are the walk's with signs 0 (signs != 0 only) */
    size_t lane_warps;       /* full warps whose sums take more values than the pattern allows */
    int all_zero;            /* every output is 0 */
    int reported;
    struct {
        int t;
        double expected;
        float got;
    } first[CM_MAX_REPORTED];
} cm_lookup_check;

/* Compares the sums of threads threads with the walk's (signs as in
 * cm_walk_sum). Returns the number of wrong ones. */
size_t cm_lookup_compare(const float *table, int big, int d, int passes, unsigned signs, const float *out,
                         int threads, cm_lookup_check *chk);
cm_lookup_cause cm_lookup_likely_cause(const cm_lookup_check *chk);
const char *cm_lookup_cause_text(cm_lookup_cause cause);
/* "3 of 4096 sums wrong (d = 4, ...): out[0] expected 1234, got 0; ...
 * Likely cause: ..." into buf. Returns buf. */
char *cm_lookup_describe(const cm_lookup_check *chk, char *buf, size_t len);

/* Why an upload into constant memory failed (the CUDA error's likely cause). */
const char *cm_upload_error_text(void);

/* ------------------------------------------------------------ the convolution */

/* Pixel (y, x) of the convolution (constmem.h) in double, and the sum of
 * the magnitudes of its terms through *mag (for the tolerance). */
double cm_conv_pixel(const float *in, int width, int height, const float *w, int radius, int y, int x, double *mag);
/* The float tolerance of a pixel: float sums of `taps` products err by at
 * most about taps * 2^-24 of the sum of magnitudes; twice that, plus 1e-6. */
double cm_conv_tolerance(int taps, double mag);
/* A bound for every pixel of an image at once: any float sum of `taps`
 * products (any order, fused or not) is within gamma_taps * sum|w| * max|in|
 * of the exact sum, and the double reference within gamma_taps for double
 * (Higham's gamma_n = n u / (1 - n u)). */
double cm_conv_image_tolerance(const float *in, size_t pixels, const float *w, int radius);

typedef enum {
    CM_CV_UNWRITTEN,     /* still the poison */
    CM_CV_LEFT_EDGE,     /* only columns x < r: reading before the image at x = 0 */
    CM_CV_BORDER,        /* only within r of the image's border */
    CM_CV_HALO,          /* only within r of a tile edge, inside the image too: the halo */
    CM_CV_SUM,           /* everywhere: the sum itself (taps, radius, filter index) or a race */
    CM_CV_NUM_CAUSES
} cm_conv_cause;

typedef struct cm_conv_check {
    int width, height, radius;
    size_t checked, wrong, unwritten;
    int all_left, all_border, all_tile_edge;  /* over the wrong pixels that were written */
    int reported;
    struct {
        int y, x;
        double expected;
        float got;
    } first[CM_MAX_REPORTED];
} cm_conv_check;

size_t cm_conv_compare(const float *in, int width, int height, const float *w, int radius, const float *out,
                       cm_conv_check *chk);
/* The same with every pixel's tolerance at most `most` (0: exact, for
 * integer-valued data whose every sum is exact in float). */
size_t cm_conv_compare_within(const float *in, int width, int height, const float *w, int radius, const float *out,
                              double most, cm_conv_check *chk);
cm_conv_cause cm_conv_likely_cause(const cm_conv_check *chk);
const char *cm_conv_cause_text(cm_conv_cause cause);
char *cm_conv_describe(const cm_conv_check *chk, char *buf, size_t len);

/* ------------------------------------------------------------ device buffers */

/* The walk's buffers: global copies of both tables (steps 3, 4) and
 * `slices` slices of `threads` sums (a sweep's CM_NUM_D, or one). */
typedef struct cm_lookup_buffers {
    int threads, slices;
    cml_dbuf table, big, out;
} cm_lookup_buffers;

cudaError_t cm_lookup_alloc(cm_lookup_buffers *b, int threads);   /* CM_NUM_D slices */
cudaError_t cm_lookup_alloc_slices(cm_lookup_buffers *b, int threads, int slices);
void cm_lookup_free(cm_lookup_buffers *b);
/* The global copies of both tables. */
cudaError_t cm_lookup_upload_globals(cm_lookup_buffers *b, const float *table, const float *big);
cudaError_t cm_lookup_poison(cm_lookup_buffers *b);

typedef struct cm_lookup_result {
    cudaError_t err;
    int guards_intact;
    char guard_msg[200];
    int nd;                              /* slices checked */
    cm_lookup_check check[CM_NUM_D];
} cm_lookup_result;

/* After a poison and a launch: every slice into host_out (slices * threads
 * floats) and the guards checked (res's err, guards_intact, guard_msg).
 * Returns 1 when the guards are intact. */
int cm_lookup_fetch(cm_lookup_buffers *b, float *host_out, cm_lookup_result *res);
/* After a poison and a sweep with signs: fetch the step's slices into
 * host_out (CM_NUM_D * threads floats), check the guards, compare. Returns
 * 1 when all is right. */
int cm_lookup_verify(cm_lookup_buffers *b, int step, int big, int passes, unsigned signs, const float *table,
                     const float *big_table, float *host_out, cm_lookup_result *res);

/* The image's buffers and the filter's global copy. */
typedef struct cm_conv_buffers {
    int width, height;
    cml_dbuf in, out, w;
} cm_conv_buffers;

cudaError_t cm_conv_alloc(cm_conv_buffers *b, int width, int height);
void cm_conv_free(cm_conv_buffers *b);
cudaError_t cm_conv_upload_image(cm_conv_buffers *b, const float *img);
/* The filter's global copy (step 7); constant memory is cm_call_upload_filter's. */
cudaError_t cm_conv_upload_filter_global(cm_conv_buffers *b, const float *w, int radius);
cudaError_t cm_conv_poison(cm_conv_buffers *b);

typedef struct cm_conv_result {
    cudaError_t err;
    int guards_intact;
    char guard_msg[200];
    cm_conv_check check;
} cm_conv_result;

/* After a poison and a launch: out into host_out and the guards checked
 * (res's err, guards_intact, guard_msg). Returns 1 when they are intact. */
int cm_conv_fetch(cm_conv_buffers *b, float *host_out, cm_conv_result *res);
int cm_conv_verify(cm_conv_buffers *b, const float *img, const float *w, int radius, float *host_out,
                   cm_conv_result *res);

/* ------------------------------------------------------------ calls into constmem.cu (constmem_call.c) */

cudaError_t cm_call_upload_tables(const float *table, const float *big);
cudaError_t cm_call_upload_filter(const float *w, int radius);
/* One walk of step with d, big and signs into slice `slice` of out. */
cudaError_t cm_lookup_launch_one(cm_lookup_buffers *b, int step, int d, int big, int passes, unsigned signs,
                                 int slice);
/* The step's sweep: every d of cm_step_nd(step), slice k for d = 2^k. */
cudaError_t cm_lookup_launch(cm_lookup_buffers *b, int step, int big, int passes, unsigned signs);
/* Step 1's code with the table read through __ldg from its global copy
 * (coeff_anchor.cu): the same reads, in global memory, into slice 0. */
cudaError_t cm_anchor_coeffs_ldg(cm_lookup_buffers *b, int passes, unsigned signs);
/* One convolution of step with the filter w (host) of radius. */
cudaError_t cm_conv_launch(cm_conv_buffers *b, int step, const float *w, int radius);

#ifdef __cplusplus
}
#endif
#endif
