/* GPU tests of lab 02, one Criterion suite per step (step1 ... step8), made
 * from the step table in constmem.h. Built twice: against your
 * labs/02_constant_memory/constmem.cu and against the reference solution.
 *
 * Each test runs one group of the lab's spec (labs/02_constant_memory/spec.c:
 * the cases and the judge the grader's kit-only check uses too) through the
 * checked run of the runner: outputs poisoned with NaN, guard zones around
 * every buffer. Steps 1-5 (the walk): seeded tables of nonzero integers, so
 * every sum is exact and the check is exact; steps 2-4 run every d = 1, 2,
 * 4, ..., 32, and steps 3 and 4 both tables' walks. The tables the steps 3
 * and 4 read and the walk's signs reach the device only after
 * constmem_upload_tables has returned. Steps 6-8 (the convolution): seeded
 * images and filters of every radius, checked against a CPU convolution in
 * double (exactly on integer-valued data, else within a bound from float's
 * rounding). Thread counts and image sizes that are not multiples of a
 * block or tile (1, 31, 33, primes, 1-wide and tall images). CML_SEED
 * changes the data and adds sizes of its own. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_spec.h>
#include <cml/cml_test.h>
#include "constmem_host.h"

#define MAX_FAILED_CASES 4
/* A walk case's data (common/labs/02_constant_memory/harness.c): the
 * uploaded tables, the global copies, the signs. */
#define TABLES (CONSTMEM_TABLE_ENTRIES + CONSTMEM_BIG_ENTRIES)

/* The spec's verdict on one case's output (out, nbytes), reported. */
static int judged(int step, const cml_case *c, const float *out, uint64_t nbytes, uint64_t seed)
{
    char msg[2048];
    int right = cml_lab_spec.judge(c, step, out, nbytes, msg, sizeof msg);
    cr_expect(right, "step %d, %s (seed %llu): %s", step, c->label, (unsigned long long)seed, msg);
    return right;
}

/* A host copy of n floats of src, exactly n long (as the harness gives the
 * uploads: nothing of the case's other data lies past it). */
static float *exact_copy(const float *src, size_t n)
{
    float *p = malloc(n * sizeof *p);
    cr_assert(p != NULL, "out of host memory");
    memcpy(p, src, n * sizeof *p);
    return p;
}

/* One walk: the upload gets its tables, then the global copies go on the
 * device and the kernel gets the signs, as in the harness. */
static int check_walk(int step, const cml_case *c, uint64_t seed)
{
    const float *data = (const float *)c->data;
    int d = (int)((c->kind >> 8) & 0xff), big = (int)((c->kind >> 16) & 0xff);
    int threads = (int)c->a, passes = (int)c->b;
    float *out = malloc((size_t)threads * sizeof *out);
    cr_assert(out != NULL, "out of host memory for %d threads", threads);
    float *table = exact_copy(data, CONSTMEM_TABLE_ENTRIES);
    float *big_table = exact_copy(data + CONSTMEM_TABLE_ENTRIES, CONSTMEM_BIG_ENTRIES);
    cm_lookup_buffers b;
    CML_TEST_CHECK(cm_lookup_alloc_slices(&b, threads, 1));
    cudaError_t err = cm_call_upload_tables(table, big_table);
    cr_assert(err == cudaSuccess, "constmem_upload_tables: %s (%s): %s", cudaGetErrorName(err),
              cudaGetErrorString(err), cm_upload_error_text());
    /* after the upload: what it computed from its tables cannot know these */
    CML_TEST_CHECK(cm_lookup_upload_globals(&b, data + TABLES, data + TABLES + CONSTMEM_TABLE_ENTRIES));
    unsigned signs = c->data[2 * TABLES];
    CML_TEST_CHECK(cm_lookup_poison(&b));
    err = cm_lookup_launch_one(&b, step, d, big, passes, signs, 0);
    cm_lookup_result res = {.err = err};
    if (err == cudaSuccess)
        cm_lookup_fetch(&b, out, &res);
    cr_assert(res.err == cudaSuccess,
              "step %d, %s: CUDA error %s: %s. Likely cause: an access outside the table or out; find it with "
              "compute-sanitizer --tool memcheck ./build/constmem_run --step %d --threads %d --passes %d "
              "--check-only",
              step, c->label, cudaGetErrorName(res.err), cudaGetErrorString(res.err), step, threads, passes);
    cm_lookup_free(&b);
    free(table);
    free(big_table);
    cr_expect(res.guards_intact, "step %d, %s (seed %llu): %s", step, c->label, (unsigned long long)seed,
              res.guard_msg);
    int right = judged(step, c, out, (uint64_t)threads * sizeof *out, seed);
    free(out);
    return res.guards_intact && right;
}

