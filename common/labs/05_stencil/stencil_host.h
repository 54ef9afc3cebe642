/* stencil_host.h: the known-good host side of lab 05, shared by its runner
 * and tests: data and coefficients, the CPU stencils in double, the check
 * with its diagnosis, and the device buffers one run needs. */
#ifndef STENCIL_HOST_H
#define STENCIL_HOST_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include <cml/cml_buffer.h>
#include "stencil.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Poison written to all of out before every run: a quiet NaN, which no
 * stencil of the data ever gives. */
#define ST_POISON_BITS 0x7FC0BAD0u
/* The value around in (2^20 = 1048576, far outside the data's range): a
 * kernel that reads just before or past in sums it into a point, and the
 * check names it. */
#define ST_IN_GUARD_BITS 0x49800000u
/* Guard value around out. */
#define ST_OUT_GUARD_BITS 0xA5A5A5A5u

/* The kit-only harness's layout (common/labs/05_stencil/harness.c, which
 * keeps its own copy): a case's data is the coefficients (ST_HEAD words)
 * and then the grid; a computed case's output is out with ST_GUARD words
 * before and after it, all poisoned with ST_HARNESS_POISON (0xff bytes)
 * before the launch. The lab's spec judges outputs in this layout (the
 * tests turn their runs' outputs into it). */
#define ST_HEAD (sizeof(stencil_coeffs) / sizeof(float))
#define ST_GUARD 64
#define ST_HARNESS_POISON 0xFFFFFFFFu

/* A grid: nx * ny * nz points, x fastest. */
typedef struct st_grid {
    int nx, ny, nz;
} st_grid;

/* 1, 2 or 3: the dimensions of a step's stencil (step 1 is 1D, step 2 2D,
 * the others 3D); 0 for a step outside the table. */
int st_step_dims(int step);
/* The stencil's radius for a step (STENCIL_R in 1D, else 1). */
int st_step_radius(int step);
/* 1 when the grid suits the step (1D: ny = nz = 1; 2D: nz = 1; 3D: ny, nz
 * <= 65535; all: nx * ny * nz < 2^31), the limits of stencil.h. */
int st_grid_fits(int step, st_grid g);
size_t st_points(st_grid g);

/* Seeded data: every value in [-1, -0.25] or [0.25, 1], so that every term
 * of a stencil counts, and a neighbour taken from the wrong cell or left out
 * changes the sum far beyond rounding. */
void st_make_data(float *a, size_t n, uint64_t seed, uint64_t stream);
/* Seeded coefficients, each of magnitude 0.1 to 1, either sign, any two of
 * one stencil at least 0.05 apart (a neighbour from the wrong side shows),
 * and a boundary value of magnitude 0.25 to 1 (never 0: a halo cell left
 * unwritten reads as 0 on many GPUs, and must not pass). */
void st_make_coeffs(stencil_coeffs *c, uint64_t seed);

/* The step's terms at (x, y, z) of in (the boundary value off the grid):
 * coefficient w[k] and value v[k] in the order of stencil.h (room for 9).
 * Returns their number (7, 9 or 7). */
int st_terms(int step, const stencil_coeffs *c, const float *in, st_grid g, int x, int y, int z, double *w,
             double *v);
/* The stencil of `step` at one point, in double, and the sum of the terms'
 * magnitudes (the scale of float rounding), from the host copy of in. */
double st_cpu_point(int step, const stencil_coeffs *c, const float *in, st_grid g, int x, int y, int z,
                    double *abs_sum);

/* Why a point of out is wrong (most specific first). */
typedef enum {
    ST_CAUSE_OUTSIDE_READ,  /* NaN, or 2^20 times a coefficient: a read just before or past in */
    ST_CAUSE_UNWRITTEN,     /* still the poison */
    ST_CAUSE_ROTATION,      /* 3D: the z - 1 neighbour is the point itself (register rotation) */
    ST_CAUSE_GRID_EDGE,     /* all wrong points lie within the radius of the grid's edge */
    ST_CAUSE_GRID_END,      /* ... of its far end only (last partial tile, early return) */
    ST_CAUSE_TILE_EDGE,     /* ... at tile borders inside the grid (x % 32, y % 8) */
    ST_CAUSE_OTHER,         /* a race or a wrong index */
    ST_NUM_CAUSES
} st_cause;

const char *st_cause_text(st_cause cause);

#define ST_MAX_REPORTED 4

