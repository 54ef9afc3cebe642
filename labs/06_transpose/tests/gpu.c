/* GPU tests of lab 06, one Criterion suite per step (step1 ... step6),
 * made from the step table in transpose.h. Built twice: against your
 * labs/06_transpose/transpose.cu and against the reference solution.
 *
 * Every run: the spec's seeded cases, a different value in every element
 * (CML_SEED changes them, and adds three shapes of its own), guard zones
 * around in and out, out poisoned with NaN. A transpose moves values
 * without arithmetic, so the check is bit for bit. Step 1 is checked as a
 * copy. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include <cml/cml_spec.h>
#include <cml/cml_test.h>
#include "transpose_host.h"

/* Each test runs one group of the lab's spec (labs/06_transpose/spec.c:
 * the cases and the judge the grader's kit-only check uses too) through
 * the guarded run of the runner: out poisoned, guard zones around in and
 * out. */
#define MAX_FAILED_SHAPES 4

/* One case: a CUDA error ends the test; a damaged guard or a wrong out is
 * reported. Returns 0 when anything is wrong. */
static int check_case(int step, const cml_case *c, uint64_t seed)
{
    int rows = (int)c->a, cols = (int)c->b;
    float *out = malloc(c->count ? 4 * c->count : 4);
    cr_assert(out != NULL, "out of host memory for %s", c->label);
    tr_buffers b;
    CML_TEST_CHECK(tr_buffers_alloc(&b, rows, cols));
    CML_TEST_CHECK(tr_upload(&b, (const float *)c->data));
    tr_result res;
    tr_run_guarded(&b, step, out, &res);
    cr_assert(res.err == cudaSuccess,
              "step %d, %s: CUDA error %s: %s. Likely cause: an access far outside in or out (a missing "
              "bounds check); find it with compute-sanitizer --tool memcheck ./build/transpose_run --step %d "
              "--rows %d --cols %d --check-only",
              step, c->label, cudaGetErrorName(res.err), cudaGetErrorString(res.err), step, rows, cols);
    tr_buffers_free(&b);
    const char *job = tr_step_mode(step) == TR_COPY ? "copy" : "transpose";
    cr_expect(res.guards_intact, "step %d, %s of %s (seed %llu): %s", step, job, c->label,
              (unsigned long long)seed, res.guard_msg);
    char msg[1400];
    int right = cml_lab_spec.judge(c, step, out, 4 * c->count, msg, sizeof msg);
    cr_expect(right, "step %d, %s of %s (seed %llu): %s", step, job, c->label, (unsigned long long)seed, msg);
    free(out);
    return res.guards_intact && right;
}

/* Every case of the group; stop after a few failures so the report stays readable. */
static void run_group(int step, const char *group)
{
    cml_test_spec_group(step, group, check_case, MAX_FAILED_SHAPES);
}

/* The tall matrices (past 65535 tile rows: up to 67 million CUDA threads
 * on the CPU path, 2 to 15 s a step there on 2 cores). On the CPU path only once the step
 * places every element of 31 x 33, 32 x 32 and 33 x 31 (the first edge
 * shapes); on a GPU always. */
static void run_tall(int step)
{
    cml_test_spec_group_after(step, "edge_shapes", 3, "tall_matrices", check_case, MAX_FAILED_SHAPES);
}

/* The large matrix's size is in its test's name (spec.c's big_matrix). */
#ifdef CML_CPU_BACKEND
#define BIG_TEST places_every_element_of_a_2047_x_3073_matrix
#else
#define BIG_TEST places_every_element_of_an_8191_x_12289_matrix
#endif

/* The suites, from the step table. Suite "stepN"; tests read as sentences. */
#define STEP_TESTS(num, ident, file, what)                                                         \
    Test(CML_CAT(step, num), places_every_element_of_1x1_1xn_and_nx1_matrices, .timeout = 120)   \
    { run_group(num, "thin_matrices"); }                                                          \
    Test(CML_CAT(step, num), places_every_element_when_the_shape_is_not_a_multiple_of_the_tile, \
         .timeout = 120) { run_group(num, "edge_shapes"); }                                       \
    Test(CML_CAT(step, num), places_every_element_of_more_tile_rows_than_grid_dim_y_allows,      \
         .timeout = 120) { run_tall(num); }                                                       \
    Test(CML_CAT(step, num), BIG_TEST, .timeout = 300) { run_group(num, "big_matrix"); }
TRANSPOSE_STEPS(STEP_TESTS)
