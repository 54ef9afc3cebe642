/* The one place the host side calls the lab's kernels, and the checked run
 * built on it (kept apart so that host-only tests link without a kernel
 * file). */
#include "vectorized_host.h"

#include <stdio.h>
#include <string.h>

cudaError_t vectorized_run_step(vectorized_buffers *b, int step)
{
    size_t off = vectorized_step_offset(step, b->off);
    const float *x = (const float *)b->x.ptr + off;
    const float *y = vectorized_kind(step) == VEC_SCALE_ADD ? (const float *)b->y.ptr + off : NULL;
    float *out = (float *)b->out.ptr + off + VEC_GUARD;
    return vectorized_step(step, x, y, out, b->n, vectorized_kind(step) == VEC_SCALE_ADD ? b->a : 0.0f);
}

cudaError_t vectorized_poison(vectorized_buffers *b)
{
    return cml_dbuf_fill32(&b->out, VEC_POISON);
}

int vectorized_fetch(vectorized_buffers *b, int step, uint32_t *layout, vectorized_result *res)
{
    memset(res, 0, sizeof *res);
    size_t off = vectorized_step_offset(step, b->off);
    cudaError_t err = cudaDeviceSynchronize();
    if (err == cudaSuccess)
        err = cudaMemcpy(layout, (const uint32_t *)b->out.ptr + off, (2 * VEC_GUARD + b->n) * sizeof *layout,
                         cudaMemcpyDeviceToHost);
    /* out first: writing past it is the classic mistake; x and y are only read */
    static const char *names[3] = {"out", "x, an input", "y, an input"};
    const cml_dbuf *bufs[3] = {&b->out, &b->x, &b->y};
    int bad = -1;
    long long where = 0;
    if (err == cudaSuccess)
        err = cml_dbufs_check_guards(bufs, b->y.base ? 3 : 2, &bad, &where);
    if (err != cudaSuccess) {
        res->err = err;
        return 0;
    }
    res->guards_intact = bad < 0;
    if (bad >= 0)
        snprintf(res->guard_msg, sizeof res->guard_msg,
                 "the kernel writes outside %s, at byte offset %lld (%s): far outside the array (a wrong base "
                 "pointer, or a loop bound in elements used for vectors)",
                 names[bad], where, where < 0 ? "before the first element" : "past the last element");
    return res->guards_intact;
}

int vectorized_run_checked(vectorized_buffers *b, int step, uint32_t *layout, vectorized_result *res)
{
    cudaError_t err = vectorized_poison(b);
    if (err == cudaSuccess)
        err = vectorized_run_step(b, step);
    if (err != cudaSuccess) {
        memset(res, 0, sizeof *res);
        res->err = err;
        return 0;
    }
    return vectorized_fetch(b, step, layout, res);
}
