/* The host side of lab 07 that needs no kernel file (vectorized_host.h). */
#include "vectorized_host.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cml/cml_rng.h>
#include <cml/cml_spec.h>

int vectorized_kind(int step)
{
    return step == 5 ? VEC_SCALE_ADD : VEC_COPY;
}

unsigned vectorized_step_offset(int step, unsigned off)
{
    return step >= 4 ? off : 0u;
}

unsigned vectorized_width(int step)
{
    return step == 1 ? 1u : step == 2 ? 2u : 4u;
}

size_t vectorized_head(int step, unsigned off, size_t n)
{
    if (step < 4)
        return 0;
    size_t head = (4u - off % 4u) % 4u;
    return head < n ? head : n;
}

void vectorized_make_data(float *x, float *y, size_t n, float *a, uint64_t seed, uint64_t stream)
{
    cml_rng rng;
    cml_rng_init(&rng, seed, stream);
    for (size_t k = 0; k < n; ++k) {
        float v = cml_rng_float(&rng, 0.5f, 4.0f);
        float w = cml_rng_float(&rng, -4.0f, 4.0f);
        if (x)
            x[k] = (cml_rng_next(&rng) & 1u) ? -v : v;
        if (y)
            y[k] = w;
    }
    *a = cml_rng_float(&rng, 0.5f, 2.0f);
}

double vectorized_scale_add_bound(float a, float x, float y, double *exact)
{
    /* p = fl(a x) = a x (1 + d1), s = fl(p + y) = (p + y)(1 + d2), |d| <= u:
     * |s - (a x + y)| <= u |a x| + u |a x + y| + u^2 |a x|. The exact value
     * here rounds once in double (2^-53 relative): add that too. */
    const double u = ldexp(1.0, -24);
    double p = (double)a * (double)x; /* exact: 24 + 24 bits */
    *exact = p + (double)y;
    return u * (fabs(p) * (1.0 + u) + fabs(*exact)) + ldexp(fabs(*exact), -52);
}

/* The index near i (within 16) whose expected value out[i] holds, or -1. */
static long long found_at(const uint32_t *want, size_t n, size_t i, uint32_t got)
{
    for (long long d = 1; d <= 16; ++d) {
        if ((size_t)d <= i && want[i - (size_t)d] == got)
            return (long long)i - d;
        if (i + (size_t)d < n && want[i + (size_t)d] == got)
            return (long long)i + d;
    }
    return -1;
}

/* Why element i was never written, from where it lies. */
static const char *unwritten_cause(int step, size_t i, size_t n, unsigned off)
{
    size_t head = vectorized_head(step, off, n), w = vectorized_width(step);
    size_t body_end = head + (n - head) / w * w; /* first element of the tail */
    if (i < head)
        return "the head: the elements before the first 16-byte boundary (off = %u) must be written one by one "
               "before the vector loop";
    if (i >= body_end)
        return w == 2 ? "the odd last element: n is odd, and no int2 covers element n - 1; copy it alone"
                      : "the tail: the (n - head) %% 4 elements after the last whole vector must be written one "
                        "by one after the vector loop";
    if (i + w >= body_end && w > 1)
        return "the last whole vector: the grid-stride loop stops one vector early; its bound is the count of "
               "vectors (i < vectors), not the last vector's index";
    return "never written: the grid-stride loop misses vectors; start at the thread's index in the grid and "
           "step by gridDim.x * blockDim.x";
}

