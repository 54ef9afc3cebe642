/* GPU tests of lab 04, one Criterion suite per step (step1 ... step8),
 * made from the step table in reduction.h. Built twice: against your
 * labs/04_reduction/reduction.cu and against the reference solution.
 *
 * Every run: seeded data (CML_SEED changes them, and adds two sizes of its
 * own), guard zones around every buffer, out[0] and scratch poisoned. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_compare.h>
#include <cml/cml_rng.h>
#include <cml/cml_test.h>
#include "reduction_host.h"

/* Sizes that break reductions: 1, around a warp and a block (256 and 512
 * elements per block are common), primes, around 2^20. Two more come from
 * the seed. */
static const size_t fixed_sizes[] = {1, 2, 31, 32, 33, 255, 256, 257, 511, 513, 1023, 1025,
                                     65537, 1000003, (1u << 20) - 1, (1u << 20) + 1, 3u * (1u << 20) + 7};
#define N_FIXED (sizeof fixed_sizes / sizeof fixed_sizes[0])
#define N_SIZES (N_FIXED + 2)
#define MAX_REPORTS 4

static void sizes_for(uint64_t seed, size_t *sizes)
{
    memcpy(sizes, fixed_sizes, sizeof fixed_sizes);
    cml_rng rng;
    cml_rng_init(&rng, seed, 999);
    sizes[N_FIXED] = (size_t)cml_rng_int(&rng, 2, 5000);
    sizes[N_FIXED + 1] = (size_t)cml_rng_int(&rng, 5001, 3000000);
}

/* Uploads n elements of host data (freed here) and runs the step once,
 * checked the way the runner checks it (red_run_checked: out and scratch
 * poisoned, guard zones checked, the sum compared with ref). A CUDA error
 * ends the test; a damaged guard is reported. */
static void run_checked(red_type type, const char *tname, void *host, size_t n, int step, const red_reference *ref,
                        red_result *res)
{
    red_buffers b;
    CML_TEST_CHECK(red_buffers_alloc(&b, type, n));
    CML_TEST_CHECK(red_upload(&b, host));
    free(host);
    red_run_checked(&b, step, ref, res);
    cr_assert(res->err == cudaSuccess, "step %d, n = %zu %s: CUDA error %s: %s", step, n, tname,
              cudaGetErrorName(res->err), cudaGetErrorString(res->err));
    red_buffers_free(&b);
    cr_expect(res->guards_intact, "step %d, n = %zu %s: %s", step, n, tname, res->guard_msg);
}

/* Checks one int reduction of n elements; reports and returns 0 when wrong. */
static int check_ints(int step, size_t n, uint64_t seed, uint64_t stream)
{
    int *h = malloc(n * sizeof *h);
    cr_assert(h != NULL, "out of host memory for n = %zu", n);
    red_make_ints(h, n, seed, stream);
    red_reference ref;
    red_reference_of(h, RED_INT, RED_REALS, n, &ref);
    red_result res;
    run_checked(RED_INT, "int", h, n, step, &ref, &res);
    cr_expect(res.value_ok, "step %d, n = %zu int (seed %llu): expected %lld, got %d. Likely cause: %s", step, n,
              (unsigned long long)seed, (long long)ref.isum, res.got.i, red_diagnose_int(res.got.i, ref.isum));
    return res.ok;
}

/* Checks one float reduction; exact for RED_SMALL_INTS, else within the bound. */
static int check_floats(int step, size_t n, red_float_kind kind, uint64_t seed, uint64_t stream)
{
    float *h = malloc(n * sizeof *h);
    cr_assert(h != NULL, "out of host memory for n = %zu", n);
    red_make_floats(h, n, kind, seed, stream);
    red_reference ref;
    red_reference_of(h, RED_FLOAT, kind, n, &ref);
    red_result res;
    run_checked(RED_FLOAT, "float", h, n, step, &ref, &res);
    cr_expect(res.value_ok, "step %d, n = %zu float (%s, seed %llu): expected %.9g, got %.9g, allowed error %.3g. "
              "Likely cause: %s", step, n, kind == RED_SMALL_INTS ? "small integers, exact" : "reals",
              (unsigned long long)seed, ref.fsum, (double)res.got.f, ref.tol,
              red_diagnose_float(res.got.f, ref.fsum, ref.tol));
    return res.ok;
}

/* Every size; stop after a few failures so the report stays readable. */
static void ints_at_awkward_sizes(int step)
{
    CML_REQUIRE_GPU();
    uint64_t seed = cml_test_seed();
    size_t sizes[N_SIZES];
    sizes_for(seed, sizes);
    int failures = 0;
    for (size_t k = 0; k < N_SIZES && failures < MAX_REPORTS; ++k)
        failures += !check_ints(step, sizes[k], seed, 100 * (uint64_t)step + k);
}

static void small_int_floats_at_awkward_sizes(int step)
{
    CML_REQUIRE_GPU();
    uint64_t seed = cml_test_seed();
    size_t sizes[N_SIZES];
    sizes_for(seed, sizes);
    int failures = 0;
    for (size_t k = 0; k < N_SIZES && failures < MAX_REPORTS; ++k)
        failures += !check_floats(step, sizes[k], RED_SMALL_INTS, seed, 200 * (uint64_t)step + k);
}

