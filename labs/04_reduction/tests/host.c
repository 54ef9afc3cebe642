/* Host tests of lab 04's known-good side: data, CPU reference, error bound
 * and diagnosis. No GPU needed; these run in CI. */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reduction_host.h"

Test(reference, int_range_keeps_every_partial_sum_inside_an_int)
{
    size_t sizes[] = {1, 1000, 2147483, 2147484, (size_t)1 << 28, ((size_t)1 << 31) + 5};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; ++k) {
        int r = red_int_range(sizes[k]);
        cr_expect(r >= 1 && r <= 1000, "n = %zu: range %d", sizes[k], r);
        if (r > 1)
            cr_expect((double)r * (double)sizes[k] <= (double)INT_MAX, "n = %zu: %d * n overflows", sizes[k], r);
    }
    cr_expect_eq(red_int_range(1000), 1000);
    cr_expect_eq(red_int_range((size_t)1 << 28), 7);
}

Test(reference, int_sum_is_exact_against_a_closed_form)
{
    /* 1 - 2 + 3 - 4 ... for 2m terms sums to -m. */
    enum { M = 50001 };
    int *a = malloc(2 * M * sizeof *a);
    cr_assert(a != NULL);
    for (int i = 0; i < 2 * M; ++i)
        a[i] = i % 2 ? -(i + 1) : i + 1;
    cr_expect_eq(red_cpu_sum_int(a, 2 * M), (int64_t)-M);
    free(a);
}

Test(reference, float_sum_is_in_double_and_reports_the_absolute_sum)
{
    float a[4] = {1e8f, 1.0f, -1e8f, 0.5f};
    double abs_sum = 0.0;
    double s = red_cpu_sum_float(a, 4, &abs_sum);
    cr_expect_eq(s, 1.5, "summing in float would lose the 1.0: got %.17g", s);
    cr_expect_eq(abs_sum, 2e8 + 1.5);
}

Test(reference, small_integer_floats_are_integers_in_range_with_both_signs)
{
    enum { N = 100000 };
    static float a[N];
    red_make_floats(a, N, RED_SMALL_INTS, 3, 0);
    int neg = 0, pos = 0;
    for (int i = 0; i < N; ++i) {
        cr_assert(a[i] == floorf(a[i]) && fabsf(a[i]) <= 8.0f, "a[%d] = %g", i, (double)a[i]);
        neg += a[i] < 0;
        pos += a[i] > 0;
    }
    cr_expect(neg > N / 3 && pos > N / 3, "expected both signs: %d negative, %d positive", neg, pos);
}

Test(reference, same_seed_and_stream_give_the_same_ints)
{
    int a[500], b[500];
    red_make_ints(a, 500, 77, 5);
    red_make_ints(b, 500, 77, 5);
    cr_expect_arr_eq(a, b, sizeof a);
}

Test(tolerance, grows_with_sqrt_n_and_is_below_one_element_for_mid_sizes)
{
    /* Reals in [-1, 1): sum |a| is about n / 2. */
    double t1 = red_float_tolerance(1u << 10, 512.0);
    double t2 = red_float_tolerance(1u << 20, 524288.0);
    cr_expect(fabs(t2 / t1 - 1024.0 * 32.0) < 1e-6 * t2 / t1, "ratio %g", t2 / t1);
    /* At n = 4097 the bound (about 0.063) is well below a typical element
     * (|a| averages 0.5): a dropped element mostly shows. The exact tests on
     * integer-valued floats catch every one. */
    double t = red_float_tolerance(4097, 2048.0);
    cr_expect(t > 0.06 && t < 0.065, "%g", t);
}

Test(diagnosis, names_an_unwritten_result)
{
    cr_expect(strstr(red_diagnose_int((int)RED_POISON_INT, 12), "never wrote") != NULL);
    cr_expect(strstr(red_diagnose_float(NAN, 1.0, 0.1), "never written") != NULL);
}

Test(diagnosis, names_reads_past_the_end_from_the_guard_value)
{
    int64_t expected = -1234;
    int got = (int)((uint32_t)expected + 3u * RED_INPUT_GUARD_INT);
    cr_expect(strstr(red_diagnose_int(got, expected), "past the end") != NULL);
    cr_expect(strstr(red_diagnose_float((float)(10.0 + 2.0 * RED_INPUT_GUARD_FLOAT), 10.0, 1e-3),
                     "past the end") != NULL);
}

Test(diagnosis, suggests_the_sanitizers_for_other_wrong_sums)
{
    cr_expect(strstr(red_diagnose_int(100, 101), "racecheck") != NULL);
    cr_expect(strstr(red_diagnose_float(100.0f, 101.0, 1e-3), "racecheck") != NULL);
}
