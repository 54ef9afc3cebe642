/* GPU tests of lab @LAB@, one Criterion suite per step (step1, step2, ...)
 * made from the step table in @STEM@.h. Built twice: against your
 * labs/@LAB@/@STEM@.cu and against the reference solution.
 *
 * Every run: the spec's seeded cases (labs/@LAB@/spec.c; CML_SEED
 * changes them, and the size drawn from it), guard zones around in and out, out poisoned with NaN. One multiply
 * per element leaves no rounding freedom, so the check is bit for bit. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_rng.h>
#include <cml/cml_spec.h>
#include <cml/cml_test.h>
#include "@STEM@_host.h"


/* One case of the lab's spec (labs/@LAB@/spec.c: the cases and the judge
 * the grader's kit-only check uses too) through the runner's checked run
 * (guard zones around in and out, out poisoned), judged by the spec. */
static int check_case(int step, const cml_case *c, uint64_t seed)
{
    size_t n = (size_t)c->a, nout = (size_t)(cml_lab_spec.out_bytes(c) / 4), guard = (nout - n) / 2;
    float *out = malloc(n * sizeof *out), a;
    uint32_t *layout = malloc(nout * sizeof *layout), abits = (uint32_t)c->b;
    cr_assert(out != NULL && layout != NULL, "out of host memory for %s", c->label);
    memcpy(&a, &abits, 4);
    @STEM@_buffers b;
    CML_TEST_CHECK(@STEM@_buffers_alloc(&b, n, a, (const float *)c->data));
    @STEM@_result res;
    @STEM@_run_checked(&b, step, (const float *)c->data, out, &res);
    cr_assert(res.err == cudaSuccess, "step %d, %s: CUDA error %s: %s", step, c->label, cudaGetErrorName(res.err),
              cudaGetErrorString(res.err));
    @STEM@_buffers_free(&b);
    cr_expect(res.guards_intact, "step %d, %s: %s", step, c->label, res.guard_msg);
    memset(layout, 0xff, nout * sizeof *layout); /* the harness's output: guards (checked above), out, guards */
    memcpy(layout + guard, out, n * sizeof *out);
    char msg[400];
    int right = cml_lab_spec.judge(c, step, layout, nout * sizeof *layout, msg, sizeof msg);
    cr_expect(right, "step %d, %s (seed %llu): %s", step, c->label, (unsigned long long)seed, msg);
    free(out);
    free(layout);
    return right && res.guards_intact;
}

static void check_group(int step, const char *group)
{
    cml_test_spec_group(step, group, check_case, 1); /* one failing size is enough to read */
}

#define STEP_TESTS(num, ident, file, what)                                                        \
    Test(CML_CAT(step, num), scales_every_element_of_small_and_ragged_arrays, .timeout = 120)   \
    { check_group(num, "small_and_ragged"); }           \
    Test(CML_CAT(step, num), scales_every_element_of_large_arrays, .timeout = 300)               \
    { check_group(num, "large"); }
@STEM_UPPER@_STEPS(STEP_TESTS)
