/* GPU tests of lab 08, one Criterion suite per step (step1 .. step4) made
 * from the step table in occupancy.h. Built twice: against your
 * labs/08_occupancy/occupancy.cu and occupancy_spill.cu and against the reference solution.
 *
 * Every run: the spec's seeded cases (labs/08_occupancy/spec.c; CML_SEED
 * changes them, and the size drawn from it), guard zones around x, coef
 * and y, y poisoned with NaN, each element judged within the float error
 * bound of its polynomial (occupancy_ref). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_spec.h>
#include <cml/cml_test.h>
#include "occupancy_host.h"

/* One case of the spec through the lab's checked run (guard zones,
 * poison), judged by the spec as the grader judges it. */
static int check_case(int step, const cml_case *c, uint64_t seed)
{
    size_t n = (size_t)c->a, nout = (size_t)(cml_lab_spec.out_bytes(c) / 4), guard = (nout - n) / 2;
    int degree = (int)c->b;
    const float *x = (const float *)c->data, *coef = x + n;
    float *y = malloc((n ? n : 1) * sizeof *y);
    uint32_t *layout = malloc(nout * sizeof *layout);
    cr_assert(y != NULL && layout != NULL, "out of host memory for %s", c->label);
    occupancy_buffers b;
    CML_TEST_CHECK(occupancy_buffers_alloc(&b, n, degree, x, coef));
    occupancy_result res;
    occupancy_run_checked(&b, step, x, coef, y, &res);
    cr_assert(res.err == cudaSuccess, "step %d, %s: CUDA error %s: %s", step, c->label, cudaGetErrorName(res.err),
              cudaGetErrorString(res.err));
    occupancy_buffers_free(&b);
    cr_expect(res.guards_intact, "step %d, %s: %s", step, c->label, res.guard_msg);
    memset(layout, 0xff, nout * sizeof *layout); /* the harness's output: guards (checked above), y, guards */
    memcpy(layout + guard, y, n * sizeof *y);
    char msg[500];
    int right = cml_lab_spec.judge(c, step, layout, nout * sizeof *layout, msg, sizeof msg);
    cr_expect(right, "step %d, %s (seed %llu): %s", step, c->label, (unsigned long long)seed, msg);
    free(y);
    free(layout);
    return right && res.guards_intact;
}

static void check_group(int step, const char *group)
{
    cml_test_spec_group(step, group, check_case, 1); /* one failing size is enough to read */
}

/* A call outside the contract is refused, not launched: a degree other than
 * the table's for steps 2 and 3, a degree past OCC_MAX_DEGREE, n < 0. */
static void check_refusals(int step)
{
    CML_REQUIRE_GPU();
    float *d = NULL;
    CML_TEST_CHECK(cudaMalloc((void **)&d, 4 * (OCC_MAX_DEGREE + 2)));
    int table = step == 2 || step == 3;
    cr_expect_eq(occupancy_step(step, d, d, 1, d, table ? OCC_TABLE_DEGREE - 1 : OCC_MAX_DEGREE + 1),
                 cudaErrorInvalidValue, "step %d: a degree outside the contract must return cudaErrorInvalidValue",
                 step);
    cr_expect_eq(occupancy_step(step, d, d, -1, d, OCC_TABLE_DEGREE), cudaErrorInvalidValue,
                 "step %d: n = -1 must return cudaErrorInvalidValue", step);
    cr_expect_eq(cudaGetLastError(), cudaSuccess, "step %d: a refused call must not launch", step);
    cudaFree(d);
}

/* The small sizes include n = 0; the refusals come first in the same test
 * (alone, an untouched skeleton would pass them: its dispatch is done). */
#define STEP_TESTS(num, ident, file, what)                                                          \
    Test(CML_CAT(step, num), evaluates_empty_small_and_ragged_arrays, .timeout = 120)               \
    {                                                                                               \
        check_refusals(num);                                                                        \
        check_group(num, "small_and_ragged");                                                       \
    }                                                                                               \
    Test(CML_CAT(step, num), evaluates_large_arrays, .timeout = 300) { check_group(num, "large"); }
OCCUPANCY_STEPS(STEP_TESTS)
