#include "cml/cml_compare.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void note(cml_compare_result *r, size_t i, double expected, double got)
{
    if (r->reported < CML_MAX_REPORTED) {
        r->first[r->reported].index = i;
        r->first[r->reported].expected = expected;
        r->first[r->reported].got = got;
        r->reported++;
    }
    r->mismatches++;
}

size_t cml_compare_int(const int *got, const int *expected, size_t n, cml_compare_result *r)
{
    memset(r, 0, sizeof *r);
    r->checked = n;
    for (size_t i = 0; i < n; ++i) {
        if (got[i] != expected[i]) {
            double d = fabs((double)got[i] - (double)expected[i]);
            if (d > r->max_abs_err)
                r->max_abs_err = d;
            note(r, i, expected[i], got[i]);
        }
    }
    return r->mismatches;
}

int cml_close(double got, double expected, double atol, double rtol)
{
    if (!isfinite(got))
        return 0;
    return fabs(got - expected) <= atol + rtol * fabs(expected);
}

size_t cml_compare_float(const float *got, const double *expected, size_t n,
                         double atol, double rtol, cml_compare_result *r)
{
    memset(r, 0, sizeof *r);
    r->checked = n;
    for (size_t i = 0; i < n; ++i) {
        double g = got[i];
        if (isfinite(g) && fabs(g - expected[i]) > r->max_abs_err)
            r->max_abs_err = fabs(g - expected[i]);
        if (!cml_close(g, expected[i], atol, rtol))
            note(r, i, expected[i], g);
    }
    return r->mismatches;
}

char *cml_compare_describe(const cml_compare_result *r, const char *what, char *buf, size_t len)
{
    size_t used = 0;
    int k = snprintf(buf, len, "%zu of %zu elements of %s differ", r->mismatches, r->checked, what);
    used = k < 0 ? 0 : (size_t)k;
    for (size_t i = 0; i < r->reported && used < len; ++i) {
        k = snprintf(buf + used, len - used, "%s[%zu] expected %.9g, got %.9g", i == 0 ? ": " : "; ",
                     r->first[i].index, r->first[i].expected, r->first[i].got);
        used += k < 0 ? 0 : (size_t)k;
    }
    return buf;
}
