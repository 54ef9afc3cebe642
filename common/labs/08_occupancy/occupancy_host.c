/* The host side of lab 08 that needs no kernel file (see occupancy_host.h). */
#include "occupancy_host.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cml/cml_rng.h>

void occupancy_make_data(float *x, size_t n, float *coef, int degree, uint64_t seed, uint64_t stream)
{
    cml_fill_float(x, n, -1.0f, 1.0f, seed, stream);
    cml_fill_float(coef, (size_t)degree + 1, -1.0f, 1.0f, seed, stream + 1000003u);
}

double occupancy_ref(double x, const float *coef, int degree, double *bound)
{
    double s = 0.0, mag = 0.0, ax = fabs(x);
    for (int k = degree; k >= 0; --k) {
        s = s * x + coef[k];
        mag = mag * ax + fabs(coef[k]);
    }
    double u = ldexp(1.0, -24), m = 2.0 * degree + 2.0;
    *bound = m * u / (1.0 - m * u) * mag + FLT_MIN;
    return s;
}

/* y within `bound` of `want` (NaN is not). */
static int near(float y, double want, double bound)
{
    return fabs((double)y - want) <= bound;
}

size_t occupancy_compare(const float *x, const float *coef, int degree, const float *y, size_t n,
                         occupancy_check *chk)
{
    memset(chk, 0, sizeof *chk);
    chk->checked = n;
    chk->all_reversed = chk->all_shifted = degree >= 1 && degree <= OCC_MAX_DEGREE;
    float reversed[OCC_MAX_DEGREE + 1];
    for (int k = 0; chk->all_reversed && k <= degree; ++k)
        reversed[k] = coef[degree - k];
    for (size_t i = 0; i < n; ++i) {
        uint32_t bits;
        memcpy(&bits, &y[i], 4);
        int unwritten = bits == OCCUPANCY_POISON_BITS;
        if (!unwritten)
            chk->last_written = i;
        double bound, want = occupancy_ref(x[i], coef, degree, &bound);
        if (!unwritten && near(y[i], want, bound))
            continue;
        /* a wrong element tells a classic mistake only if every other one does */
        if (chk->all_reversed) {
            double rbound, rwant = occupancy_ref(x[i], reversed, degree, &rbound);
            chk->all_reversed = !unwritten && near(y[i], rwant, rbound);
        }
        if (chk->all_shifted) {
            double ax = fabs((double)x[i]);
            chk->all_shifted = !unwritten && near(y[i], x[i] * want, ax * bound + ax * fabs(want) * ldexp(1.0, -23));
        }
        if (chk->wrong++ == 0) {
            chk->first = i;
            chk->expected = want;
            chk->bound = bound;
            chk->got = y[i];
        }
        if (unwritten && chk->unwritten++ == 0)
            chk->first_unwritten = i;
    }
    return chk->wrong;
}

/* Why a student's y is wrong, from its pattern. */
static const char *likely_cause(const occupancy_check *c, int step)
{
    if (c->unwritten == c->wrong && c->first_unwritten > c->last_written)
        return step == 4 ? "the grid stops short of n: one block per ILP_BLOCK * ILP elements, rounded up"
                         : "the grid stops short of n: round the number of blocks up";
    if (c->unwritten == c->checked)
        return "nothing was written: the kernel is not done yet, or returns before its store";
    if (c->unwritten > 0)
        return step == 4 ? "threads skip elements: thread t of a block owns base + j * ILP_BLOCK for j < ILP"
                         : "some elements are never written: check each thread's index";
    if (c->wrong > 0 && c->all_reversed)
        return "the coefficients in reverse order: every wrong y is sum coef[k] * x^(degree - k). Horner's rule "
               "starts from coef[degree] and ends with coef[0], the constant";
    if (c->wrong > 0 && c->all_shifted)
        return "every power one too high: every wrong y is x times the right one. The powers start at x^0 = 1";
    return "a wrong value: coef[k] goes with x^k (coef[0] is the constant), and every power from x^0 up "
           "to x^degree is needed";
}

char *occupancy_describe(const occupancy_check *chk, int step, char *buf, size_t len)
{
    snprintf(buf, len,
             "%zu of %zu elements of y are wrong (%zu never written): y[%zu] expected %.9g (within %.2g), got %.9g. "
             "Likely cause: %s",
             chk->wrong, chk->checked, chk->unwritten, chk->first, chk->expected, chk->bound, (double)chk->got,
             likely_cause(chk, step));
    return buf;
}

cudaError_t occupancy_buffers_alloc(occupancy_buffers *b, size_t n, int degree, const float *host_x,
                                    const float *host_coef)
{
    memset(b, 0, sizeof *b);
    b->n = n;
    b->degree = degree;
    /* n = 0 still gets a payload: the guards (and a stray write) need one */
    size_t bytes = (n ? n : 1) * sizeof(float);
    cudaError_t err = cml_dbuf_alloc(&b->x, bytes, OCCUPANCY_X_GUARD_BITS);
    if (err == cudaSuccess)
        err = cml_dbuf_alloc(&b->coef, ((size_t)degree + 1) * sizeof(float), OCCUPANCY_COEF_GUARD_BITS);
    if (err == cudaSuccess)
        err = cml_dbuf_alloc(&b->y, bytes, OCCUPANCY_Y_GUARD_BITS);
    if (err == cudaSuccess && n)
        err = cudaMemcpy(b->x.ptr, host_x, n * sizeof(float), cudaMemcpyHostToDevice);
    if (err == cudaSuccess)
        err = cudaMemcpy(b->coef.ptr, host_coef, ((size_t)degree + 1) * sizeof(float), cudaMemcpyHostToDevice);
    return err;
}

void occupancy_buffers_free(occupancy_buffers *b)
{
    cml_dbuf_free(&b->x);
    cml_dbuf_free(&b->coef);
    cml_dbuf_free(&b->y);
}

int occupancy_step_degree(int step, int degree)
{
    return step == 2 || step == 3 ? OCC_TABLE_DEGREE : degree;
}
