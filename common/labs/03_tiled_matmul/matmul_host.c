#include "matmul_host.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_append.h>
#include <cml/cml_check.h>
#include <cml/cml_rng.h>

void mm_make_data(float *a, size_t n, uint64_t seed, uint64_t stream)
{
    cml_fill_float(a, n, -1.0f, 1.0f, seed, stream);
}

double mm_gamma(int K)
{
    double ku = (double)K * ldexp(1.0, -24);
    return ku / (1.0 - ku);
}

/* The tolerance of an element whose products' magnitudes sum to bound:
 * float's gamma_K plus the double reference's own. */
static double tolerance(int K, double bound)
{
    return (mm_gamma(K) + (double)K * ldexp(1.0, -53)) * bound;
}

/* Row i of C and its bounds, every column: row i of A times B, walking B a
 * row at a time. */
static void reference_row(const float *A, const float *B, int N, int K, int i, double *val, double *bound)
{
    for (int j = 0; j < N; ++j)
        val[j] = bound[j] = 0.0;
    for (int k = 0; k < K; ++k) {
        double a = A[(size_t)i * K + k], abs_a = fabs(a);
        const float *b = B + (size_t)k * N;
        for (int j = 0; j < N; ++j) {
            val[j] += a * b[j];
            bound[j] += abs_a * fabs((double)b[j]);
        }
    }
}

