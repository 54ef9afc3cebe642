/* Host tests of lab 03's known-good side: data, the CPU reference and its
 * error bound, the check and its diagnosis. No GPU needed; these run in CI.
 * The check must pass every correctly rounded float product and fail the
 * classic wrong ones (a dropped k-tile, a wrong stride, a lost term). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "matmul_host.h"

/* A float product computed the way a kernel does: k in order, float
 * accumulator, fmaf or not; k_end < K drops the tail, b_stride replaces
 * N (B's row stride) to model a wrong index. */
static void float_product(const float *A, const float *B, float *C, int M, int N, int K, int k_end, int b_stride,
                          int fused)
{
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < N; ++j) {
            float acc = 0.0f;
            for (int k = 0; k < k_end; ++k) {
                float a = A[(size_t)i * K + k], b = B[(size_t)k * b_stride + j];
                acc = fused ? fmaf(a, b, acc) : acc + a * b;
            }
            C[(size_t)i * N + j] = acc;
        }
}

typedef struct fixture {
    int M, N, K;
    float *A, *B, *C;
    mm_reference ref;
} fixture;

static void setup(fixture *f, int M, int N, int K, uint64_t stream)
{
    f->M = M;
    f->N = N;
    f->K = K;
    f->A = malloc((size_t)M * K * sizeof(float));
    f->B = malloc((size_t)K * N * sizeof(float));
    f->C = malloc((size_t)M * N * sizeof(float));
    cr_assert(f->A && f->B && f->C);
    mm_make_data(f->A, (size_t)M * K, 11, 2 * stream);
    mm_make_data(f->B, (size_t)K * N, 11, 2 * stream + 1);
    cr_assert(mm_reference_init(&f->ref, f->A, f->B, M, N, K, 1e300, 11) == 0);
}

static void teardown(fixture *f)
{
    mm_reference_free(&f->ref);
    free(f->A);
    free(f->B);
    free(f->C);
}

Test(data, is_uniform_in_minus_one_to_one_with_both_signs_and_no_repeats_nearby)
{
    enum { N = 1 << 16 };
    float *a = malloc(N * sizeof *a);
    cr_assert(a != NULL);
    mm_make_data(a, N, 20261122, 3);
    int neg = 0, same = 0;
    for (int i = 0; i < N; ++i) {
        cr_assert(a[i] >= -1.0f && a[i] < 1.0f, "a[%d] = %g", i, (double)a[i]);
        neg += a[i] < 0.0f;
        same += i > 0 && a[i] == a[i - 1];
    }
    cr_expect(neg > N / 3 && neg < 2 * N / 3, "expected both signs: %d of %d negative", neg, N);
    cr_expect(same == 0, "%d neighbours are equal", same);
    free(a);
}

Test(bound, gamma_is_k_u_over_one_minus_k_u)
{
    double u = ldexp(1.0, -24);
    cr_expect(fabs(mm_gamma(1) - u / (1 - u)) < 1e-24);
    cr_expect(fabs(mm_gamma(4096) - 4096 * u / (1 - 4096 * u)) < 1e-20);
    cr_expect(mm_gamma(2) > mm_gamma(1), "the bound grows with K");
}

Test(reference, is_exact_for_a_2x3_times_3x2_of_small_integers)
{
    static const float A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {7, 8, 9, 10, 11, 12};
    float C[4] = {58, 64, 139, 154};
    mm_reference ref;
    cr_assert(mm_reference_init(&ref, A, B, 2, 2, 3, 1e300, 1) == 0);
    cr_assert(ref.full && ref.nrows == 2 && ref.ncols == 0);
    cr_expect(ref.row_val[0] == 58 && ref.row_val[1] == 64 && ref.row_val[2] == 139 && ref.row_val[3] == 154);
    cr_expect(ref.row_bound[3] == 154, "all terms positive: the bound is the product itself");
    mm_check chk;
    cr_expect_eq(mm_compare(&ref, C, &chk), 0);
    C[3] = 155;
    cr_expect_eq(mm_compare(&ref, C, &chk), 1, "a result off by one must fail");
    cr_expect(chk.first[0].row == 1 && chk.first[0].col == 1);
    mm_reference_free(&ref);
}

/* Float products in any order, fused or not, pass: the bound is a bound. */
Test(check, passes_float_products_summed_in_order_with_and_without_fma)
{
    static const int shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {33, 31, 300}, {5, 9, 4099}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
        fixture f;
        setup(&f, shapes[s][0], shapes[s][1], shapes[s][2], s);
        for (int fused = 0; fused < 2; ++fused) {
            float_product(f.A, f.B, f.C, f.M, f.N, f.K, f.K, f.N, fused);
            mm_check chk;
            size_t wrong = mm_compare(&f.ref, f.C, &chk);
            cr_expect_eq(wrong, 0, "%d x %d x %d fused %d: %zu wrong, worst %.3g of the bound", f.M, f.N, f.K,
                         fused, wrong, chk.worst_ratio);
            cr_expect(chk.worst_ratio < 1.0);
        }
        teardown(&f);
    }
}

