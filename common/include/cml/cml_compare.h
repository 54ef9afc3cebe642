/* cml_compare.h: compare results with a reference and say where they differ. */
#ifndef CML_COMPARE_H
#define CML_COMPARE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CML_MAX_REPORTED 5

typedef struct cml_mismatch {
    size_t index;
    double expected;
    double got;
} cml_mismatch;

typedef struct cml_compare_result {
    size_t checked;                        /* elements compared */
    size_t mismatches;                     /* how many differ */
    size_t reported;                       /* entries filled in first[] */
    cml_mismatch first[CML_MAX_REPORTED];  /* the first few, by index */
    double max_abs_err;                    /* over the finite elements */
} cml_compare_result;

/* Exact comparison of integers. Returns the number of mismatches. */
size_t cml_compare_int(const int *got, const int *expected, size_t n, cml_compare_result *r);

/* Float comparison against a reference in double: element i matches when
 * |got - expected| <= atol + rtol * |expected|. NaN or Inf in got never
 * matches. Returns the number of mismatches. */
size_t cml_compare_float(const float *got, const double *expected, size_t n,
                         double atol, double rtol, cml_compare_result *r);

/* One scalar against its tolerance (atol + rtol * |expected|). */
int cml_close(double got, double expected, double atol, double rtol);

/* "3 of 1000 elements differ: [17] expected 4, got 5; [18] ..." into buf
 * (what names the array). Returns buf. */
char *cml_compare_describe(const cml_compare_result *r, const char *what, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
