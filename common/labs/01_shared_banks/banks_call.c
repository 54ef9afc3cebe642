/* banks_call.c: the kit's calls into your banks.cu (kept apart so that the
 * host tests link without it). */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime.h>

#include "banks_host.h"

#define POISON_WORD 0xDEADBEEFu

cudaError_t banks_probe_run(banks_probe_buffers *b, banks_pattern p, int rounds, banks_probe_result *r)
{
    enum { THREADS = BANKS_PROBE_WARPS * BANKS_WARP };
    unsigned words[BANKS_WARP];
    long long start[BANKS_PROBE_WARPS], stop[BANKS_PROBE_WARPS];
    unsigned sums[THREADS];
    memset(r, 0, sizeof *r);
    for (int lane = 0; lane < BANKS_WARP; ++lane)
        words[lane] = banks_pattern_word(p, lane);

    cudaError_t err = cudaMemcpy(b->lane_word.ptr, words, sizeof words, cudaMemcpyHostToDevice);
    if (err == cudaSuccess)
        err = cml_dbuf_fill32(&b->start, POISON_WORD);
    if (err == cudaSuccess)
        err = cml_dbuf_fill32(&b->stop, POISON_WORD);
    if (err == cudaSuccess)
        err = cml_dbuf_fill32(&b->sums, POISON_WORD);
    if (err == cudaSuccess)
        err = banks_probe((const unsigned *)b->lane_word.ptr, rounds, (long long *)b->start.ptr,
                          (long long *)b->stop.ptr, (unsigned *)b->sums.ptr);
    if (err == cudaSuccess)
        err = cudaDeviceSynchronize();
    if (err == cudaSuccess)
        err = cudaMemcpy(start, b->start.ptr, sizeof start, cudaMemcpyDeviceToHost);
    if (err == cudaSuccess)
        err = cudaMemcpy(stop, b->stop.ptr, sizeof stop, cudaMemcpyDeviceToHost);
    if (err == cudaSuccess)
        err = cudaMemcpy(sums, b->sums.ptr, sizeof sums, cudaMemcpyDeviceToHost);
    if (err != cudaSuccess) {
        snprintf(r->why, sizeof r->why, "CUDA error: %s: %s", cudaGetErrorName(err), cudaGetErrorString(err));
        return err;
    }

    const cml_dbuf *guarded[] = {&b->start, &b->stop, &b->sums};
    const char *names[] = {"start", "stop", "sums"};
    int bad = -1;
    long long where = 0;
    err = cml_dbufs_check_guards(guarded, 3, &bad, &where);
    if (err != cudaSuccess)
        return err;
    if (bad >= 0) {
        snprintf(r->why, sizeof r->why, "a write outside %s (byte offset %lld): index by warp "
                 "(threadIdx.x / 32) for start/stop and by thread for sums", names[bad], where);
        return cudaSuccess;
    }
    for (int t = 0; t < THREADS; ++t) {
        unsigned expect = banks_probe_expected_sum(p, t % BANKS_WARP, rounds);
        if (sums[t] != expect) {
            snprintf(r->why, sizeof r->why, "sums[%d] = %u, expected %u (%s)", t, sums[t], expect,
                     sums[t] == POISON_WORD ? "never written"
                                            : "the thread read other words, or not every round");
            return cudaSuccess;
        }
    }
    long long first = 0, last = 0;
    for (int w = 0; w < BANKS_PROBE_WARPS; ++w) {
        if (stop[w] <= start[w]) {
            snprintf(r->why, sizeof r->why, "warp %d: stop %lld is not after start %lld (%s)", w, stop[w],
                     start[w], (unsigned)stop[w] == POISON_WORD ? "never written" : "clock64() read in the wrong place");
            return cudaSuccess;
        }
        if (w == 0 || start[w] < first)
            first = start[w];
        if (w == 0 || stop[w] > last)
            last = stop[w];
    }
    r->ok = 1;
    r->cycles_per_access = (double)(last - first) / ((double)BANKS_PROBE_WARPS * rounds * BANKS_PROBE_UNROLL);
    return cudaSuccess;
}

cudaError_t banks_abt_run(banks_abt_buffers *d, int step)
{
    cudaError_t err = cml_dbuf_fill32(&d->c, BANKS_POISON);
    if (err == cudaSuccess)
        err = banks_abt(step, (const float *)d->a.ptr, (const float *)d->b.ptr, (float *)d->c.ptr, d->batch);
    return err;
}

int banks_abt_run_checked(banks_abt_buffers *d, int step, const float *a, const float *b, const double *ref,
                          const double *abs_ref, float *c_out, int max_reports, banks_abt_result *res)
{
    cudaError_t err = banks_abt_run(d, step);
    if (err != cudaSuccess) {
        memset(res, 0, sizeof *res);
        res->err = err;
        return 0;
    }
    return banks_abt_verify(d, step, a, b, ref, abs_ref, c_out, max_reports, res);
}

int banks_abt_verify(banks_abt_buffers *d, int step, const float *a, const float *b, const double *ref,
                     const double *abs_ref, float *c_out, int max_reports, banks_abt_result *res)
{
    size_t bytes = (size_t)d->batch * BANKS_TILE * BANKS_TILE * sizeof(float);
    memset(res, 0, sizeof *res);
    cudaError_t err = cudaDeviceSynchronize();
    if (err == cudaSuccess)
        err = cudaMemcpy(c_out, d->c.ptr, bytes, cudaMemcpyDeviceToHost);
    /* c first: writing past it is the likely mistake; a and b are only read. */
    const cml_dbuf *guarded[] = {&d->c, &d->a, &d->b};
    const char *names[] = {"c", "a", "b"};
    int bad = -1;
    long long where = 0;
    if (err == cudaSuccess)
        err = cml_dbufs_check_guards(guarded, 3, &bad, &where);
    if (err != cudaSuccess) {
        res->err = err;
        return 0;
    }
    res->guards_intact = bad < 0;
    if (bad >= 0)
        snprintf(res->guard_msg, sizeof res->guard_msg,
                 "a write outside %s (byte offset %lld of %zu): an index past the matrix, or a block that "
                 "handles a matrix that does not exist", names[bad], where, bytes);
    res->wrong = banks_abt_check(step, a, b, c_out, ref, abs_ref, d->batch, max_reports, res->report,
                                 sizeof res->report);
    return res->guards_intact && res->wrong == 0;
}
