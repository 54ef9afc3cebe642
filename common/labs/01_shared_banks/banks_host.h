/* banks_host.h: lab 01's host support: the access patterns the probe
 * measures, the data and CPU reference of the A*B^T steps, and the checks
 * the tests and the runner share. Nothing here calls your code except
 * banks_call.c. */
#ifndef BANKS_HOST_H
#define BANKS_HOST_H

#include <stddef.h>
#include <stdint.h>

#include <cml/cml_buffer.h>
#include "banks.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The patterns of the probe: X(identifier, what lane i reads). The word
 * each lane reads is banks_pattern_word(). */
#define BANKS_PATTERNS(X)                                                     \
    X(stride_1, "word i: 32 consecutive words")                               \
    X(stride_2, "word 2i")                                                    \
    X(stride_4, "word 4i")                                                    \
    X(stride_8, "word 8i")                                                    \
    X(stride_16, "word 16i")                                                  \
    X(stride_32, "word 32i: every lane in bank 0")                            \
    X(stride_33, "word 33i: an odd stride")                                   \
    X(broadcast, "word 7 for every lane")                                     \
    X(tile_row, "float tile[32][32], row 5: tile[5][i]")                      \
    X(tile_column, "float tile[32][32], column 5: tile[i][5]")                \
    X(padded_column, "float tile[32][33], column 5: tile[i][5]")              \
    X(swizzled_column, "tile[32][32] swizzled, column 5: tile[i][5 ^ i]")

#define BANKS_PATTERN_ENUM(id, what) BANKS_PATTERN_##id,
typedef enum { BANKS_PATTERNS(BANKS_PATTERN_ENUM) BANKS_NUM_PATTERNS } banks_pattern;
#undef BANKS_PATTERN_ENUM

extern const char *const banks_pattern_names[BANKS_NUM_PATTERNS];
extern const char *const banks_pattern_whats[BANKS_NUM_PATTERNS];

/* The 4-byte word lane reads in pattern p (always < BANKS_PROBE_MAX_WORD). */
unsigned banks_pattern_word(banks_pattern p, int lane);
/* The 32 byte addresses of pattern p, for the model. */
void banks_pattern_addresses(banks_pattern p, uint32_t addr[BANKS_WARP]);

/* The model's view of every pattern, for `banks_run --model` and the runner
 * without a GPU: the banks bank() gives lanes 0-7 (step 1) and the
 * wavefronts degree() gives (steps 2-3), '?' where they give no answer,
 * then a line saying which step the '?' waits for. The functions are the
 * student's bank_of and conflict_degree (passed in: the tests pass their
 * own). Writes the text into out; returns how many answers were '?'. */
int banks_model_table(int (*bank)(uint32_t byte_address),
                      int (*degree)(const uint32_t byte_address[BANKS_WARP], int access_bytes), char *out,
                      size_t len);

/* ------------------------------------------------------------ the probe */

/* What the probe of pattern p must leave in sums[t] after `rounds` rounds:
 * the sum (mod 2^32) of every word thread t reads. */
unsigned banks_probe_expected_sum(banks_pattern p, int lane, int rounds);

/* One probe run's buffers on the GPU, and its outcome. */
typedef struct banks_probe_buffers {
    cml_dbuf lane_word;  /* 32 unsigned */
    cml_dbuf start, stop; /* BANKS_PROBE_WARPS long long each */
    cml_dbuf sums;       /* one unsigned per thread */
} banks_probe_buffers;

cudaError_t banks_probe_alloc(banks_probe_buffers *b);
void banks_probe_free(banks_probe_buffers *b);

/* The result of one checked probe run. */
typedef struct banks_probe_result {
    int ok;                  /* sums, clocks and guards all right */
    char why[240];           /* what is wrong, when !ok */
    double cycles_per_access; /* SM cycles per warp-wide load: the block's span
                                 (last stop - first start) / (warps x loads per warp) */
} banks_probe_result;

