/* The one place the host side calls the lab's kernels (kept apart so that
 * the host-only tests link without any kernel file). */
#include "constmem_host.h"

#include <stddef.h>

cudaError_t cm_call_upload_tables(const float *table, const float *big)
{
    return constmem_upload_tables(table, big);
}

cudaError_t cm_call_upload_filter(const float *w, int radius)
{
    return constmem_upload_filter(w, radius);
}

cudaError_t cm_lookup_launch_one(cm_lookup_buffers *b, int step, int d, int big, int passes, unsigned signs,
                                 int slice)
{
    constmem_lookup_job job;
    job.d = d;
    job.big = big;
    job.table = (const float *)(big ? b->big.ptr : b->table.ptr);
    job.out = (float *)b->out.ptr + (size_t)slice * (size_t)b->threads;
    job.threads = b->threads;
    job.passes = passes;
    job.signs = signs;
    return constmem_lookup(step, &job);
}

cudaError_t cm_lookup_launch(cm_lookup_buffers *b, int step, int big, int passes, unsigned signs)
{
    for (int k = 0; k < cm_step_nd(step); ++k) {
        cudaError_t err = cm_lookup_launch_one(b, step, cm_d(k), big, passes, signs, k);
        if (err != cudaSuccess)
            return err;
    }
    return cudaSuccess;
}

cudaError_t cm_conv_launch(cm_conv_buffers *b, int step, const float *w, int radius)
{
    constmem_conv_job job;
    job.in = (const float *)b->in.ptr;
    job.out = (float *)b->out.ptr;
    job.width = b->width;
    job.height = b->height;
    job.radius = radius;
    job.w = w;
    job.w_dev = (const float *)b->w.ptr;
    return constmem_conv(step, &job);
}
