/* Lab 04's harness (harness.h): kind 0 sums ints, kind 1 floats; case a
 * is n. Output: out[0] (4 bytes). out and scratch are poisoned (0xff)
 * before the launch; the input is read back after it. */
#include "harness.h"
#include "reduction.h"

static cudaError_t run_case(const hn_case *c, void **out, size_t *out_bytes, void *in_after)
{
    size_t n = (size_t)c->a, bytes = n * 4, scratch_bytes = REDUCTION_SCRATCH_ELEMS(n) * 4;
    void *d_in = NULL, *d_out = NULL, *d_scratch = NULL;
    cudaError_t err = cudaMalloc(&d_in, bytes ? bytes : 4);
    if (err == cudaSuccess)
        err = cudaMalloc(&d_out, 4);
    if (err == cudaSuccess)
        err = cudaMalloc(&d_scratch, scratch_bytes);
    if (err == cudaSuccess)
        err = cudaMemcpy(d_in, c->data, bytes, cudaMemcpyHostToDevice);
    if (err == cudaSuccess)
        err = cudaMemset(d_out, 0xff, 4);
    if (err == cudaSuccess)
        err = cudaMemset(d_scratch, 0xff, scratch_bytes);
    if (err == cudaSuccess)
        err = c->kind == 0 ? reduce_sum_int((int)c->step, (const int *)d_in, n, (int *)d_out, (int *)d_scratch)
                           : reduce_sum_float((int)c->step, (const float *)d_in, n, (float *)d_out,
                                              (float *)d_scratch);
    if (err == cudaSuccess)
        err = cudaDeviceSynchronize();
    if (err == cudaSuccess && (*out = malloc(4)) != NULL) {
        *out_bytes = 4;
        err = cudaMemcpy(*out, d_out, 4, cudaMemcpyDeviceToHost);
    }
    if (err == cudaSuccess)
        err = cudaMemcpy(in_after, d_in, bytes, cudaMemcpyDeviceToHost);
    cudaFree(d_in);
    cudaFree(d_out);
    cudaFree(d_scratch);
    return err;
}

int main(int argc, char **argv) { return hn_main(argc, argv, run_case); }
