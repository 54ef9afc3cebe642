/* GPU tests of lab 04, one Criterion suite per step (step1 ... step8),
 * made from the step table in reduction.h. Built twice: against your
 * labs/04_reduction/reduction.cu and against the reference solution.
 *
 * Every run: the spec's seeded cases (CML_SEED changes them, and adds two
 * sizes of its own), guard zones around every buffer, out[0] and scratch
 * poisoned. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_compare.h>
#include <cml/cml_rng.h>
#include <cml/cml_spec.h>
#include <cml/cml_test.h>
#include "red_big.h"
#include "reduction_host.h"

/* Each test runs one group of the lab's spec (labs/04_reduction/spec.c:
 * the cases and the judge the grader's kit-only check uses too) through
 * the checked run of the runner: out and scratch poisoned, guard zones
 * around every buffer. */
#define MAX_REPORTS 4

/* One case: a CUDA error ends the test; a damaged guard or a wrong sum is
 * reported (the spec's judge). Returns 0 when wrong. */
static int check_case(int step, const cml_case *c, uint64_t seed)
{
    red_type type = c->kind == 0 ? RED_INT : RED_FLOAT;
    red_buffers b;
    CML_TEST_CHECK(red_buffers_alloc(&b, type, (size_t)c->a));
    CML_TEST_CHECK(red_upload(&b, c->data));
    CML_TEST_CHECK(red_poison(&b));
    cudaError_t err = red_run_step(&b, step);
    cr_assert(err == cudaSuccess, "step %d, %s: CUDA error %s: %s", step, c->label, cudaGetErrorName(err),
              cudaGetErrorString(err));
    unsigned char got[4];
    CML_TEST_CHECK(red_fetch(&b, got));
    char guard_msg[200], msg[600] = "";
    int guards = red_guards_intact(&b, guard_msg, sizeof guard_msg, &err);
    CML_TEST_CHECK(err);
    red_buffers_free(&b);
    cr_expect(guards, "step %d, %s: %s", step, c->label, guard_msg);
    int right = cml_lab_spec.judge(c, step, got, sizeof got, msg, sizeof msg);
    cr_expect(right, "step %d, %s (seed %llu): %s", step, c->label, (unsigned long long)seed, msg);
    return guards && right;
}

/* Every case of the group; stop after a few failures so the report stays readable. */
static void run_group(int step, const char *group)
{
    cml_test_spec_group(step, group, check_case, MAX_REPORTS);
}

#ifdef CML_CPU_BACKEND
#define LARGE_LOG2 22
#else
#define LARGE_LOG2 28
#endif

/* The suites, from the step table. Suite "stepN"; tests read as sentences. */
#define STEP_TESTS(num, ident, file, what)                                                        \
    Test(CML_CAT(step, num), sums_ints_exactly_at_sizes_that_are_not_multiples_of_the_block, \
         .timeout = 120) { run_group(num, "ints_at_awkward_sizes"); }                                    \
    Test(CML_CAT(step, num), sums_integer_valued_floats_exactly_at_awkward_sizes,          \
         .timeout = 120) { run_group(num, "small_int_floats_at_awkward_sizes"); }                        \
    Test(CML_CAT(step, num), sums_random_floats_within_the_rounding_bound, .timeout = 120) \
    { run_group(num, "reals_within_bound"); }                                                      \
    Test(CML_CAT(step, num), sums_ints_whose_partial_sums_pass_2_pow_24, .timeout = 120)   \
    { run_group(num, "ints_past_2_pow_24"); }                                                            \
    Test(CML_CAT(step, num), sums_positive_reals_within_a_bound_one_dropped_element_breaks, \
         .timeout = 120) { run_group(num, "positive_reals"); }          \
    Test(CML_CAT(step, num), CML_CAT(CML_CAT(sums_2_pow_, LARGE_LOG2), _plus_1_ints_exactly), .timeout = 300) \
    { run_group(num, "large_ints"); }
REDUCTION_STEPS(STEP_TESTS)

#ifndef CML_CPU_BACKEND
/* The kit's maker and sum (red_big.cu) held to the host at a small size
 * first: the head's words cml_fill_int's (each -1, 0 or 1, all three
 * present), the tail all +1, and the device's sum the host's. */
