/* The one place the host side calls the lab's kernels, and the checked run
 * built on it (kept apart so that the host-only tests link without any
 * kernel file). */
#include "stencil_host.h"

#include <stdio.h>
#include <string.h>

cudaError_t st_run_step(st_buffers *b, int step, st_grid g, const stencil_coeffs *c)
{
    if (st_points(g) > b->points)
        return cudaErrorInvalidValue;
    return stencil_step(step, (const float *)b->in.ptr, (float *)b->out.ptr, g.nx, g.ny, g.nz, c);
}

cudaError_t st_poison(st_buffers *b)
{
    return cml_dbuf_fill32(&b->out, ST_POISON_BITS);
}

int st_run_checked(st_buffers *b, int step, st_grid g, const stencil_coeffs *c, const float *host_in,
                   float *host_out, st_result *res)
{
    cudaError_t err = st_poison(b);
    if (err == cudaSuccess)
        err = st_run_step(b, step, g, c);
    if (err != cudaSuccess) {
        memset(res, 0, sizeof *res);
        res->err = err;
        return 0;
    }
    return st_verify(b, step, g, c, host_in, host_out, res);
}

int st_fetch_checked(st_buffers *b, st_grid g, float *host_out, st_result *res)
{
    memset(res, 0, sizeof *res);
    cudaError_t err = cudaDeviceSynchronize();
    size_t n = st_points(g);
    if (err == cudaSuccess)
        err = cudaMemcpy(host_out, b->out.ptr, n * sizeof(float), cudaMemcpyDeviceToHost);
    /* Only out's guards: in is read only (the runner hashes it after each
     * check), and on the CPU path it has no guard zones to read. */
    int intact = 1;
    long long where = 0;
    if (err == cudaSuccess)
        err = cml_dbuf_check_guards(&b->out, &intact, &where);
    if (err != cudaSuccess) {
        res->err = err;
        return 0;
    }
    res->guards_intact = intact;
    if (!intact)
        snprintf(res->guard_msg, sizeof res->guard_msg,
                 "the kernel writes outside out, at byte offset %lld (%s): a point past the edge of the grid "
                 "written without a bounds check (the last tiles hang over the grid)",
                 where, where < 0 ? "before the first point" : "past the last point");
    return intact;
}

int st_verify(st_buffers *b, int step, st_grid g, const stencil_coeffs *c, const float *host_in, float *host_out,
              st_result *res)
{
    st_fetch_checked(b, g, host_out, res);
    if (res->err != cudaSuccess)
        return 0;
    st_compare(step, c, host_in, host_out, g, &res->check);
    return res->guards_intact && res->check.wrong == 0;
}
