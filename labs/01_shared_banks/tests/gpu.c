/* GPU tests of lab 01, steps 4-7 (banks.cu), one Criterion suite per step.
 * Built twice: against your labs/01_shared_banks/banks.cu and against the
 * reference solution. (Steps 1-3 are tested in tests/model.c, no GPU.)
 *
 * Timing is the runner's job; here the probe is checked for what it must
 * leave behind: the sum of the words each thread read, and a start and stop
 * clock per warp. A*B^T is checked against a CPU product in double, for
 * seeded real and small-integer data (exact), with c poisoned before every
 * run and guard zones around every buffer. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_rng.h>
#include <cml/cml_test.h>
#include "banks_host.h"

/* ------------------------------------------------------------ step 4 */

static void probe_every_pattern(int rounds)
{
    banks_probe_buffers b;
    CML_TEST_CHECK(banks_probe_alloc(&b));
    for (int p = 0; p < BANKS_NUM_PATTERNS; ++p) {
        banks_probe_result r;
        CML_TEST_CHECK(banks_probe_run(&b, (banks_pattern)p, rounds, &r));
        cr_expect(r.ok, "pattern %s (%s), %d round%s: %s", banks_pattern_names[p], banks_pattern_whats[p], rounds,
                  rounds == 1 ? "" : "s", r.why);
        if (!r.ok)
            break;
    }
    banks_probe_free(&b);
}

Test(step4, probe_reads_the_pattern_words_and_times_each_warp_in_one_round, .timeout = 60)
{
    CML_REQUIRE_GPU();
    probe_every_pattern(1);
}

Test(step4, probe_repeats_the_reads_for_every_round, .timeout = 60)
{
    CML_REQUIRE_GPU();
    probe_every_pattern(7);
    cml_rng rng;
    cml_rng_init(&rng, cml_test_seed(), 401);
    probe_every_pattern(cml_rng_int(&rng, 2, 50));
    /* and refuses a round count it cannot do */
    banks_probe_buffers b;
    CML_TEST_CHECK(banks_probe_alloc(&b));
    int bad[] = {0, -1, BANKS_PROBE_MAX_ROUNDS + 1};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
        banks_probe_result r;
        cudaError_t err = banks_probe_run(&b, BANKS_PATTERN_stride_1, bad[k], &r);
        cr_expect_eq(err, cudaErrorInvalidValue, "rounds = %d: expected cudaErrorInvalidValue, got %s", bad[k],
                     cudaGetErrorName(err));
    }
    banks_probe_free(&b);
}

/* ------------------------------------------------------------ steps 5-7 */

/* Step 7 only: does c hold, in each of the first matrices, the sum over k
 * of A[i][k] * B[j][k ^ j]? That is what a swizzle on one side only gives:
 * B stored at bs[y][x ^ y] and read at bs[x][k], and B stored at bs[y][x]
 * and read at bs[x][k ^ x], both read B[x][k ^ x] for B[x][k]. From C the
 * two cannot be told apart, so the message names neither side. */
static int swizzled_on_one_side_only(const float *a, const float *b, const float *c, int batch)
{
    const int t = BANKS_TILE;
    int shown = batch < 16 ? batch : 16; /* enough evidence, and quick for 65537 matrices */
    for (int m = 0; m < shown; ++m) {
        const float *am = a + (size_t)m * t * t, *bm = b + (size_t)m * t * t, *cm = c + (size_t)m * t * t;
        for (int i = 0; i < t; ++i)
            for (int j = 0; j < t; ++j) {
                double s = 0.0, sa = 0.0;
                for (int k = 0; k < t; ++k) {
                    double p = (double)am[i * t + k] * (double)bm[j * t + (k ^ j)];
                    s += p;
                    sa += fabs(p);
                }
                double got = (double)cm[i * t + j];
                if (isnan(got) || fabs(got - s) > banks_abt_tolerance(sa))
                    return 0;
            }
    }
    return 1;
}