/* One convolution: the filter uploaded first (constant memory, and its
 * global copy), then the image. */
static int check_conv(int step, const cml_case *c, uint64_t seed)
{
    int radius = (int)(c->kind >> 8), width = (int)c->a, height = (int)c->b;
    size_t taps = (size_t)cm_taps(radius), n = (size_t)width * (size_t)height;
    float *w = exact_copy((const float *)c->data, taps);
    float *out = malloc(n * sizeof *out);
    cr_assert(out != NULL, "out of host memory for %d x %d", width, height);
    cudaError_t err = cm_call_upload_filter(w, radius);
    cr_assert(err == cudaSuccess, "constmem_upload_filter: %s (%s): %s", cudaGetErrorName(err),
              cudaGetErrorString(err), cm_upload_error_text());
    cm_conv_buffers b;
    CML_TEST_CHECK(cm_conv_alloc(&b, width, height));
    CML_TEST_CHECK(cm_conv_upload_filter_global(&b, w, radius));
    CML_TEST_CHECK(cm_conv_upload_image(&b, (const float *)c->data + taps));
    CML_TEST_CHECK(cm_conv_poison(&b));
    err = cm_conv_launch(&b, step, w, radius);
    cm_conv_result res = {.err = err};
    if (err == cudaSuccess)
        cm_conv_fetch(&b, out, &res);
    cr_assert(res.err == cudaSuccess,
              "step %d, %s: CUDA error %s: %s. Likely cause: an access far outside the image (a missing bounds "
              "check); find it with compute-sanitizer --tool memcheck ./build/constmem_run --step %d --width %d "
              "--height %d --radius %d --check-only",
              step, c->label, cudaGetErrorName(res.err), cudaGetErrorString(res.err), step, width, height, radius);
    cm_conv_free(&b);
    free(w);
    cr_expect(res.guards_intact, "step %d, %s (seed %llu): %s", step, c->label, (unsigned long long)seed,
              res.guard_msg);
    int right = judged(step, c, out, (uint64_t)n * sizeof *out, seed);
    free(out);
    return res.guards_intact && right;
}

/* Every case of the groups the step runs (the second may be NULL); stop
 * after a few failures so the report stays readable. */
static int check_case(int step, const cml_case *c, uint64_t seed)
{
    return (cm_step_kind(step) == CM_CONV ? check_conv : check_walk)(step, c, seed);
}

/* The cases of the groups the step runs (the second may be NULL). */
static void run_groups(int step, const char *group, const char *also)
{
    size_t ran = cml_test_spec_group(step, group, check_case, MAX_FAILED_CASES);
    if (also)
        ran += cml_test_spec_group(step, also, check_case, MAX_FAILED_CASES);
    cr_assert(ran > 0, "spec group %s has no case for step %d", group, step);
}

static void run_group(int step, const char *group) { run_groups(step, group, NULL); }

/* The suites, from the step table. Suite "stepN"; tests read as sentences. */
#define STEP_TESTS(num, ident, file, what)                                                             \
    Test(CML_CAT(step, num), is_right_for_one_thread_a_warp_and_1_wide_images, .timeout = 120)       \
    { run_group(num, "thin"); }                                                                      \
    Test(CML_CAT(step, num), is_right_when_sizes_are_not_multiples_of_the_block_or_tile, .timeout = 120) \
    { run_group(num, "edges"); }                                                                     \
    Test(CML_CAT(step, num), is_right_for_a_large_problem, .timeout = 300) { run_groups(num, "large", "large_images"); }
CONSTMEM_STEPS(STEP_TESTS)
