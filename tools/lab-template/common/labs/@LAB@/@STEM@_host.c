/* The host side of lab @LAB@ that needs no kernel file (see @STEM@_host.h). */
#include "@STEM@_host.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cml/cml_rng.h>

void @STEM@_make_data(float *in, size_t n, float *a, uint64_t seed, uint64_t stream)
{
    cml_fill_float(in, n, -4.0f, 4.0f, seed, stream);
    cml_rng rng;
    cml_rng_init(&rng, seed, stream + 1000003u);
    *a = cml_rng_float(&rng, 0.5f, 2.0f);
}

void @STEM@_cpu(const float *in, float *out, size_t n, float a)
{
    for (size_t i = 0; i < n; ++i)
        out[i] = a * in[i];
}

size_t @STEM@_compare(const float *in, const float *out, size_t n, float a, @STEM@_check *chk)
{
    memset(chk, 0, sizeof *chk);
    chk->checked = n;
    for (size_t i = 0; i < n; ++i) {
        float want = a * in[i];
        if (cml_float_bits(out[i]) == cml_float_bits(want))
            continue;
        if (chk->wrong++ == 0) {
            chk->first = i;
            chk->expected = want;
            chk->got = out[i];
        }
        chk->unwritten += cml_float_bits(out[i]) == @STEM_UPPER@_POISON_BITS;
    }
    return chk->wrong;
}

char *@STEM@_describe(const @STEM@_check *chk, char *buf, size_t len)
{
    snprintf(buf, len, "%zu of %zu elements of out are wrong (%zu never written): out[%zu] expected %.9g, got %.9g",
             chk->wrong, chk->checked, chk->unwritten, chk->first, (double)chk->expected, (double)chk->got);
    return buf;
}

cudaError_t @STEM@_buffers_alloc(@STEM@_buffers *b, size_t n, float a, const float *host_in)
{
    memset(b, 0, sizeof *b);
    b->n = n;
    b->a = a;
    cudaError_t err = cml_dbuf_alloc(&b->in, n * sizeof(float), @STEM_UPPER@_IN_GUARD_BITS);
    if (err == cudaSuccess)
        err = cml_dbuf_alloc(&b->out, n * sizeof(float), @STEM_UPPER@_OUT_GUARD_BITS);
    if (err == cudaSuccess)
        err = cudaMemcpy(b->in.ptr, host_in, n * sizeof(float), cudaMemcpyHostToDevice);
    return err;
}

void @STEM@_buffers_free(@STEM@_buffers *b)
{
    cml_dbuf_free(&b->in);
    cml_dbuf_free(&b->out);
}