/* Runs step on batch matrices of the given data and checks every element. */
static void check_abt(int step, int batch, banks_data kind, uint64_t stream)
{
    size_t n = (size_t)batch * BANKS_TILE * BANKS_TILE;
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    double *ref = malloc(n * sizeof *ref), *abs_ref = malloc(n * sizeof *abs_ref);
    cr_assert(a && b && c && ref && abs_ref, "out of host memory for batch %d", batch);
    uint64_t seed = cml_test_seed();
    banks_make_matrices(a, batch, kind, seed, 2 * stream);
    banks_make_matrices(b, batch, kind, seed, 2 * stream + 1);
    banks_cpu_abt(a, b, batch, ref, abs_ref);

    banks_abt_buffers d;
    CML_TEST_CHECK(banks_abt_alloc(&d, batch));
    CML_TEST_CHECK(cudaMemcpy(d.a.ptr, a, n * sizeof *a, cudaMemcpyHostToDevice));
    CML_TEST_CHECK(cudaMemcpy(d.b.ptr, b, n * sizeof *b, cudaMemcpyHostToDevice));
    static banks_abt_result res;  /* the checked run the runner uses too */
    banks_abt_run_checked(&d, step, a, b, ref, abs_ref, c, 4, &res);
    cr_assert(res.err == cudaSuccess, "step %d, batch %d: CUDA error %s: %s", step, batch, cudaGetErrorName(res.err),
              cudaGetErrorString(res.err));
    banks_abt_free(&d);
    cr_expect(res.guards_intact, "step %d, batch %d: %s", step, batch, res.guard_msg);
    cr_expect(res.wrong == 0, "step %d, batch %d %s: %zu of %zu elements wrong:\n%s", step, batch,
              kind == BANKS_DATA_SMALL_INTS ? "small integers (exact)" : "reals", res.wrong, n, res.report);
    if (step == 7 && res.wrong > 0 && swizzled_on_one_side_only(a, b, c, batch))
        cr_expect(0, "step 7, batch %d: C[y][x] is the sum over k of A[y][k] * B[x][k ^ x], so the swizzle is "
                  "applied on one side only: either B is stored swizzled and read plain, or stored plain and "
                  "read swizzled (C cannot tell which). Store B[y][x] at bs[y][x ^ y] AND read B[x][k] at "
                  "bs[x][k ^ x]", batch);
    free(a);
    free(b);
    free(c);
    free(ref);
    free(abs_ref);
}

static void check_batches(int step)
{
    static const int batches[] = {1, 2, 33, 1000};
    for (size_t k = 0; k < sizeof batches / sizeof batches[0]; ++k)
        check_abt(step, batches[k], BANKS_DATA_REALS, k);
    cml_rng rng;
    cml_rng_init(&rng, cml_test_seed(), 500 + (uint64_t)step);
    check_abt(step, cml_rng_int(&rng, 3, 5000), BANKS_DATA_REALS, 10);
    cudaError_t err = banks_abt(step, NULL, NULL, NULL, 0);
    cr_expect_eq(err, cudaErrorInvalidValue, "batch 0: expected cudaErrorInvalidValue, got %s", cudaGetErrorName(err));
}

/* One suite per A*B^T step, from the step table. */
#define ABT_TESTS(num)                                                                            \
    Test(step##num, product_of_one_to_thousands_of_real_matrices, .timeout = 120)                 \
    {                                                                                             \
        CML_REQUIRE_GPU();                                                                        \
        check_batches(num);                                                                       \
    }                                                                                             \
    Test(step##num, product_of_small_integer_matrices_is_exact, .timeout = 120)                   \
    {                                                                                             \
        CML_REQUIRE_GPU();                                                                        \
        check_abt(num, 77, BANKS_DATA_SMALL_INTS, 20);                                            \
    }                                                                                             \
    Test(step##num, product_of_more_matrices_than_a_grid_y_dimension_holds, .timeout = 120)       \
    {                                                                                             \
        CML_REQUIRE_GPU();                                                                        \
        check_abt(num, 65537, BANKS_DATA_REALS, 30);                                              \
    }

ABT_TESTS(5)
ABT_TESTS(6)
ABT_TESTS(7)

/* Every A*B^T step is in the table and has a suite above. */
#define IS_ABT_STEP(num, ident, where, what) +((num) >= 5)
_Static_assert(0 BANKS_STEPS(IS_ABT_STEP) == 3, "banks.h has A*B^T steps without tests here");
