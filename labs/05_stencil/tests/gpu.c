/* GPU tests of lab 05, one Criterion suite per step (step1 ... step6), made
 * from the step table in stencil.h. Built twice: against your
 * labs/05_stencil/stencil.cu and against the reference solution.
 *
 * Each test runs one group of the lab's spec (labs/05_stencil/spec.c: the
 * grids, their data and the verdict, which the grader's kit-only check
 * uses too): seeded integer data and coefficients (every answer exact in
 * float), CML_SEED changes them and adds grids of its own. Every run: out
 * poisoned with NaN and guarded on both sides, in surrounded by 2^20 (on
 * the CPU path: in starts right after a guard page, so that reading in[-1]
 * faults). Grids are never all multiples of a tile: 1 point, 1 wide, tall,
 * prime, one past a tile; grids outside the limits of stencil.h must be
 * refused. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_spec.h>
#include <cml/cml_test.h>
#include "stencil_host.h"

#define MAX_FAILED_GRIDS 4

static st_grid grid_of(const cml_case *c)
{
    return (st_grid){(int)c->a, (int)(c->b & 0xffffffffu), (int)(c->b >> 32)};
}

/* The runner's arguments for this grid: "--n 100", "--size2 129x17", ... */
static const char *grid_args(int step, st_grid g, char *buf, size_t len)
{
    int dims = st_step_dims(step);
    if (dims == 1)
        snprintf(buf, len, "--n %d", g.nx);
    else if (dims == 2)
        snprintf(buf, len, "--size2 %dx%d", g.nx, g.ny);
    else
        snprintf(buf, len, "--size3 %dx%dx%d", g.nx, g.ny, g.nz);
    return buf;
}

/* Runs step on one case through the checked run (out poisoned, its guards
 * checked), judges it with the spec, and reports what is wrong. Returns 0
 * when anything is. */
static int check_case(int step, const cml_case *c, uint64_t seed)
{
    st_grid g = grid_of(c);
    size_t n = (size_t)(c->count - ST_HEAD);
    stencil_coeffs coeffs;
    memcpy(&coeffs, c->data, sizeof coeffs);
    const float *in = (const float *)c->data + ST_HEAD;
    if (c->kind == 0)
        cr_assert(st_grid_fits(step, g), "test bug: %s does not suit step %d", c->label, step);
    uint32_t *words = malloc((n + 2 * ST_GUARD) * sizeof *words);
    cr_assert(words != NULL, "out of host memory for %s", c->label);
    st_buffers b;
    CML_TEST_CHECK(st_buffers_alloc(&b, n ? n : 1));
    CML_TEST_CHECK(st_upload(&b, in, n));
    CML_TEST_CHECK(st_poison(&b));
    cudaError_t err = st_run_step(&b, step, g, &coeffs);
    st_result res;
    memset(&res, 0, sizeof res);
    uint64_t nbytes = 4;
    if (c->kind == 1) { /* the launcher's answer is the output; a CUDA error after it is one still */
        words[0] = (uint32_t)err;
        err = cudaDeviceSynchronize();
        res.guards_intact = 1;
    } else if (err == cudaSuccess && st_fetch_checked(&b, g, (float *)(words + ST_GUARD), &res) == 0) {
        err = res.err;
    }
    char args[64];
    cr_assert(err == cudaSuccess,
              "step %d, %s: CUDA error %s: %s. Likely cause: an access outside in or out: a halo cell before "
              "the array (in[-R] on the first tile) or past its end read without a bounds check, or a point "
              "past the grid's edge written. Find it with compute-sanitizer --tool memcheck "
              "./build/stencil_run --step %d %s --check-only (on the CPU path the report above names the line)",
              step, c->label, cudaGetErrorName(err), cudaGetErrorString(err), step,
              grid_args(step, g, args, sizeof args));
    st_buffers_free(&b);
    cr_expect(res.guards_intact, "step %d, %s (seed %llu): %s", step, c->label, (unsigned long long)seed,
              res.guard_msg);
    if (c->kind == 0) { /* out as the harness lays it out (stencil_host.h): guards, and its poison */
        for (size_t k = 0; k < ST_GUARD; ++k)
            words[k] = words[ST_GUARD + n + k] = ST_HARNESS_POISON;
        for (size_t k = ST_GUARD; k < ST_GUARD + n; ++k)
            if (words[k] == ST_POISON_BITS)
                words[k] = ST_HARNESS_POISON;
        nbytes = (n + 2 * ST_GUARD) * sizeof *words;
    }
    char msg[1400];
    int right = cml_lab_spec.judge(c, step, words, nbytes, msg, sizeof msg);
    cr_expect(right, "step %d, %s (seed %llu): %s", step, c->label, (unsigned long long)seed, msg);
    free(words);
    return res.guards_intact && right;
}

/* Every case of the group; stop after a few failures so the report stays readable. */
static void run_group(int step, const char *group)
{
    cml_test_spec_group(step, group, check_case, MAX_FAILED_GRIDS);
}

/* The suites, from the step table. Suite "stepN"; tests read as sentences
 * (each runs the spec's group of its own name). */
#define GROUP_TEST(num, name, secs) \
    Test(CML_CAT(step, num), name, .timeout = secs) { run_group(num, #name); }
#define STEP_TESTS(num, ident, file, what)                                        \
    GROUP_TEST(num, computes_grids_of_one_point_and_smaller_than_the_stencil, 120) \
    GROUP_TEST(num, computes_grids_that_are_not_multiples_of_the_tile, 240)        \
    GROUP_TEST(num, computes_one_wide_and_tall_grids, 240)                         \
    Test(CML_CAT(step, num), computes_a_large_grid, .timeout = 300)                  \
    {                                                                              \
        run_group(num, "computes_a_large_grid");                                   \
        run_group(num, "computes_a_large_grid_in_the_tests_only");                 \
    }
STENCIL_STEPS(STEP_TESTS)
