/* The one place the host side calls the lab's kernels, and the checked run
 * built on it (kept apart so that host-only tests link without a kernel
 * file). */
#include "shared_sort_host.h"

#include <stdio.h>
#include <string.h>

cudaError_t ss_run_step(ss_buffers *b, int step)
{
    return shared_sort_step(step, (const unsigned *)b->in.ptr, (unsigned *)b->out.ptr, (unsigned *)b->scratch.ptr,
                            b->n, b->width);
}

cudaError_t ss_poison(ss_buffers *b)
{
    cudaError_t err = cml_dbuf_fill32(&b->out, SS_POISON);
    return err == cudaSuccess ? cml_dbuf_fill32(&b->scratch, SS_POISON) : err;
}

int ss_run_checked(ss_buffers *b, int step, const uint32_t *host_in, uint32_t *host_out, ss_result *res)
{
    cudaError_t err = ss_poison(b);
    if (err == cudaSuccess)
        err = ss_run_step(b, step);
    if (err != cudaSuccess) {
        memset(res, 0, sizeof *res);
        res->err = err;
        return 0;
    }
    return ss_verify(b, step, host_in, host_out, res);
}

int ss_verify(ss_buffers *b, int step, const uint32_t *host_in, uint32_t *host_out, ss_result *res)
{
    memset(res, 0, sizeof *res);
    cudaError_t err = cudaDeviceSynchronize();
    if (err == cudaSuccess)
        err = cudaMemcpy(host_out, b->out.ptr, b->n * sizeof(uint32_t), cudaMemcpyDeviceToHost);
    /* out first: writing past it is the likelier mistake; in is only read */
    static const char *names[3] = {"out", "scratch", "in, its input"};
    const cml_dbuf *bufs[3] = {&b->out, &b->scratch, &b->in};
    int bad = -1;
    long long where = 0;
    if (err == cudaSuccess)
        err = cml_dbufs_check_guards(bufs, 3, &bad, &where);
    if (err != cudaSuccess) {
        res->err = err;
        return 0;
    }
    res->guards_intact = bad < 0;
    if (bad >= 0)
        snprintf(res->guard_msg, sizeof res->guard_msg,
                 "the kernel writes outside %s, at byte offset %lld (%s): a place past n written without a "
                 "check (a partial tile's pads, or a merge thread past the end)",
                 names[bad], where, where < 0 ? "before the first element" : "past the last element");
    ss_compare(host_in, host_out, b->n, step, b->width, &res->check);
    return res->guards_intact && res->check.wrong == 0;
}
