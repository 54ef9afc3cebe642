/* The one place the host side calls the lab's kernels, and the checked run
 * built on it (kept apart so that the host-only tests link without any
 * kernel file). */
#include "reduction_host.h"

#include <stdio.h>
#include <string.h>

#include <cml/cml_compare.h>

cudaError_t red_run_step(red_buffers *b, int step)
{
    if (b->type == RED_INT)
        return reduce_sum_int(step, (const int *)b->in.ptr, b->n, (int *)b->out.ptr, (int *)b->scratch.ptr);
    return reduce_sum_float(step, (const float *)b->in.ptr, b->n, (float *)b->out.ptr,
                            (float *)b->scratch.ptr);
}

typedef struct step_job {
    red_buffers *b;
    int step;
} step_job;

static cudaError_t run_step_job(void *ctx)
{
    step_job *j = ctx;
    return red_run_step(j->b, j->step);
}

int red_run_checked(red_buffers *b, int step, const red_reference *ref, red_result *res)
{
    step_job j = {b, step};
    return red_run_checked_with(b, run_step_job, &j, ref, res);
}

int red_run_checked_with(red_buffers *b, cudaError_t (*run)(void *ctx), void *ctx, const red_reference *ref,
                         red_result *res)
{
    cudaError_t err = red_poison(b);
    if (err == cudaSuccess)
        err = run(ctx);
    if (err != cudaSuccess) {
        memset(res, 0, sizeof *res);
        res->err = err;
        return 0;
    }
    return red_verify(b, ref, res);
}

int red_verify(red_buffers *b, const red_reference *ref, red_result *res)
{
    memset(res, 0, sizeof *res);
    cudaError_t err = red_fetch(b, &res->got);
    if (err == cudaSuccess)
        res->guards_intact = red_guards_intact(b, res->guard_msg, sizeof res->guard_msg, &err);
    if (err != cudaSuccess) {
        res->err = err;
        return 0;
    }
    if (ref->type == RED_INT) {
        res->value_ok = (int64_t)res->got.i == ref->isum;
        if (!res->value_ok)
            snprintf(res->msg, sizeof res->msg, "expected %lld, got %d: %s", (long long)ref->isum, res->got.i,
                     red_diagnose_int(res->got.i, ref->isum));
    } else {
        res->value_ok = cml_close(res->got.f, ref->fsum, ref->tol, 0.0);
        if (!res->value_ok)
            snprintf(res->msg, sizeof res->msg, "expected %.9g, got %.9g (bound %.3g): %s", ref->fsum,
                     (double)res->got.f, ref->tol, red_diagnose_float(res->got.f, ref->fsum, ref->tol));
    }
    if (!res->guards_intact)
        snprintf(res->msg, sizeof res->msg, "%s", res->guard_msg);  /* the guards first: the likelier cause */
    res->ok = res->guards_intact && res->value_ok;
    return res->ok;
}
