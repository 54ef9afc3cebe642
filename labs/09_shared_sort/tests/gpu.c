/* GPU tests of lab 09, one Criterion suite per step (step1 ... step4), made
 * from the step table in shared_sort.h. Built twice: against your
 * labs/09_shared_sort/shared_sort.cu and against the reference solution.
 *
 * Every run: the spec's seeded cases (labs/09_shared_sort/spec.c; CML_SEED
 * changes them, and the sizes drawn from it), guard zones around in, out
 * and scratch, out and scratch poisoned with UINT_MAX (no key of the tests
 * is UINT_MAX). A sort has one answer, so every key is checked exactly;
 * a wrong one is told apart as never written, lost or duplicated, or out of
 * order. The sort steps (1, 2, 4) run the spec's sort groups, the merge
 * step (3) its merge groups, whose inputs are sorted runs. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_spec.h>
#include <cml/cml_test.h>
#include "shared_sort_host.h"

/* One case of the spec through the checked run (out and scratch poisoned,
 * guard zones around in, out and scratch), judged by the spec. */
static int check_case(int step, const cml_case *c, uint64_t seed)
{
    size_t n = (size_t)c->a, nout = (size_t)(cml_lab_spec.out_bytes(c) / 4), guard = (nout - n) / 2;
    uint32_t *out = malloc(n * sizeof *out), *layout = malloc(nout * sizeof *layout);
    cr_assert(out != NULL && layout != NULL, "out of host memory for %s", c->label);
    ss_buffers b;
    CML_TEST_CHECK(ss_buffers_alloc(&b, n, (size_t)c->b, c->data));
    ss_result res;
    ss_run_checked(&b, step, c->data, out, &res);
    /* a launch of 0 blocks: cudaErrorInvalidValue from CUDA 13 (an H200, 2026-12-01), cudaErrorInvalidConfiguration
     * from older toolkits */
    cr_assert(res.err != cudaErrorInvalidConfiguration && res.err != cudaErrorInvalidValue,
              "step %d, %s: CUDA error %s: %s. Likely cause: a launch of 0 blocks (a tile count rounded down is 0 "
              "below one tile, and leaves a partial last tile unsorted above), of more threads than a block holds, "
              "or a CUDA call given a wrong size or pointer",
              step, c->label, cudaGetErrorName(res.err), cudaGetErrorString(res.err));
    cr_assert(res.err == cudaSuccess,
              "step %d, %s: CUDA error %s: %s. Likely cause: an access far outside in, out or scratch; find "
              "it with compute-sanitizer --tool memcheck ./build/shared_sort_run --step %d --n %zu --width %zu "
              "--check-only",
              step, c->label, cudaGetErrorName(res.err), cudaGetErrorString(res.err), step, n, (size_t)c->b);
    ss_buffers_free(&b);
    cr_expect(res.guards_intact, "step %d, %s (seed %llu): %s", step, c->label, (unsigned long long)seed,
              res.guard_msg);
    memset(layout, 0xff, nout * sizeof *layout); /* the harness's output: guards (checked above), out, guards */
    memcpy(layout + guard, out, n * sizeof *out);
    char msg[1000];
    int right = cml_lab_spec.judge(c, step, layout, nout * sizeof *layout, msg, sizeof msg);
    cr_expect(right, "step %d, %s (seed %llu): %s", step, c->label, (unsigned long long)seed, msg);
    free(out);
    free(layout);
    return right && res.guards_intact;
}

/* The step's group of the pair: the sort one, or the merge one for step 3
 * (each case says which steps run it; the other group has none for it). */
static void check_groups(int step, const char *sort_group, const char *merge_group)
{
    size_t cases = cml_test_spec_group(step, sort_group, check_case, 1); /* one failing case is enough to read */
    cases += cml_test_spec_group(step, merge_group, check_case, 1);
    cr_assert(cases > 0, "step %d: no cases in %s or %s", step, sort_group, merge_group);
}

#define STEP_TESTS(num, ident, file, what)                                                               \
    Test(CML_CAT(step, num), orders_one_key_and_sizes_around_a_list_and_a_tile, .timeout = 120)        \
    { check_groups(num, "sizes", "merge_sizes"); }                                                       \
    Test(CML_CAT(step, num), keeps_equal_sorted_reversed_and_repeated_keys, .timeout = 120)            \
    { check_groups(num, "patterns", "merge_patterns"); }                                                 \
    Test(CML_CAT(step, num), orders_many_tiles_with_a_partial_last_one, .timeout = 300)                \
    { check_groups(num, "many_tiles", "merge_many_runs"); }
SHARED_SORT_STEPS(STEP_TESTS)
