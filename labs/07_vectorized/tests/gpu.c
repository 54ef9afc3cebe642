/* GPU tests of lab 07, one Criterion suite per step (step1 ... step5), made
 * from the step table in vectorized.h. Built twice: against your
 * labs/07_vectorized/vectorized.cu and against the reference solution.
 *
 * Every test runs one group of the lab's spec (labs/07_vectorized/spec.c:
 * the cases and the judge the grader's kit-only check uses too) through
 * the checked run of the runner: out poisoned (0xffffffff) with poisoned
 * words on both sides, guard zones around x, y and out. Copies are judged
 * bit for bit; the scale-add within one rounding of a * x and one of the
 * sum. Steps 1-3 run 16-byte aligned arrays; steps 4 and 5 every offset of
 * 0-3 elements. CML_SEED changes the data and a size drawn from it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include <cml/cml_spec.h>
#include <cml/cml_test.h>
#include "vectorized_host.h"

/* Stop a test after this many wrong cases: the first says enough. */
#define MOST_WRONG 3

/* One case: a CUDA error ends the test (with the command that finds it);
 * a damaged guard or a wrong out is reported. Returns 0 when anything is
 * wrong. */
static int check_case(int step, const cml_case *c, uint64_t seed)
{
    size_t n = (size_t)c->a;
    unsigned off = (unsigned)(c->b & 0xffu);
    size_t words = off + n;
    const float *x = (const float *)c->data, *y = c->kind == VEC_SCALE_ADD ? x + words : NULL;
    uint32_t *layout = malloc((2 * VEC_GUARD + n) * sizeof *layout);
    cr_assert(layout != NULL, "out of host memory for %s", c->label);
    vectorized_buffers b;
    CML_TEST_CHECK(vectorized_buffers_alloc(&b, n, off, off, cml_bits_float((uint32_t)(c->b >> 32)), x, y));
    vectorized_result res;
    vectorized_run_checked(&b, step, layout, &res);
    cr_assert(res.err == cudaSuccess,
              "step %d, %s (seed %llu): CUDA error %s: %s. Likely cause: %s; find it with "
              "compute-sanitizer --tool memcheck ./build/vectorized_run --step %d --n %zu --offset %u "
              "--check-only",
              step, c->label, (unsigned long long)seed, cudaGetErrorName(res.err), cudaGetErrorString(res.err),
              res.err == cudaErrorMisalignedAddress
                  ? "a vector load or store at an address that is not a multiple of its size (a cast of x + off "
                    "or out + off to int4 * or float4 * before the head brings it to a 16-byte boundary)"
                  : "an access far outside x, y or out (a loop bound in elements used for vectors, or a missing "
                    "bounds check)",
              step, n, off);
    vectorized_buffers_free(&b);
    cr_expect(res.guards_intact, "step %d, %s (seed %llu): %s", step, c->label, (unsigned long long)seed,
              res.guard_msg);
    char msg[800];
    int right = cml_lab_spec.judge(c, step, layout, (2 * VEC_GUARD + n) * sizeof *layout, msg, sizeof msg);
    cr_expect(right, "step %d, %s (seed %llu): %s", step, c->label, (unsigned long long)seed, msg);
    free(layout);
    return right && res.guards_intact;
}

static void run_group(int step, const char *group)
{
    cml_test_spec_group(step, group, check_case, MOST_WRONG);
}

/* The suites, from the step table. Suite "stepN"; tests read as sentences. */
#define STEP_TESTS(num, ident, file, what)                                                              \
    Test(CML_CAT(step, num), writes_every_element_of_arrays_of_0_to_9_elements_at_every_offset,         \
         .timeout = 120) { run_group(num, "tiny_arrays"); }                                              \
    Test(CML_CAT(step, num), writes_every_element_when_n_is_not_a_multiple_of_the_vector_or_the_block, \
         .timeout = 120) { run_group(num, "ragged_sizes"); }                                             \
    Test(CML_CAT(step, num), writes_every_element_when_the_grid_stride_loop_goes_round_many_times,      \
         .timeout = 300) { run_group(num, "many_rounds"); }
VECTORIZED_STEPS(STEP_TESTS)
