/* cml_timing.h: event timing with warm-up and the median of many runs. */
#ifndef CML_TIMING_H
#define CML_TIMING_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The work to time: enqueues GPU work on the default stream and returns the
 * first error it met. */
typedef cudaError_t (*cml_work_fn)(void *ctx);

typedef struct cml_timing {
    double median_ms, min_ms, max_ms;
    int runs;
} cml_timing;

/* Runs fn warmup times untimed, then repeat times each between two CUDA
 * events, and reports the median (and extremes) of the event times. */
cudaError_t cml_time_median(cml_work_fn fn, void *ctx, int warmup, int repeat, cml_timing *t);

/* Median of v[0..n) (sorts v in place). */
double cml_median(double *v, int n);

#ifdef __cplusplus
}
#endif
#endif
