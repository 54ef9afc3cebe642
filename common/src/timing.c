#include "cml/cml_timing.h"

#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cml_median(double *v, int n)
{
    if (n <= 0)
        return 0.0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

cudaError_t cml_time_median(cml_work_fn fn, void *ctx, int warmup, int repeat, cml_timing *t)
{
    cudaEvent_t start = NULL, stop = NULL;
    double *ms = NULL;
    cudaError_t err = cudaSuccess;
    if (repeat < 1)
        return cudaErrorInvalidValue;
    ms = (double *)malloc((size_t)repeat * sizeof *ms);
    if (ms == NULL)
        return cudaErrorMemoryAllocation;
    if ((err = cudaEventCreate(&start)) != cudaSuccess || (err = cudaEventCreate(&stop)) != cudaSuccess)
        goto done;
    for (int i = 0; i < warmup; ++i)
        if ((err = fn(ctx)) != cudaSuccess)
            goto done;
    if ((err = cudaDeviceSynchronize()) != cudaSuccess)
        goto done;
    for (int i = 0; i < repeat; ++i) {
        float elapsed = 0.0f;
        if ((err = cudaEventRecord(start, 0)) != cudaSuccess || (err = fn(ctx)) != cudaSuccess ||
            (err = cudaEventRecord(stop, 0)) != cudaSuccess ||
            (err = cudaEventSynchronize(stop)) != cudaSuccess ||
            (err = cudaEventElapsedTime(&elapsed, start, stop)) != cudaSuccess)
            goto done;
        ms[i] = elapsed;
    }
    t->runs = repeat;
    t->min_ms = t->max_ms = ms[0];
    for (int i = 1; i < repeat; ++i) {
        if (ms[i] < t->min_ms) t->min_ms = ms[i];
        if (ms[i] > t->max_ms) t->max_ms = ms[i];
    }
    t->median_ms = cml_median(ms, repeat);
done:
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    free(ms);
    return err;
}