static void kit_kernels_agree_with_the_host(uint64_t seed)
{
    enum { HEAD = 1 << 16, N = HEAD + 1000 };
    int *dev = NULL, *host = (int *)malloc(N * sizeof(int));
    cr_assert(host != NULL, "out of host memory");
    CML_TEST_CHECK(cudaMalloc((void **)&dev, N * sizeof(int)));
    CML_TEST_CHECK(cml_red_big_make_on_device(dev, N, HEAD, seed));
    int64_t on_device = 0, on_host = 0;
    CML_TEST_CHECK(cml_red_big_sum_on_device(dev, N, &on_device));
    CML_TEST_CHECK(cudaMemcpy(host, dev, N * sizeof(int), cudaMemcpyDeviceToHost));
    CML_TEST_CHECK(cudaFree(dev));
    int *want = (int *)malloc(HEAD * sizeof(int));
    cr_assert(want != NULL, "out of host memory");
    cml_fill_int(want, HEAD, -1, 1, seed, RED_BIG_STREAM);
    size_t seen[3] = {0, 0, 0};
    for (size_t i = 0; i < N; ++i) {
        on_host += host[i];
        if (i < HEAD) {
            cr_assert(host[i] >= -1 && host[i] <= 1, "the kit's maker: word %zu is %d, not -1, 0 or 1", i, host[i]);
            cr_assert(host[i] == want[i], "the kit's maker: word %zu is %d, cml_fill_int's %d", i, host[i], want[i]);
            seen[host[i] + 1]++;
        } else {
            cr_assert(host[i] == 1, "the kit's maker: tail word %zu is %d, not 1", i, host[i]);
        }
    }
    free(host);
    free(want);
    cr_assert(seen[0] && seen[1] && seen[2], "the kit's maker: the head lacks one of -1, 0 and 1");
    cr_assert(on_device == on_host, "the kit's sum: %lld on the device, %lld on the host", (long long)on_device,
              (long long)on_host);
}

/* n > 2^31 (the size_t interface): step `step` on one case of 8 GiB. The
 * data are made on the device, in the step's own input (one 8 GiB buffer a
 * test), and summed there by the kit's own kernels (red_big.cu) before the
 * step runs: a host loop over 8 GiB, its sum and the uploads took 11 to 16
 * s of every grading on an H200. One test a step, in the suite
 * past_2_pow_31, named stepN_...: the grader counts it with step N's tests
 * (whatever its suite, a test named stepN_ belongs to step N), and runs it
 * even where its kit-only checker found the step right, for that check has
 * no case past 2^31. The eight take turns on a GPU (cml_test_gpu_lock).
 * Not built on the CPU path: 8 GiB emulated thread by thread would take
 * hours. */
static void past_2_pow_31(int step)
{
    CML_REQUIRE_GPU();
    /* one 8 GiB case on a GPU at a time: twice what a test counts on */
    if (cml_test_gpu_lock("past-2-pow-31") < 0)
        cr_log_warn("no lock past-2-pow-31 (%s): this 8 GiB case may run beside the others", strerror(errno));
    uint64_t seed = cml_test_seed();
    cml_cases list;
    cr_assert(cml_spec_group_cases(&cml_lab_spec, "past_2_pow_31", seed, 0, 1, &list) && list.n == 1,
              "spec group past_2_pow_31: expected its one case");
    const cml_case *c = &list.v[0];
    kit_kernels_agree_with_the_host(seed);
    /* the input made on the device, and its sum taken there before the step runs */
    red_buffers b;
    int64_t expected;
    CML_TEST_CHECK(red_buffers_alloc(&b, RED_INT, (size_t)c->a));
    CML_TEST_CHECK(cml_red_big_make_on_device((int *)b.in.ptr, (size_t)c->a, (size_t)c->b, seed));
    CML_TEST_CHECK(cml_red_big_sum_on_device((int *)b.in.ptr, (size_t)c->a, &expected));
    /* the tail's +1s are in it: the head's 2^31 words of -1, 0 and 1 sum to
     * about +-38,000 (one standard deviation), far inside 2^19 */
    int64_t tail = (int64_t)(c->a - c->b);
    cr_assert(expected > tail - (1 << 19) && expected < tail + (1 << 19),
              "the kit's sum past 2^31: %lld, expected about %lld", (long long)expected, (long long)tail);
    CML_TEST_CHECK(red_poison(&b));
    cudaError_t err = red_run_step(&b, step);
    cr_assert(err == cudaSuccess, "step %d, %s: CUDA error %s: %s", step, c->label, cudaGetErrorName(err),
              cudaGetErrorString(err));
    int got;
    CML_TEST_CHECK(red_fetch(&b, &got));
    char guard_msg[200];
    int guards = red_guards_intact(&b, guard_msg, sizeof guard_msg, &err);
    CML_TEST_CHECK(err);
    red_buffers_free(&b);
    cr_expect(guards, "step %d, %s: %s", step, c->label, guard_msg);
    /* the tail past index 2^31 - 1 is all +1s: a sum short by no more than
     * it never reached them, the mark of an index that wraps at 32 bits */
    int64_t short_by = expected - (int64_t)got;
    char why[300];
    if (short_by > 0 && short_by <= tail)
        snprintf(why, sizeof why,
                 "short by %lld, no more than the %lld +1s past index 2^31 - 1: an index of 32 bits (an int i) "
                 "wraps before them; index with size_t",
                 (long long)short_by, (long long)tail);
    else
        snprintf(why, sizeof why, "%s", red_diagnose_int(got, expected));
    cr_expect((int64_t)got == expected, "step %d, %s (seed %llu): got %d, expected %lld: %s", step, c->label,
              (unsigned long long)seed, got, (long long)expected, why);
    cml_cases_free(&list);
}

#define PAST_2_POW_31_TEST(num, ident, file, what)                                                          \
    Test(past_2_pow_31, CML_CAT(CML_CAT(step, num), _sums_2_pow_31_plus_2_pow_20_plus_7_ints_exactly), \
         .timeout = 900) { past_2_pow_31(num); }
REDUCTION_STEPS(PAST_2_POW_31_TEST)
#endif