/* Runs the probe (banks_call.c) of pattern p with `rounds` rounds on
 * poisoned outputs and checks it. Returns the CUDA error, if any (then
 * r->ok = 0). */
cudaError_t banks_probe_run(banks_probe_buffers *b, banks_pattern p, int rounds, banks_probe_result *r);

/* ------------------------------------------------------------ A*B^T */

typedef enum { BANKS_DATA_REALS, BANKS_DATA_SMALL_INTS } banks_data;

/* batch 32x32 matrices: uniform reals in [-1, 1), or integers in [-8, 8]
 * (products and sums exact in float). Seeded: the same seed and stream give
 * the same data. */
void banks_make_matrices(float *m, int batch, banks_data kind, uint64_t seed, uint64_t stream);

/* C_m = A_m * B_m^T in double; abs_c gets sum over k of |A[i][k] B[j][k]|
 * per element (for the error bound). Either output may be NULL. */
void banks_cpu_abt(const float *a, const float *b, int batch, double *c, double *abs_c);

/* The float error bound of one element: 32 multiply-adds in order, each
 * rounding once, err <= 32 u sum|a b| (u = 2^-24), plus a tiny absolute
 * term for the all-zero case. */
double banks_abt_tolerance(double abs_sum);

/* Device buffers of one A*B^T run: a, b, c with guard zones. */
typedef struct banks_abt_buffers {
    int batch;
    cml_dbuf a, b, c;
} banks_abt_buffers;

cudaError_t banks_abt_alloc(banks_abt_buffers *d, int batch);
void banks_abt_free(banks_abt_buffers *d);
/* Poisons c (a NaN pattern no product gives) and runs the step. */
cudaError_t banks_abt_run(banks_abt_buffers *d, int step);

/* One checked A*B^T run: poisons c, runs the step, fetches c into c_out
 * (batch * 1024 floats), checks the guards of c, a and b and compares c
 * with the reference (ref, abs_ref from banks_cpu_abt of a and b). */
typedef struct banks_abt_result {
    cudaError_t err;          /* a CUDA error (then nothing else is set) */
    int guards_intact;
    char guard_msg[240];      /* when not intact: which buffer, where, the likely cause */
    size_t wrong;             /* elements of c outside their bound */
    char report[1200];        /* the first max_reports of them (banks_abt_check) */
} banks_abt_result;

/* Returns 1 when c is right and nothing outside a, b, c was written (in
 * banks_call.c; the tests and the runner both use it). */
int banks_abt_run_checked(banks_abt_buffers *d, int step, const float *a, const float *b, const double *ref,
                          const double *abs_ref, float *c_out, int max_reports, banks_abt_result *res);
/* Its second half, after banks_abt_run (the runner's timed repeats). */
int banks_abt_verify(banks_abt_buffers *d, int step, const float *a, const float *b, const double *ref,
                     const double *abs_ref, float *c_out, int max_reports, banks_abt_result *res);

/* Checks c (downloaded, batch*1024 floats) against the reference; writes up
 * to max_reports lines "matrix m, C[i][j]: expected E, got G (likely
 * cause)" into report (size len). Returns the number of wrong elements. */
size_t banks_abt_check(int step, const float *a, const float *b, const float *c, const double *ref,
                       const double *abs_ref, int batch, int max_reports, char *report, size_t len);

/* Why C[i][j] of one matrix (am, bm: that matrix's A and B) holds got
 * instead of want: never written (either poison below), A*B instead of
 * A*B^T, or the step's likely slip. banks_abt_check's and the lab's spec's
 * (labs/01_shared_banks/spec.c) diagnosis. */
const char *banks_abt_likely_cause(int step, const float *am, const float *bm, int i, int j, float got, double want);

/* The poison c holds before a run. */
#define BANKS_POISON 0x7fc0dead
/* The kit-only harness's poison (0xff bytes, harness.c): C never written there. */
#define BANKS_HARNESS_POISON 0xffffffffu

#ifdef __cplusplus
}
#endif
#endif /* BANKS_HOST_H */