static void real_floats_within_bound(int step)
{
    CML_REQUIRE_GPU();
    static const size_t sizes[] = {1, 33, 4097, 1000003, (1u << 22) + 1};
    uint64_t seed = cml_test_seed();
    int failures = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0] && failures < MAX_REPORTS; ++k)
        failures += !check_floats(step, sizes[k], RED_REALS, seed, 300 * (uint64_t)step + k);
}

/* Non-negative ints: the partial sums grow past 2^24, where a float can no
 * longer hold every integer, so a sum accumulated in float (or a float
 * shuffle of int partials) loses units; the symmetric data above never gets
 * there. Sums stay below 2^31. */
static void ints_past_2_pow_24(int step)
{
    CML_REQUIRE_GPU();
    static const size_t sizes[] = {65537, (1u << 18) + 3};
    uint64_t seed = cml_test_seed();
    int failures = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0] && failures < MAX_REPORTS; ++k) {
        size_t n = sizes[k];
        int *h = malloc(n * sizeof *h);
        cr_assert(h != NULL, "out of host memory for n = %zu", n);
        cml_fill_int(h, n, 0, 1000, seed, 500 * (uint64_t)step + k);
        red_reference ref;
        red_reference_of(h, RED_INT, RED_REALS, n, &ref);
        cr_assert(ref.isum > (1 << 24), "the data must pass 2^24 (sum %lld)", (long long)ref.isum);
        red_result res;
        run_checked(RED_INT, "int", h, n, step, &ref, &res);
        cr_expect(res.value_ok, "step %d, n = %zu non-negative ints (partial sums past 2^24): expected %lld, got %d. "
                  "Likely cause: %s", step, n, (long long)ref.isum, res.got.i, red_diagnose_int(res.got.i, ref.isum));
        failures += !res.ok;
    }
}

/* Reals in [1, 2): one element dropped, or one block, moves the sum by at
 * least 1, and the bound here (2 * ceil(log2 n) * u * sum|a|, the error of
 * a summation tree of that depth) stays below 1 up to n = 2^17. The bound of
 * the test above (8 * sqrt(n) * u * sum|a|) is far looser at large n. */
static void positive_reals_where_one_dropped_element_shows(int step)
{
    CML_REQUIRE_GPU();
    static const size_t sizes[] = {4097, 65537, 131071};
    uint64_t seed = cml_test_seed();
    int failures = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0] && failures < MAX_REPORTS; ++k) {
        size_t n = sizes[k];
        float *h = malloc(n * sizeof *h);
        cr_assert(h != NULL, "out of host memory for n = %zu", n);
        cml_fill_float(h, n, 1.0f, 2.0f, seed, 600 * (uint64_t)step + k);
        red_reference ref;
        red_reference_of(h, RED_FLOAT, RED_REALS, n, &ref);
        ref.tol = 2.0 * ceil(log2((double)n)) * 5.9604644775390625e-08 * ref.fsum;  /* all positive: sum|a| = sum */
        cr_assert(ref.tol < 1.0, "the bound must be below one element (%g)", ref.tol);
        red_result res;
        run_checked(RED_FLOAT, "float", h, n, step, &ref, &res);
        cr_expect(res.value_ok, "step %d, n = %zu reals in [1, 2): expected %.9g, got %.9g, allowed error %.3g "
                  "(one element is at least 1). Likely cause: %s", step, n, ref.fsum, (double)res.got.f, ref.tol,
                  red_diagnose_float(res.got.f, ref.fsum, ref.tol));
        failures += !res.ok;
    }
}

/* 2^28 + 1 on a GPU: 1 GiB, far past the caches and one wave of blocks.
 * On the CPU path (common/cpu), where one CPU second sums a few million
 * elements in the early steps, 2^22 + 1: still thousands of blocks and a
 * partial last one. */
#ifdef CML_CPU_BACKEND
#define LARGE_LOG2 22
#else
#define LARGE_LOG2 28
#endif

static void large_ints(int step)
{
    CML_REQUIRE_GPU();
    check_ints(step, ((size_t)1 << LARGE_LOG2) + 1, cml_test_seed(), 400 * (uint64_t)step);
}

/* The suites, from the step table. Suite "stepN"; tests read as sentences. */
#define STEP_TESTS(num, ident, file, what)                                                        \
    Test(CML_CAT(step, num), sums_ints_exactly_at_sizes_that_are_not_multiples_of_the_block, \
         .timeout = 120) { ints_at_awkward_sizes(num); }                                    \
    Test(CML_CAT(step, num), sums_integer_valued_floats_exactly_at_awkward_sizes,          \
         .timeout = 120) { small_int_floats_at_awkward_sizes(num); }                        \
    Test(CML_CAT(step, num), sums_random_floats_within_the_rounding_bound, .timeout = 120) \
    { real_floats_within_bound(num); }                                                      \
    Test(CML_CAT(step, num), sums_ints_whose_partial_sums_pass_2_pow_24, .timeout = 120)   \
    { ints_past_2_pow_24(num); }                                                            \
    Test(CML_CAT(step, num), sums_positive_reals_within_a_bound_one_dropped_element_breaks, \
         .timeout = 120) { positive_reals_where_one_dropped_element_shows(num); }          \
    Test(CML_CAT(step, num), CML_CAT(CML_CAT(sums_2_pow_, LARGE_LOG2), _plus_1_ints_exactly), .timeout = 300) \
    { large_ints(num); }
REDUCTION_STEPS(STEP_TESTS)