int vectorized_judge(int step, const uint32_t *x, const uint32_t *y, float a, size_t n, unsigned off,
                     const uint32_t *out, char *msg, size_t cap)
{
    const uint32_t *o = out + VEC_GUARD;
    int saxpy = vectorized_kind(step) == VEC_SCALE_ADD;
    if (cml_spec_outside_write(out, o + n, VEC_GUARD, "out", msg, cap)) {
        size_t used = strlen(msg);
        int before = 0;
        for (size_t k = 0; k < VEC_GUARD; ++k)
            before |= out[k] != VEC_POISON;
        snprintf(msg + used, used < cap ? cap - used : 0, "%s",
                 before ? ". Likely cause: the head written at the wrong place, or a vector stored at a rounded-"
                          "down address (a cast of out - off)"
                        : ". Likely cause: a whole vector stored over the end (the tail must be written element "
                          "by element), or a head longer than n");
        return 0;
    }
    size_t wrong = 0, unwritten = 0, first = 0;
    uint32_t got0 = 0;
    double exact0 = 0.0, bound0 = 0.0;
    for (size_t i = 0; i < n; ++i) {
        uint32_t got = o[i];
        int right;
        if (!saxpy) {
            right = got == x[i];
        } else {
            float xi, yi, g;
            memcpy(&xi, &x[i], 4);
            memcpy(&yi, &y[i], 4);
            memcpy(&g, &got, 4);
            double exact, bound = vectorized_scale_add_bound(a, xi, yi, &exact);
            right = fabs((double)g - exact) <= bound; /* false for NaN, the poison */
            if (!right && wrong == 0) {
                exact0 = exact;
                bound0 = bound;
            }
        }
        if (right)
            continue;
        unwritten += got == VEC_POISON;
        if (wrong++ == 0) {
            first = i;
            got0 = got;
        }
    }
    if (wrong == 0)
        return 1;
    size_t used;
    if (!saxpy)
        used = (size_t)snprintf(msg, cap,
                                "%zu of %zu elements of out are wrong (%zu never written): out[%zu] expected "
                                "0x%08x, got 0x%08x",
                                wrong, n, unwritten, first, x[first], got0);
    else {
        float g;
        memcpy(&g, &got0, 4);
        used = (size_t)snprintf(msg, cap,
                                "%zu of %zu elements of out are wrong (%zu never written): out[%zu] expected "
                                "%.9g (within %.2g), got %.9g",
                                wrong, n, unwritten, first, exact0, bound0, (double)g);
    }
    if (used >= cap)
        return 0;
    char cause[400];
    if (got0 == VEC_POISON && unwritten == n) {
        snprintf(cause, sizeof cause, "%s",
                 "out was never written: the step's kernel writes nothing yet (or is not launched)");
    } else if (got0 == VEC_POISON) {
        snprintf(cause, sizeof cause, unwritten_cause(step, first, n, off), off);
    } else if (!saxpy && found_at(x, n, first, got0) >= 0) {
        long long j = found_at(x, n, first, got0);
        snprintf(cause, sizeof cause,
                 "out[%zu] holds in[%lld]: an index off by %lld (a vector index used as an element index, or "
                 "the head left out of the vector loop's base)",
                 first, j, j - (long long)first);
    } else if (saxpy && (got0 == x[first] || got0 == y[first])) {
        snprintf(cause, sizeof cause, "out[%zu] is %s[%zu] unchanged: the scale-add was not computed", first,
                 got0 == x[first] ? "x" : "y", first);
    } else {
        snprintf(cause, sizeof cause, "%s",
                 saxpy ? "a wrong operand (x and y at different indices, or a wrong lane of the float4): "
                         "rounding is allowed, another element's value is not"
                       : "a value from no nearby element: a wrong base pointer or offset");
    }
    snprintf(msg + used, cap - used, ". Likely cause: %s", cause);
    return 0;
}

cudaError_t vectorized_buffers_alloc(vectorized_buffers *b, size_t n, unsigned room, unsigned off, float a,
                                     const float *x_host, const float *y_host)
{
    memset(b, 0, sizeof *b);
    if (off > room || room > VEC_MAX_OFFSET)
        return cudaErrorInvalidValue;
    b->n = n;
    b->room = room;
    b->off = off;
    b->a = a;
    size_t in_bytes = (room + n) * sizeof(float);
    if (in_bytes == 0)
        in_bytes = sizeof(float); /* n = 0 at offset 0: one word nobody may touch */
    cudaError_t err = cml_dbuf_alloc(&b->x, in_bytes, VEC_X_GUARD_BITS);
    if (err == cudaSuccess)
        err = cudaMemcpy(b->x.ptr, x_host, (room + n) * sizeof(float), cudaMemcpyHostToDevice);
    if (err == cudaSuccess && y_host) {
        err = cml_dbuf_alloc(&b->y, in_bytes, VEC_Y_GUARD_BITS);
        if (err == cudaSuccess)
            err = cudaMemcpy(b->y.ptr, y_host, (room + n) * sizeof(float), cudaMemcpyHostToDevice);
    }
    if (err == cudaSuccess)
        err = cml_dbuf_alloc(&b->out, (room + 2 * VEC_GUARD + n) * sizeof(float), VEC_OUT_GUARD_BITS);
    return err;
}

void vectorized_buffers_free(vectorized_buffers *b)
{
    cml_dbuf_free(&b->x);
    cml_dbuf_free(&b->y);
    cml_dbuf_free(&b->out);
}
