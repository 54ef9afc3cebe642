/* transpose_host.h: the known-good host side of lab 06, shared by its
 * runner and tests: data, CPU transpose, the check with its diagnosis, and
 * the guarded device buffers one run needs. */
#ifndef TRANSPOSE_HOST_H
#define TRANSPOSE_HOST_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include <cml/cml_buffer.h>
#include "transpose.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Poison written to all of out before every run: a quiet NaN, which no
 * element of the data ever is. */
#define TR_POISON_BITS 0x7FC0BAD0u
/* The grader's harness poisons out with 0xff bytes (harness.h), also a NaN:
 * the check reads either as never written. */
#define TR_HARNESS_POISON_BITS 0xFFFFFFFFu
/* Guard value around in (1e6f, outside the data's range): a kernel that
 * reads past either end of in copies it into out, and the check names it. */
#define TR_IN_GUARD_BITS 0x49742400u
/* Guard value around out. */
#define TR_OUT_GUARD_BITS 0xA5A5A5A5u

/* What a step must compute: step 1 copies, the others transpose. */
typedef enum { TR_TRANSPOSE, TR_COPY } tr_mode;
tr_mode tr_step_mode(int step);

/* Seeded data with a distinct value at every index below 2^28 (a seeded
 * bijection of the index onto floats of magnitude in [2^-7, 2^9), either
 * sign), so any element in a wrong place shows, and the check can tell
 * where a wrong value came from. Larger arrays repeat with period 2^28. */
void tr_make_data(float *a, size_t n, uint64_t seed, uint64_t stream);

/* CPU transpose: out (cols x rows) = in (rows x cols) transposed. */
void tr_cpu_transpose(const float *in, float *out, int rows, int cols);

/* Why one element of out is wrong, from its value (most specific first). */
typedef enum {
    TR_CAUSE_GUARD_VALUE,       /* holds in's guard value: a read past the end of in */
    TR_CAUSE_TILE_NOT_MOVED,    /* the tile was transposed but written at its own block position */
    TR_CAUSE_TILE_NOT_FLIPPED,  /* the tile went to the right place, untransposed inside */
    TR_CAUSE_NOT_TRANSPOSED,    /* out[k] == in[k]: copied, not transposed */
    TR_CAUSE_UNWRITTEN,         /* still the poison: never written */
    TR_CAUSE_OTHER,             /* a race or a wrong index */
    TR_NUM_CAUSES
} tr_cause;

/* out(i, j) holds the bits `got` instead of what `mode` expects: the likely
 * cause. For TR_TRANSPOSE, out is cols x rows and i < cols, j < rows; for
 * TR_COPY, out is rows x cols. */
tr_cause tr_classify(const float *in, int rows, int cols, tr_mode mode, int i, int j, uint32_t got);

/* One sentence naming the cause and the likely fix. */
const char *tr_cause_text(tr_cause cause);

#define TR_MAX_REPORTED 4

typedef struct tr_mismatch {
    int row, col;    /* position in out */
    float expected;
    float got;
} tr_mismatch;

typedef struct tr_check {
    int rows, cols;                   /* of in */
    tr_mode mode;
    size_t checked, wrong;
    size_t by_cause[TR_NUM_CAUSES];
    int reported;
    tr_mismatch first[TR_MAX_REPORTED];  /* the first few, in out's row-major order */
} tr_check;

/* Compares out (as computed by a step of `mode` from in) bit for bit with
 * what it must hold. Returns the number of wrong elements. */
size_t tr_compare(const float *in, const float *out, int rows, int cols, tr_mode mode, tr_check *chk);

/* The likely cause of the wrong elements: the guard value if any holds it,
 * else the cause of the most wrong elements, the more specific one on a tie
 * (TR_CAUSE_OTHER when none is wrong). */
tr_cause tr_likely_cause(const tr_check *chk);

/* "3 of 777000 elements of out are wrong (3 never written): out(0, 32)
 * expected 1.5, got nan; ... Likely cause: ..." into buf. Returns buf. */
char *tr_describe(const tr_check *chk, char *buf, size_t len);

/* Device buffers for one rows x cols transpose, each with guard zones
 * (cml_buffer.h). */
typedef struct tr_buffers {
    int rows, cols;
    cml_dbuf in, out;
} tr_buffers;

cudaError_t tr_buffers_alloc(tr_buffers *b, int rows, int cols);
void tr_buffers_free(tr_buffers *b);
/* Copies rows * cols floats of host data into in. */
cudaError_t tr_upload(tr_buffers *b, const float *host);
/* Calls the student's (or reference) transpose_step (transpose_call.c). */
cudaError_t tr_run_step(tr_buffers *b, int step);

/* One run with its guards checked: poisons out, runs the step, fetches out
 * into host_out (rows * cols floats) and checks the guards; what out must
 * hold is the spec's judge (labs/06_transpose/spec.c) or tr_compare. */
typedef struct tr_result {
    cudaError_t err;       /* a CUDA error (then nothing else is set) */
    int guards_intact;
    char guard_msg[200];   /* when not intact: which buffer, where, and the likely cause */
    tr_check check;
} tr_result;

/* Returns 1 when nothing outside out was touched (res->check is not set).
 * (In transpose_call.c, with tr_run_step.) */
int tr_run_guarded(tr_buffers *b, int step, float *host_out, tr_result *res);
/* The two halves of a checked run around a launch (the runner's timed
 * repeats): poison all of out; then wait, fetch out, check the guards and
 * compare (tr_compare): 1 when out is exactly right and nothing outside it
 * was touched. */
cudaError_t tr_poison(tr_buffers *b);
int tr_verify(tr_buffers *b, int step, const float *host_in, float *host_out, tr_result *res);

#ifdef __cplusplus
}
#endif
#endif