typedef struct st_mismatch {
    int x, y, z;
    double expected;
    float got;
} st_mismatch;

typedef struct st_check {
    int step;
    st_grid grid;
    size_t checked, wrong;
    size_t outside_reads, unwritten, rotation;  /* counts by value */
    size_t at_edge, at_end, at_tile_edge;       /* counts by position, of the other wrong points */
    int reported;
    st_mismatch first[ST_MAX_REPORTED];
} st_check;

/* Compares out with the step's stencil of in (both host arrays of the
 * grid's size): each point within (terms + 1) * 2^-24 * sum |terms| of the
 * double result, the bound of a float sum of that many terms in any
 * order. Returns the number of wrong points. */
size_t st_compare(int step, const stencil_coeffs *c, const float *in, const float *out, st_grid g, st_check *chk);

/* What a wrong point's value tells. */
typedef enum {
    ST_WRONG_UNWRITTEN,     /* still the poison */
    ST_WRONG_OUTSIDE_READ,  /* NaN, or beyond any sum of the data: a read just before or past in */
    ST_WRONG_ROTATION,      /* 3D: the z - 1 term took the point's own value */
    ST_WRONG_OTHER          /* nothing: its position may */
} st_wrong;

/* The two halves of a comparison (st_compare's, and the lab's spec's exact
 * one, labs/05_stencil/spec.c): an empty check of the step's grid, then
 * each wrong point counted (by its value where that tells, else by where
 * it lies) and the first few kept. The caller sets chk->checked. */
void st_check_begin(st_check *chk, int step, st_grid g);
void st_check_wrong(st_check *chk, st_wrong what, int x, int y, int z, double expected, float got);
/* The likely cause of the wrong points (ST_CAUSE_OTHER when none is). */
st_cause st_likely_cause(const st_check *chk);
/* "3 of 1000 points of out are wrong (...): out(0, 0, 0) expected ..., got
 * ...; ... Likely cause: ..." into buf. Returns buf. */
char *st_describe(const st_check *chk, char *buf, size_t len);

/* Device buffers for one grid of up to `points` points. in lies in its
 * own allocation: on a GPU between guard zones holding 2^20 (a read just
 * outside it sums that in: the check names it); on the CPU path its first
 * element is the first byte of its allocation, right after a guard page, so
 * that in[-1] faults (the slack after its end holds 2^20 too). out has guard
 * zones that the check reads back. */
typedef struct st_buffers {
    size_t points;
    cml_dbuf in, out;
} st_buffers;

cudaError_t st_buffers_alloc(st_buffers *b, size_t points);
void st_buffers_free(st_buffers *b);
/* Copies n <= points floats of host data to the start of in (the rest of
 * in, if any, keeps the guard value: a grid smaller than the buffer still
 * reads 2^20 just past its end). */
cudaError_t st_upload(st_buffers *b, const float *host, size_t n);
/* Calls the student's (or reference) stencil_step (stencil_call.c). */
cudaError_t st_run_step(st_buffers *b, int step, st_grid g, const stencil_coeffs *c);

/* One checked run: poison out, run the step, fetch out, check the guards
 * and compare with the CPU. */
typedef struct st_result {
    cudaError_t err;       /* a CUDA error (then nothing else is set) */
    int guards_intact;
    char guard_msg[200];   /* when not intact: where, and the likely cause */
    st_check check;
} st_result;

/* Returns 1 when the step computed every point right and wrote nothing
 * outside out. host_in: the grid's data (as uploaded), host_out: room for
 * the grid's points. (In stencil_call.c, with st_run_step.) */
int st_run_checked(st_buffers *b, int step, st_grid g, const stencil_coeffs *c, const float *host_in,
                   float *host_out, st_result *res);
/* Its two halves around a launch (the runner's timed repeats). */
cudaError_t st_poison(st_buffers *b);
int st_verify(st_buffers *b, int step, st_grid g, const stencil_coeffs *c, const float *host_in, float *host_out,
              st_result *res);
/* st_verify's first half (the tests use it alone, and judge host_out with
 * the lab's spec): waits for the launch, fetches out into host_out and
 * checks out's guards (res->err, guards_intact, guard_msg; res->check left
 * empty). Returns 1 when no CUDA error came and the guards are intact. */
int st_fetch_checked(st_buffers *b, st_grid g, float *host_out, st_result *res);

#ifdef __cplusplus
}
#endif
#endif
