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

static uint64_t test_seed(void)
{
    uint64_t seed = 0;
    char err[160];
    cr_assert(cml_seed(&seed, err, sizeof err), "%s", err);
    return seed;
}

static void sizes_for(uint64_t seed, size_t *sizes)
{
    memcpy(sizes, fixed_sizes, sizeof fixed_sizes);
    cml_rng rng;
    cml_rng_init(&rng, seed, 999);
    sizes[N_FIXED] = (size_t)cml_rng_int(&rng, 2, 5000);
    sizes[N_FIXED + 1] = (size_t)cml_rng_int(&rng, 5001, 3000000);
}

/* Runs one step on data already uploaded to b; returns the CUDA error. */
static cudaError_t run_once(red_buffers *b, int step, void *result)
{
    cudaError_t err = red_poison(b);
    if (err == cudaSuccess)
        err = red_run_step(b, step);
    if (err == cudaSuccess)
        err = red_fetch(b, result);
    return err;
}

/* Uploads n elements of host data (freed here), runs the step on poisoned
 * outputs and checks the guard zones. The result lands in *result. Returns
 * 1 when the guards are intact (a failed expectation is reported). */
static int run_checked(red_type type, const char *tname, void *host, size_t n, int step, void *result)
{
    red_buffers b;
    CML_TEST_CHECK(red_buffers_alloc(&b, type, n));
    CML_TEST_CHECK(red_upload(&b, host));
    free(host);
    cudaError_t err = run_once(&b, step, result);
    cr_assert(err == cudaSuccess, "step %d, n = %zu %s: CUDA error %s: %s", step, n, tname,
              cudaGetErrorName(err), cudaGetErrorString(err));
    char msg[200];
    int guards = red_guards_intact(&b, msg, sizeof msg, &err);
    CML_TEST_CHECK(err);
    red_buffers_free(&b);
    cr_expect(guards, "step %d, n = %zu %s: %s", step, n, tname, msg);
    return guards;
}

/* Checks one int reduction of n elements; reports and returns 0 when wrong. */
static int check_ints(int step, size_t n, uint64_t seed, uint64_t stream)
{
    int *h = malloc(n * sizeof *h);
    cr_assert(h != NULL, "out of host memory for n = %zu", n);
    red_make_ints(h, n, seed, stream);
    int64_t expected = red_cpu_sum_int(h, n);
    int got = 0;
    int guards = run_checked(RED_INT, "int", h, n, step, &got);
    int ok = (int64_t)got == expected;
    cr_expect(ok, "step %d, n = %zu int (seed %llu): expected %lld, got %d. Likely cause: %s", step, n,
              (unsigned long long)seed, (long long)expected, got, red_diagnose_int(got, expected));
    return ok && guards;
}

/* Checks one float reduction; exact for RED_SMALL_INTS, else within the bound. */
static int check_floats(int step, size_t n, red_float_kind kind, uint64_t seed, uint64_t stream)
{
    float *h = malloc(n * sizeof *h);
    cr_assert(h != NULL, "out of host memory for n = %zu", n);
    red_make_floats(h, n, kind, seed, stream);
    double abs_sum = 0.0;
    double expected = red_cpu_sum_float(h, n, &abs_sum);
    double tol = kind == RED_SMALL_INTS ? 0.0 : red_float_tolerance(n, abs_sum);
    float got = 0.0f;
    int guards = run_checked(RED_FLOAT, "float", h, n, step, &got);
    int ok = cml_close(got, expected, tol, 0.0);
    cr_expect(ok, "step %d, n = %zu float (%s, seed %llu): expected %.9g, got %.9g, allowed error %.3g. "
              "Likely cause: %s", step, n, kind == RED_SMALL_INTS ? "small integers, exact" : "reals",
              (unsigned long long)seed, expected, (double)got, tol, red_diagnose_float(got, expected, tol));
    return ok && guards;
}

/* Every size; stop after a few failures so the report stays readable. */
static void ints_at_awkward_sizes(int step)
{
    CML_REQUIRE_GPU();
    uint64_t seed = test_seed();
    size_t sizes[N_SIZES];
    sizes_for(seed, sizes);
    int failures = 0;
    for (size_t k = 0; k < N_SIZES && failures < MAX_REPORTS; ++k)
        failures += !check_ints(step, sizes[k], seed, 100 * (uint64_t)step + k);
}

static void small_int_floats_at_awkward_sizes(int step)
{
    CML_REQUIRE_GPU();
    uint64_t seed = test_seed();
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
    uint64_t seed = test_seed();
    int failures = 0;
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0] && failures < MAX_REPORTS; ++k)
        failures += !check_floats(step, sizes[k], RED_REALS, seed, 300 * (uint64_t)step + k);
}

static void large_ints(int step)
{
    CML_REQUIRE_GPU();
    check_ints(step, ((size_t)1 << 28) + 1, test_seed(), 400 * (uint64_t)step);
}

/* The suites, from the step table. Suite "stepN"; tests read as sentences. */
#define STEP_TESTS(num, ident, file, what)                                                        \
    Test(CML_CAT(step, num), sums_ints_exactly_at_sizes_that_are_not_multiples_of_the_block, \
         .timeout = 120) { ints_at_awkward_sizes(num); }                                    \
    Test(CML_CAT(step, num), sums_integer_valued_floats_exactly_at_awkward_sizes,          \
         .timeout = 120) { small_int_floats_at_awkward_sizes(num); }                        \
    Test(CML_CAT(step, num), sums_random_floats_within_the_rounding_bound, .timeout = 120) \
    { real_floats_within_bound(num); }                                                      \
    Test(CML_CAT(step, num), sums_2_pow_28_plus_1_ints_exactly, .timeout = 300)             \
    { large_ints(num); }
REDUCTION_STEPS(STEP_TESTS)
