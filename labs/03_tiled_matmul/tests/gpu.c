/* GPU tests of lab 03, one Criterion suite per step (step1 ... step9), made
 * from the step table in matmul.h. Built twice: against your
 * labs/03_tiled_matmul/matmul.cu and against the reference solution.
 *
 * Every run: the spec's shapes with seeded data uniform in [-1, 1)
 * (labs/03_tiled_matmul/spec.c; CML_SEED changes them and the shapes drawn
 * from it), guard zones around A, B and C (NaN around A and B,
 * so a read past them shows in C), C poisoned with NaN. Every element of C
 * is compared with a CPU reference in double: |C - ref| must stay within
 * gamma_K * sum_k |A(i,k)| |B(k,j)|, the rounding error any order of float
 * additions can make (matmul_host.h); one term too few or too many, or one
 * wrong index, is far outside it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_rng.h>
#include <cml/cml_spec.h>
#include <cml/cml_test.h>
#include "matmul_host.h"

#define MAX_FAILED_SHAPES 3

/* Runs step on one case of the lab's spec (labs/03_tiled_matmul/spec.c:
 * its shapes, data and judge, the grader's kit-only check's too), with the
 * guard zones and poison of the runner's checked run, and judges C with the
 * spec. Reports what is wrong and returns 0 when anything is. */
static int check_case(int step, const cml_case *c, uint64_t seed)
{
    int M = (int)c->a, N = (int)c->b, K = (int)c->kind;
    const float *A = (const float *)c->data, *B = A + (size_t)M * K;
    size_t nc = (size_t)M * N, nout = (size_t)(cml_lab_spec.out_bytes(c) / 4);
    float *C = malloc(nc * sizeof *C);
    uint32_t *out = malloc(nout * sizeof *out);
    cr_assert(C != NULL && out != NULL, "out of host memory for %s", c->label);
    mm_reference ref;  /* the runner's check, for its guards (the judge below decides C) */
    cr_assert(mm_reference_init(&ref, A, B, M, N, K, 0.0, seed) == 0, "out of host memory");
    mm_buffers b;
    CML_TEST_CHECK(mm_buffers_alloc(&b, M, N, K));
    CML_TEST_CHECK(mm_upload(&b, A, B));
    mm_result res;
    mm_run_checked(&b, step, &ref, C, &res);
    cr_assert(res.err == cudaSuccess,
              "step %d, %s: CUDA error %s: %s. Likely cause: %s. Find it with compute-sanitizer "
              "--tool memcheck ./build/matmul_run --step %d --m %d --n %d --k %d --check-only",
              step, c->label, cudaGetErrorName(res.err), cudaGetErrorString(res.err), mm_error_hint(), step, M, N,
              K);
    mm_buffers_free(&b);
    mm_reference_free(&ref);
    cr_expect(res.guards_intact, "step %d, %s (seed %llu): %s", step, c->label, (unsigned long long)seed,
              res.guard_msg);
    /* C in the harness's output layout: the runner's poison is its unwritten mark; guards checked above */
    memcpy(out, C, nc * sizeof *C);
    memset(out + nc, 0xff, (nout - nc) * sizeof *out);
    char msg[1400];
    int right = cml_lab_spec.judge(c, step, out, nout * sizeof *out, msg, sizeof msg);
    cr_expect(right, "step %d, C = A * B of %s (seed %llu): %s", step, c->label, (unsigned long long)seed, msg);
    free(C);
    free(out);
    return right && res.guards_intact;
}

/* Every case of a group of the spec; stop after a few failures so the report stays readable. */
static void check_group(int step, const char *group)
{
    cml_test_spec_group(step, group, check_case, MAX_FAILED_SHAPES);
}

/* The suites, from the step table. Suite "stepN"; tests read as sentences. */
#define STEP_TESTS(num, ident, file, what)                                                               \
    Test(CML_CAT(step, num), multiplies_1x1x1_1xn_and_mx1_matrices, .timeout = 120)                      \
    { check_group(num, "thin"); }                       \
    Test(CML_CAT(step, num), multiplies_when_m_n_and_k_are_not_multiples_of_the_tile, .timeout = 120)    \
    { check_group(num, "ragged"); }                                                                              \
    Test(CML_CAT(step, num), multiplies_tall_skinny_and_long_k_matrices, .timeout = 120)                 \
    { check_group(num, "skinny"); }                   \
    Test(CML_CAT(step, num), multiplies_matrices_of_many_tiles, .timeout = 300)                          \
    { check_group(num, "large"); }
MATMUL_STEPS(STEP_TESTS)