/* Column j of C and its bounds, every row (B's column gathered first). */
static void reference_col(const float *A, const float *B, int M, int N, int K, int j, double *bcol,
                          double *val, double *bound)
{
    for (int k = 0; k < K; ++k)
        bcol[k] = B[(size_t)k * N + j];
    for (int i = 0; i < M; ++i) {
        const float *a = A + (size_t)i * K;
        double v = 0.0, s = 0.0;
        for (int k = 0; k < K; ++k) {
            v += a[k] * bcol[k];
            s += fabs((double)a[k]) * fabs(bcol[k]);
        }
        val[i] = v;
        bound[i] = s;
    }
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* count distinct indices of [0, n): the first, the last, the rest seeded. */
static int *pick_lines(int n, int count, cml_rng *rng)
{
    int *v = malloc((size_t)count * sizeof *v);
    if (v == NULL)
        return NULL;
    int have = 0;
    v[have++] = 0;
    if (count > 1)
        v[have++] = n - 1;
    while (have < count) {
        int x = cml_rng_int(rng, 1, n - 2), dup = 0;
        for (int k = 0; k < have; ++k)
            dup |= v[k] == x;
        if (!dup)
            v[have++] = x;
    }
    qsort(v, (size_t)count, sizeof *v, cmp_int);
    return v;
}

int mm_reference_init(mm_reference *ref, const float *A, const float *B, int M, int N, int K, double max_work,
                      uint64_t seed)
{
    memset(ref, 0, sizeof *ref);
    ref->M = M;
    ref->N = N;
    ref->K = K;
    ref->A = A;
    ref->B = B;
    ref->full = (double)M * N * K <= max_work || (M <= MM_SAMPLE_LINES && N <= MM_SAMPLE_LINES);
    cml_rng rng;
    cml_rng_init(&rng, seed, 303);
    if (ref->full) {
        ref->nrows = M;
        ref->rows = malloc((size_t)M * sizeof *ref->rows);
        for (int i = 0; ref->rows && i < M; ++i)
            ref->rows[i] = i;
    } else {
        ref->nrows = M < MM_SAMPLE_LINES ? M : MM_SAMPLE_LINES;
        ref->ncols = N < MM_SAMPLE_LINES ? N : MM_SAMPLE_LINES;
        ref->rows = pick_lines(M, ref->nrows, &rng);
        ref->cols = pick_lines(N, ref->ncols, &rng);
    }
    ref->row_val = malloc((size_t)ref->nrows * N * sizeof(double));
    ref->row_bound = malloc((size_t)ref->nrows * N * sizeof(double));
    if (ref->ncols > 0) {
        ref->col_val = malloc((size_t)ref->ncols * M * sizeof(double));
        ref->col_bound = malloc((size_t)ref->ncols * M * sizeof(double));
    }
    double *bcol = malloc((size_t)K * sizeof *bcol);
    if (!ref->rows || !ref->row_val || !ref->row_bound || !bcol ||
        (ref->ncols > 0 && (!ref->cols || !ref->col_val || !ref->col_bound))) {
        free(bcol);
        mm_reference_free(ref);
        return -1;
    }
    for (int r = 0; r < ref->nrows; ++r)
        reference_row(A, B, N, K, ref->rows[r], ref->row_val + (size_t)r * N, ref->row_bound + (size_t)r * N);
    for (int c = 0; c < ref->ncols; ++c)
        reference_col(A, B, M, N, K, ref->cols[c], bcol, ref->col_val + (size_t)c * M,
                      ref->col_bound + (size_t)c * M);
    free(bcol);
    return 0;
}

void mm_reference_free(mm_reference *ref)
{
    free(ref->rows);
    free(ref->cols);
    free(ref->row_val);
    free(ref->row_bound);
    free(ref->col_val);
    free(ref->col_bound);
    memset(ref, 0, sizeof *ref);
}

/* sum_{k < kend} A(i, k) B(k * stride + j) and its bound; 0 when an index
 * would leave B. */
static int partial_dot(const mm_reference *ref, int i, int j, int kend, int stride, double *val, double *bound)
{
    if ((size_t)(kend - 1) * stride + j >= (size_t)ref->K * ref->N)
        return 0;
    double v = 0.0, s = 0.0;
    for (int k = 0; k < kend; ++k) {
        double a = ref->A[(size_t)i * ref->K + k], b = ref->B[(size_t)k * stride + j];
        v += a * b;
        s += fabs(a) * fabs(b);
    }
    *val = v;
    *bound = s;
    return 1;
}

static mm_cause classify(const mm_reference *ref, int i, int j, double expected, float got)
{
    static const int tiles[] = {8, 16, 32, 64, 128};
    int K = ref->K;
    double v, s;
    if (cml_float_bits(got) == MM_POISON_BITS)
        return MM_CAUSE_UNWRITTEN;
    if (isnan(got) || isinf(got))
        return MM_CAUSE_NAN;
    if (got == 0.0f && expected != 0.0)
        return MM_CAUSE_ZERO;
    for (size_t t = 0; t < sizeof tiles / sizeof tiles[0]; ++t) {
        int kend = K / tiles[t] * tiles[t];
        if (kend > 0 && kend < K && partial_dot(ref, i, j, kend, ref->N, &v, &s) &&
            fabs(got - v) <= tolerance(K, s))
            return MM_CAUSE_K_TAIL;
    }
    if (K != ref->N && partial_dot(ref, i, j, K, K, &v, &s) && fabs(got - v) <= tolerance(K, s))
        return MM_CAUSE_B_STRIDE;
    return MM_CAUSE_OTHER;
}

const char *mm_cause_text(mm_cause cause)
{
    switch (cause) {
    case MM_CAUSE_UNWRITTEN:
        return "never written: C still holds the NaN poison there (a step not done yet, or blocks that skip "
               "their part of C: check the grid and the bounds check on the store)";
    case MM_CAUSE_NAN:
        return "NaN in C: a load read past the end of A or B, whose guard zones hold NaN (a tile loaded "
               "without a bounds check: check both A's and B's loads against M, N and K), or shared "
               "memory read before it was written (a missing __syncthreads())";
    case MM_CAUSE_ZERO:
        return "C holds 0 where the product is not 0: nothing was added (the k loop never ran, or the "
               "results were never accumulated)";
    case MM_CAUSE_K_TAIL:
        return "C misses the last, partial k-tile: the k loop's tile count is K / TILE rounded down; use "
               "(K + TILE - 1) / TILE and load 0 past K";
    case MM_CAUSE_B_STRIDE:
        return "B is indexed with A's row stride K: B's rows are N floats apart, B(k, j) is B[k * N + j]";
    default:
        return "a race (a missing __syncthreads(): before the tiles are read, or before they are "
               "overwritten) or a wrong index; " CML_RACE_TOOL_HINT("matmul");
    }
}

const char *mm_error_hint(void)
{
    return "an access outside A, B, C or the block's shared memory: a load or store without a bounds "
           "check, or dynamic shared memory sized in elements instead of bytes (the third <<<>>> "
           "argument counts bytes)";
}

static void check_one(const mm_reference *ref, mm_check *chk, int i, int j, double expected, double bound,
                      float got)
{
    double tol = tolerance(ref->K, bound), err = fabs((double)got - expected);
    chk->checked++;
    if (!isnan(got) && tol > 0.0 && err / tol > chk->worst_ratio)
        chk->worst_ratio = err / tol;
    if (err <= tol)  /* false for NaN */
        return;
    if (chk->wrong < MM_MAX_CLASSIFIED)
        chk->by_cause[classify(ref, i, j, expected, got)]++;
    if (chk->reported < MM_MAX_REPORTED) {
        mm_mismatch *m = &chk->first[chk->reported++];
        m->row = i;
        m->col = j;
        m->expected = expected;
        m->tolerance = tol;
        m->got = got;
    }
    chk->wrong++;
}

size_t mm_compare(const mm_reference *ref, const float *C, mm_check *chk)
{
    int M = ref->M, N = ref->N;
    memset(chk, 0, sizeof *chk);
    chk->M = M;
    chk->N = N;
    chk->K = ref->K;
    chk->full = ref->full;
    for (int r = 0; r < ref->nrows; ++r) {
        int i = ref->rows[r];
        for (int j = 0; j < N; ++j)
            check_one(ref, chk, i, j, ref->row_val[(size_t)r * N + j], ref->row_bound[(size_t)r * N + j],
                      C[(size_t)i * N + j]);
    }
    for (int c = 0; c < ref->ncols; ++c) {
        int j = ref->cols[c];
        for (int i = 0; i < M; ++i)
            check_one(ref, chk, i, j, ref->col_val[(size_t)c * M + i], ref->col_bound[(size_t)c * M + i],
                      C[(size_t)i * N + j]);
    }
    return chk->wrong;
}

mm_cause mm_likely_cause(const mm_check *chk)
{
    int best = MM_CAUSE_OTHER;
    for (int c = 0; c < MM_NUM_CAUSES; ++c)
        if (chk->by_cause[c] > chk->by_cause[best] || (chk->by_cause[c] == chk->by_cause[best] && c < best))
            best = c;
    return (mm_cause)best;
}

/* APPEND: cml_append.h, on this function's buf, len and used. */
#define APPEND(...) CML_APPEND(buf, len, used, __VA_ARGS__)

char *mm_describe(const mm_check *chk, char *buf, size_t len)
{
    static const char *what[MM_NUM_CAUSES] = {"never written", "NaN or infinite", "zero",
                                              "missing the last k-tile", "B read with A's stride",
                                              "otherwise wrong"};
    size_t zero = 0, *used = &zero;
    buf[0] = '\0';
    APPEND("%zu of %zu elements of C checked (%s) are wrong", chk->wrong, chk->checked,
           chk->full ? "all of C" : "whole rows and columns");
    int first = 1;
    for (int c = 0; c < MM_NUM_CAUSES; ++c) {
        if (chk->by_cause[c] == 0)
            continue;
        APPEND("%s%zu %s", first ? " (of the first diagnosed: " : ", ", chk->by_cause[c], what[c]);
        first = 0;
    }
    if (!first)
        APPEND(")");
    for (int k = 0; k < chk->reported; ++k)
        APPEND("%sC(%d, %d) expected %.9g +- %.2g, got %.9g", k == 0 ? ": " : "; ", chk->first[k].row,
               chk->first[k].col, chk->first[k].expected, chk->first[k].tolerance, (double)chk->first[k].got);
    APPEND(". Likely cause: %s", mm_cause_text(mm_likely_cause(chk)));
    return buf;
}

cudaError_t mm_buffers_alloc(mm_buffers *b, int M, int N, int K)
{
    memset(b, 0, sizeof *b);
    b->M = M;
    b->N = N;
    b->K = K;
    cudaError_t err = cml_dbuf_alloc(&b->a, (size_t)M * K * sizeof(float), MM_A_GUARD_BITS);
    if (err == cudaSuccess)
        err = cml_dbuf_alloc(&b->b, (size_t)K * N * sizeof(float), MM_B_GUARD_BITS);
    if (err == cudaSuccess)
        err = cml_dbuf_alloc(&b->c, (size_t)M * N * sizeof(float), MM_C_GUARD_BITS);
    if (err != cudaSuccess)
        mm_buffers_free(b);
    return err;
}

void mm_buffers_free(mm_buffers *b)
{
    cml_dbuf_free(&b->a);
    cml_dbuf_free(&b->b);
    cml_dbuf_free(&b->c);
}

cudaError_t mm_upload(mm_buffers *b, const float *A, const float *B)
{
    cudaError_t err = cudaMemcpy(b->a.ptr, A, b->a.bytes, cudaMemcpyHostToDevice);
    if (err == cudaSuccess)
        err = cudaMemcpy(b->b.ptr, B, b->b.bytes, cudaMemcpyHostToDevice);
    return err;
}

cudaError_t mm_poison(mm_buffers *b)
{
    return cml_dbuf_fill32(&b->c, MM_POISON_BITS);
}
