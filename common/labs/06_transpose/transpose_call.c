/* The one place the host side calls the lab's kernels, and the guarded run
 * built on it (kept apart so that the host-only tests link without any
 * kernel file). */
#include "transpose_host.h"

#include <stdio.h>
#include <string.h>

cudaError_t tr_run_step(tr_buffers *b, int step)
{
    return transpose_step(step, (const float *)b->in.ptr, (float *)b->out.ptr, b->rows, b->cols);
}

/* Checks the guards of in and out; fills res->guards_intact and guard_msg. */
static cudaError_t check_guards(tr_buffers *b, tr_result *res)
{
    /* out first: writing past it is the classic mistake; in is only read. */
    static const char *names[2] = {"out", "in, its input"};
    const cml_dbuf *bufs[2] = {&b->out, &b->in};
    int bad = -1;
    long long where = 0;
    cudaError_t err = cml_dbufs_check_guards(bufs, 2, &bad, &where);
    res->guards_intact = bad < 0;
    if (err == cudaSuccess && bad >= 0)
        snprintf(res->guard_msg, sizeof res->guard_msg,
                 "the kernel writes outside %s, at byte offset %lld (%s): a partial tile without bounds "
                 "checks (the tiles on the right and bottom edges hang over the matrix)",
                 names[bad], where, where < 0 ? "before the first element" : "past the last element");
    return err;
}

cudaError_t tr_poison(tr_buffers *b)
{
    return cml_dbuf_fill32(&b->out, TR_POISON_BITS);
}

/* After a launch: waits, fetches out into host_out and checks the guards. */
static cudaError_t fetch_guarded(tr_buffers *b, float *host_out, tr_result *res)
{
    memset(res, 0, sizeof *res);
    cudaError_t err = cudaDeviceSynchronize();
    if (err == cudaSuccess)
        err = cudaMemcpy(host_out, b->out.ptr, b->out.bytes, cudaMemcpyDeviceToHost);
    if (err == cudaSuccess)
        err = check_guards(b, res);
    res->err = err;
    return err;
}

int tr_run_guarded(tr_buffers *b, int step, float *host_out, tr_result *res)
{
    cudaError_t err = tr_poison(b);
    if (err == cudaSuccess)
        err = tr_run_step(b, step);
    if (err != cudaSuccess) {
        memset(res, 0, sizeof *res);
        res->err = err;
        return 0;
    }
    return fetch_guarded(b, host_out, res) == cudaSuccess && res->guards_intact;
}

int tr_verify(tr_buffers *b, int step, const float *host_in, float *host_out, tr_result *res)
{
    if (fetch_guarded(b, host_out, res) != cudaSuccess)
        return 0;
    tr_compare(host_in, host_out, b->rows, b->cols, tr_step_mode(step), &res->check);
    return res->guards_intact && res->check.wrong == 0;
}
