/* The one place the host side calls the lab's kernels, and the checked run
 * built on it (kept apart so that the host-only tests link without any
 * kernel file). */
#include "matmul_host.h"

#include <stdio.h>
#include <string.h>

cudaError_t mm_run_step(mm_buffers *b, int step)
{
    return matmul_step(step, (const float *)b->a.ptr, (const float *)b->b.ptr, (float *)b->c.ptr, b->M, b->N,
                       b->K);
}

/* Checks the guards of C, A and B; fills res->guards_intact and guard_msg. */
static cudaError_t check_guards(mm_buffers *b, mm_result *res)
{
    static const char *names[3] = {"C", "A, an input", "B, an input"};
    const cml_dbuf *bufs[3] = {&b->c, &b->a, &b->b};
    int bad = -1;
    long long where = 0;
    cudaError_t err = cml_dbufs_check_guards(bufs, 3, &bad, &where);
    res->guards_intact = bad < 0;
    if (err == cudaSuccess && bad >= 0)
        snprintf(res->guard_msg, sizeof res->guard_msg,
                 "the kernel writes outside %s, at byte offset %lld (%s): a store without a bounds check "
                 "(the block tiles on the right and bottom edges hang over C)",
                 names[bad], where, where < 0 ? "before the first element" : "past the last element");
    return err;
}

int mm_run_checked(mm_buffers *b, int step, const mm_reference *ref, float *host_c, mm_result *res)
{
    cudaError_t err = mm_poison(b);
    if (err == cudaSuccess)
        err = mm_run_step(b, step);
    if (err != cudaSuccess) {
        memset(res, 0, sizeof *res);
        res->err = err;
        return 0;
    }
    return mm_verify(b, ref, host_c, res);
}

int mm_verify(mm_buffers *b, const mm_reference *ref, float *host_c, mm_result *res)
{
    memset(res, 0, sizeof *res);
    cudaError_t err = cudaDeviceSynchronize();
    if (err == cudaSuccess)
        err = cudaMemcpy(host_c, b->c.ptr, b->c.bytes, cudaMemcpyDeviceToHost);
    if (err == cudaSuccess)
        err = check_guards(b, res);
    if (err != cudaSuccess) {
        res->err = err;
        return 0;
    }
    mm_compare(ref, host_c, &res->check);
    return res->guards_intact && res->check.wrong == 0;
}