Test(check, fails_a_product_missing_its_last_partial_k_tile_and_says_so)
{
    fixture f;
    setup(&f, 20, 24, 37, 7);  /* 37 = 2 * 16 + 5: a step-3 kernel that rounds down drops 5 terms */
    float_product(f.A, f.B, f.C, f.M, f.N, f.K, 32, f.N, 1);
    mm_check chk;
    cr_expect(mm_compare(&f.ref, f.C, &chk) > (size_t)(f.M * f.N * 9 / 10), "almost every element must fail");
    cr_expect_eq(mm_likely_cause(&chk), MM_CAUSE_K_TAIL);
    char msg[1400];
    cr_expect(strstr(mm_describe(&chk, msg, sizeof msg), "rounded down") != NULL, "%s", msg);
    teardown(&f);
}

Test(check, fails_b_read_with_a_s_row_stride_and_says_so)
{
    fixture f;
    setup(&f, 9, 40, 13, 8);  /* K < N: B[k * K + j] stays inside B */
    float_product(f.A, f.B, f.C, f.M, f.N, f.K, f.K, f.K, 0);
    mm_check chk;
    cr_expect(mm_compare(&f.ref, f.C, &chk) > 0);
    cr_expect_eq(mm_likely_cause(&chk), MM_CAUSE_B_STRIDE);
    teardown(&f);
}

Test(check, fails_one_lost_term_in_one_element)
{
    fixture f;
    setup(&f, 16, 16, 1000, 9);
    float_product(f.A, f.B, f.C, f.M, f.N, f.K, f.K, f.N, 1);
    /* element (5, 7) without its largest term */
    int big = 0;
    for (int k = 1; k < f.K; ++k)
        if (fabsf(f.A[5 * 1000 + k] * f.B[k * 16 + 7]) > fabsf(f.A[5 * 1000 + big] * f.B[big * 16 + 7]))
            big = k;
    f.C[5 * 16 + 7] -= f.A[5 * 1000 + big] * f.B[big * 16 + 7];
    mm_check chk;
    cr_expect_eq(mm_compare(&f.ref, f.C, &chk), 1, "worst %.3g", chk.worst_ratio);
    teardown(&f);
}

Test(check, names_poison_nan_and_zero)
{
    fixture f;
    setup(&f, 4, 4, 4, 10);
    float_product(f.A, f.B, f.C, f.M, f.N, f.K, f.K, f.N, 1);
    mm_check chk;
    f.C[0] = cml_bits_float(MM_POISON_BITS);
    mm_compare(&f.ref, f.C, &chk);
    cr_expect_eq(mm_likely_cause(&chk), MM_CAUSE_UNWRITTEN);
    f.C[0] = cml_bits_float(MM_B_GUARD_BITS);
    mm_compare(&f.ref, f.C, &chk);
    cr_expect_eq(mm_likely_cause(&chk), MM_CAUSE_NAN);
    f.C[0] = 0.0f;
    mm_compare(&f.ref, f.C, &chk);
    cr_expect_eq(mm_likely_cause(&chk), MM_CAUSE_ZERO);
    teardown(&f);
}

Test(reference, samples_whole_rows_and_columns_of_a_large_product)
{
    fixture f;
    f.M = 300;
    f.N = 200;
    f.K = 50;
    f.A = malloc((size_t)f.M * f.K * sizeof(float));
    f.B = malloc((size_t)f.K * f.N * sizeof(float));
    f.C = malloc((size_t)f.M * f.N * sizeof(float));
    mm_make_data(f.A, (size_t)f.M * f.K, 5, 0);
    mm_make_data(f.B, (size_t)f.K * f.N, 5, 1);
    cr_assert(mm_reference_init(&f.ref, f.A, f.B, f.M, f.N, f.K, 1e5, 5) == 0);
    cr_expect(!f.ref.full && f.ref.nrows == MM_SAMPLE_LINES && f.ref.ncols == MM_SAMPLE_LINES);
    cr_expect(f.ref.rows[0] == 0 && f.ref.rows[f.ref.nrows - 1] == f.M - 1, "first and last rows checked");
    cr_expect(f.ref.cols[0] == 0 && f.ref.cols[f.ref.ncols - 1] == f.N - 1, "first and last columns checked");
    float_product(f.A, f.B, f.C, f.M, f.N, f.K, f.K, f.N, 1);
    mm_check chk;
    cr_expect_eq(mm_compare(&f.ref, f.C, &chk), 0);
    cr_expect_eq(chk.checked, (size_t)MM_SAMPLE_LINES * (f.N + f.M));
    f.C[(size_t)(f.M - 1) * f.N + 17] += 1.0f;  /* the last row is always checked */
    cr_expect_eq(mm_compare(&f.ref, f.C, &chk), 1);
    teardown(&f);
}
