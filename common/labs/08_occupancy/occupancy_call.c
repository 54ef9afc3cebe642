/* The one place the host side calls the lab's kernels, and the checked run
 * built on it (kept apart so that host-only tests link without a kernel
 * file). */
#include "occupancy_host.h"

#include <stdio.h>
#include <string.h>

cudaError_t occupancy_run_step(occupancy_buffers *b, int step)
{
    return occupancy_step(step, (const float *)b->x.ptr, (float *)b->y.ptr, (int)b->n, (const float *)b->coef.ptr,
                          b->degree);
}

cudaError_t occupancy_poison(occupancy_buffers *b)
{
    return cml_dbuf_fill32(&b->y, OCCUPANCY_POISON_BITS);
}

int occupancy_run_checked(occupancy_buffers *b, int step, const float *host_x, const float *host_coef,
                          float *host_y, occupancy_result *res)
{
    cudaError_t err = occupancy_poison(b);
    if (err == cudaSuccess)
        err = occupancy_run_step(b, step);
    if (err != cudaSuccess) {
        memset(res, 0, sizeof *res);
        res->err = err;
        return 0;
    }
    return occupancy_verify(b, host_x, host_coef, host_y, res);
}

int occupancy_verify(occupancy_buffers *b, const float *host_x, const float *host_coef, float *host_y,
                     occupancy_result *res)
{
    memset(res, 0, sizeof *res);
    cudaError_t err = cudaDeviceSynchronize();
    if (err == cudaSuccess && b->n)
        err = cudaMemcpy(host_y, b->y.ptr, b->n * sizeof(float), cudaMemcpyDeviceToHost);
    static const char *names[3] = {"y", "x, its input", "coef, its input"};
    const cml_dbuf *bufs[3] = {&b->y, &b->x, &b->coef};
    int bad = -1;
    long long where = 0;
    if (err == cudaSuccess)
        err = cml_dbufs_check_guards(bufs, 3, &bad, &where);
    if (err != cudaSuccess) {
        res->err = err;
        return 0;
    }
    if (b->n == 0 && bad < 0) {   /* the one-float payload of n = 0 is y's too: nothing may be written there */
        uint32_t w;
        err = cudaMemcpy(&w, b->y.ptr, 4, cudaMemcpyDeviceToHost);
        if (err != cudaSuccess) {
            res->err = err;
            return 0;
        }
        if (w != OCCUPANCY_POISON_BITS)
            bad = 0, where = 0;
    }
    res->guards_intact = bad < 0;
    if (bad >= 0)
        snprintf(res->guard_msg, sizeof res->guard_msg,
                 "the kernel writes outside %s, at byte offset %lld (%s): a thread past the end without an i < n check",
                 names[bad], where, where < 0 ? "before the first element" : "past the last element");
    occupancy_compare(host_x, host_coef, b->degree, host_y, b->n, &res->check);
    return res->guards_intact && res->check.wrong == 0;
}

cudaError_t occupancy_step_resources(int step, occupancy_resources *res)
{
    memset(res, 0, sizeof *res);
    res->occupancy = -1.0;
    const void *kernel = NULL;
    cudaError_t err = occupancy_step_kernel(step, &kernel, &res->block);
    struct cudaFuncAttributes a;
    if (err == cudaSuccess)
        err = cudaFuncGetAttributes(&a, kernel);
    if (err == cudaSuccess)
        err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&res->blocks_per_sm, kernel, res->block, 0);
    int per_sm = 0;
    if (err == cudaSuccess)
        err = cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, 0);
    if (err != cudaSuccess)
        return err;
    res->regs = a.numRegs;
    res->local_bytes = a.localSizeBytes;
    if (a.numRegs > 0 && per_sm > 0)   /* numRegs 0: the CPU path, which compiles no device code */
        res->occupancy = (double)res->blocks_per_sm * res->block / per_sm;
    return cudaSuccess;
}
