/* The one place the host side calls the lab's kernels, and the checked run
 * built on it (kept apart so that host-only tests link without a kernel
 * file). */
#include "@STEM@_host.h"

#include <stdio.h>
#include <string.h>

cudaError_t @STEM@_run_step(@STEM@_buffers *b, int step)
{
    return @STEM@_step(step, (const float *)b->in.ptr, (float *)b->out.ptr, b->n, b->a);
}

cudaError_t @STEM@_poison(@STEM@_buffers *b)
{
    return cml_dbuf_fill32(&b->out, @STEM_UPPER@_POISON_BITS);
}

int @STEM@_run_checked(@STEM@_buffers *b, int step, const float *host_in, float *host_out, @STEM@_result *res)
{
    cudaError_t err = @STEM@_poison(b);
    if (err == cudaSuccess)
        err = @STEM@_run_step(b, step);
    if (err != cudaSuccess) {
        memset(res, 0, sizeof *res);
        res->err = err;
        return 0;
    }
    return @STEM@_verify(b, host_in, host_out, res);
}

int @STEM@_verify(@STEM@_buffers *b, const float *host_in, float *host_out, @STEM@_result *res)
{
    memset(res, 0, sizeof *res);
    cudaError_t err = cudaDeviceSynchronize();
    if (err == cudaSuccess)
        err = cudaMemcpy(host_out, b->out.ptr, b->n * sizeof(float), cudaMemcpyDeviceToHost);
    static const char *names[2] = {"out", "in, its input"};
    const cml_dbuf *bufs[2] = {&b->out, &b->in};
    int bad = -1;
    long long where = 0;
    if (err == cudaSuccess)
        err = cml_dbufs_check_guards(bufs, 2, &bad, &where);
    if (err != cudaSuccess) {
        res->err = err;
        return 0;
    }
    res->guards_intact = bad < 0;
    if (bad >= 0)
        snprintf(res->guard_msg, sizeof res->guard_msg, "the kernel writes outside %s, at byte offset %lld (%s)",
                 names[bad], where, where < 0 ? "before the first element" : "past the last element");
    @STEM@_compare(host_in, host_out, b->n, b->a, &res->check);
    return res->guards_intact && res->check.wrong == 0;
}
