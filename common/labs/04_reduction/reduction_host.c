#include "reduction_host.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cml/cml_check.h>
#include <cml/cml_rng.h>

/* The likely causes red_diagnose_* name, shared by int and float. */
static const char READ_PAST_END[] =
    "off by a multiple of 2^24, the value of the guard cells around the input: "
    "the kernel reads past the end of the array (a load without an i < n check)";
static const char RACE_OR_INDEX[] =
    "a race (a missing __syncthreads or __syncwarp) or a wrong index; " CML_RACE_TOOL_HINT("reduction");

int red_int_range(size_t n)
{
    size_t r = (size_t)INT_MAX / (n ? n : 1);
    if (r > 1000)
        r = 1000;
    return r < 1 ? 1 : (int)r;
}

void red_make_ints(int *a, size_t n, uint64_t seed, uint64_t stream)
{
    int r = red_int_range(n);
    cml_fill_int(a, n, -r, r, seed, stream);
}

void red_make_floats(float *a, size_t n, red_float_kind kind, uint64_t seed, uint64_t stream)
{
    if (kind == RED_REALS) {
        cml_fill_float(a, n, -1.0f, 1.0f, seed, stream);
        return;
    }
    cml_rng rng;
    cml_rng_init(&rng, seed, stream);
    for (size_t i = 0; i < n; ++i)
        a[i] = (float)cml_rng_int(&rng, -8, 8);
}

int64_t red_cpu_sum_int(const int *a, size_t n)
{
    int64_t s = 0;
    for (size_t i = 0; i < n; ++i)
        s += a[i];
    return s;
}

double red_cpu_sum_float(const float *a, size_t n, double *abs_sum)
{
    double s = 0.0, t = 0.0;
    for (size_t i = 0; i < n; ++i) {
        s += a[i];
        t += fabs((double)a[i]);
    }
    *abs_sum = t;
    return s;
}

double red_float_tolerance(size_t n, double abs_sum)
{
    const double u = 5.9604644775390625e-08; /* 2^-24, float's unit roundoff */
    return 8.0 * sqrt((double)n) * u * abs_sum;
}

const char *red_diagnose_int(int got, int64_t expected)
{
    uint32_t diff = (uint32_t)got - (uint32_t)(int32_t)expected;
    if ((uint32_t)got == RED_POISON_INT)
        return "out[0] still holds the poison value 0xDEADBEEF: the last pass never wrote the result";
    if (diff != 0 && diff % RED_INPUT_GUARD_INT == 0)
        return READ_PAST_END;
    return RACE_OR_INDEX;
}

const char *red_diagnose_float(float got, double expected, double tol)
{
    if (isnan(got))
        return "the result is NaN: out[0] never written (it is poisoned with NaN), or a read of "
               "poisoned scratch (partials of one pass not all written)";
    double k = round(((double)got - expected) / RED_INPUT_GUARD_FLOAT);
    if (k >= 1.0 && fabs((double)got - expected - k * RED_INPUT_GUARD_FLOAT) <= tol + 0.25 * RED_INPUT_GUARD_FLOAT)
        return READ_PAST_END;
    return RACE_OR_INDEX;
}

static size_t elem_size(red_type t)
{
    return t == RED_INT ? sizeof(int) : sizeof(float);
}

cudaError_t red_buffers_alloc(red_buffers *b, red_type type, size_t n)
{
    memset(b, 0, sizeof *b);
    b->type = type;
    b->n = n;
    uint32_t guard = type == RED_INT ? RED_INPUT_GUARD_INT : cml_float_bits(RED_INPUT_GUARD_FLOAT);
    cudaError_t err = cml_dbuf_alloc(&b->in, n * elem_size(type), guard);
    if (err == cudaSuccess)
        err = cml_dbuf_alloc(&b->out, elem_size(type), RED_OUTPUT_GUARD);
    if (err == cudaSuccess)
        err = cml_dbuf_alloc(&b->scratch, REDUCTION_SCRATCH_ELEMS(n) * elem_size(type), RED_OUTPUT_GUARD);
    if (err != cudaSuccess)
        red_buffers_free(b);
    return err;
}

void red_buffers_free(red_buffers *b)
{
    cml_dbuf_free(&b->in);
    cml_dbuf_free(&b->out);
    cml_dbuf_free(&b->scratch);
}

cudaError_t red_upload(red_buffers *b, const void *host)
{
    return cudaMemcpy(b->in.ptr, host, b->n * elem_size(b->type), cudaMemcpyHostToDevice);
}

cudaError_t red_poison(red_buffers *b)
{
    uint32_t poison = b->type == RED_INT ? RED_POISON_INT : RED_POISON_FLOAT_BITS;
    cudaError_t err = cml_dbuf_fill32(&b->out, poison);
    if (err == cudaSuccess)
        err = cml_dbuf_fill32(&b->scratch, poison);
    return err;
}

cudaError_t red_fetch(red_buffers *b, void *result)
{
    cudaError_t err = cudaDeviceSynchronize();
    if (err == cudaSuccess)
        err = cudaMemcpy(result, b->out.ptr, elem_size(b->type), cudaMemcpyDeviceToHost);
    return err;
}

int red_guards_intact(red_buffers *b, char *msg, size_t len, cudaError_t *err)
{
    static const char *names[3] = {"the input (a kernel wrote into its input!)", "out", "scratch"};
    const cml_dbuf *bufs[3] = {&b->in, &b->out, &b->scratch};
    int bad = -1;
    long long where = 0;
    *err = cml_dbufs_check_guards(bufs, 3, &bad, &where);
    if (*err != cudaSuccess)
        return 0;
    if (bad >= 0) {
        snprintf(msg, len, "a kernel wrote outside %s: byte offset %lld from its start (%s)", names[bad], where,
                 where < 0 ? "before the first element" : "past the last element");
        return 0;
    }
    return 1;
}

void red_reference_of(const void *host, red_type type, red_float_kind kind, size_t n, red_reference *ref)
{
    memset(ref, 0, sizeof *ref);
    ref->type = type;
    if (type == RED_INT) {
        ref->isum = red_cpu_sum_int((const int *)host, n);
        return;
    }
    double abs_sum = 0.0;
    ref->fsum = red_cpu_sum_float((const float *)host, n, &abs_sum);
    ref->tol = kind == RED_SMALL_INTS ? 0.0 : red_float_tolerance(n, abs_sum);
}
