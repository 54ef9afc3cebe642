/* GPU tests of lab 03, one Criterion suite per step (step1 ... step9), made
 * from the step table in matmul.h. Built twice: against your
 * labs/03_tiled_matmul/matmul.cu and against the reference solution.
 *
 * Every run: seeded data uniform in [-1, 1) (CML_SEED changes them and the
 * shapes drawn from it), guard zones around A, B and C (NaN around A and B,
 * so a read past them shows in C), C poisoned with NaN. Every element of C
 * is compared with a CPU reference in double: |C - ref| must stay within
 * gamma_K * sum_k |A(i,k)| |B(k,j)|, the rounding error any order of float
 * additions can make (matmul_host.h); one term too few or too many, or one
 * wrong index, is far outside it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include <cml/cml_rng.h>
#include <cml/cml_test.h>
#include "matmul_host.h"

typedef struct shape {
    int M, N, K;
} shape;

#define COUNT(a) (sizeof (a) / sizeof (a)[0])
#define MAX_FAILED_SHAPES 3

/* Sizes on the CPU path (every CUDA thread emulated, matmul is O(n^3))
 * stay near 100, of the same kinds: 1, odd, prime, 2^k +- 1, K below,
 * across and above the k-tiles (8, 16, 32), K smaller and larger than N. */
static const shape thin_shapes[] = {
    {1, 1, 1}, {1, 1, 100}, {1, 77, 33}, {77, 1, 33}, {45, 67, 1}, {1, 129, 1},
};
static const shape edge_shapes[] = {
    {16, 16, 16}, {17, 15, 17}, {31, 33, 7}, {33, 31, 47}, {61, 67, 71}, {65, 63, 130}, {97, 129, 40},
};
#ifdef CML_CPU_BACKEND
static const shape skinny_shapes[] = {{300, 3, 37}, {3, 300, 37}, {5, 7, 301}};
static const shape large_shapes[] = {{129, 130, 131}};
#define MAX_DRAWN 70
#else
static const shape skinny_shapes[] = {{4099, 3, 70}, {3, 4099, 70}, {5, 7, 4099}, {100003, 2, 3}};
static const shape large_shapes[] = {{1000, 777, 513}, {1025, 1031, 1021}, {256, 384, 4096}};
#define MAX_DRAWN 300
#endif

/* Runs step on one seeded shape and checks C and the guards. Reports what
 * is wrong and returns 0 when anything is. */
static int check_shape(int step, shape s, uint64_t seed, uint64_t stream)
{
    size_t na = (size_t)s.M * s.K, nb = (size_t)s.K * s.N, nc = (size_t)s.M * s.N;
    float *A = malloc(na * sizeof *A), *B = malloc(nb * sizeof *B), *C = malloc(nc * sizeof *C);
    cr_assert(A != NULL && B != NULL && C != NULL, "out of host memory for %d x %d x %d", s.M, s.N, s.K);
    mm_make_data(A, na, seed, 2 * stream);
    mm_make_data(B, nb, seed, 2 * stream + 1);
    mm_reference ref;
    cr_assert(mm_reference_init(&ref, A, B, s.M, s.N, s.K, 1e300, seed) == 0, "out of host memory");
    mm_buffers b;
    CML_TEST_CHECK(mm_buffers_alloc(&b, s.M, s.N, s.K));
    CML_TEST_CHECK(mm_upload(&b, A, B));
    mm_result res;
    int ok = mm_run_checked(&b, step, &ref, C, &res);
    cr_assert(res.err == cudaSuccess,
              "step %d, %d x %d x %d: CUDA error %s: %s. Likely cause: %s. Find it with compute-sanitizer "
              "--tool memcheck ./build/matmul_run --step %d --m %d --n %d --k %d --check-only",
              step, s.M, s.N, s.K, cudaGetErrorName(res.err), cudaGetErrorString(res.err), mm_error_hint(), step,
              s.M, s.N, s.K);
    mm_buffers_free(&b);
    cr_expect(res.guards_intact, "step %d, %d x %d x %d (seed %llu): %s", step, s.M, s.N, s.K,
              (unsigned long long)seed, res.guard_msg);
    if (res.check.wrong > 0) {
        char msg[1400];
        cr_expect(0, "step %d, C = A * B of %d x %d x %d (seed %llu): %s", step, s.M, s.N, s.K,
                  (unsigned long long)seed, mm_describe(&res.check, msg, sizeof msg));
    }
    mm_reference_free(&ref);
    free(A);
    free(B);
    free(C);
    return ok;
}

/* Every shape; stop after a few failures so the report stays readable. */
static void check_shapes(int step, const shape *shapes, size_t count, uint64_t stream0)
{
    CML_REQUIRE_GPU();
    uint64_t seed = cml_test_seed();
    int failures = 0;
    for (size_t k = 0; k < count && failures < MAX_FAILED_SHAPES; ++k)
        failures += !check_shape(step, shapes[k], seed, stream0 + k);
}

/* The fixed edge shapes and one drawn from the seed (each side 2..MAX_DRAWN). */
static void ragged_shapes(int step)
{
    shape s[COUNT(edge_shapes) + 1];
    for (size_t k = 0; k < COUNT(edge_shapes); ++k)
        s[k] = edge_shapes[k];
    cml_rng rng;
    cml_rng_init(&rng, cml_test_seed(), 303);
    shape *d = &s[COUNT(edge_shapes)];
    d->M = cml_rng_int(&rng, 2, MAX_DRAWN);
    d->N = cml_rng_int(&rng, 2, MAX_DRAWN);
    d->K = cml_rng_int(&rng, 2, MAX_DRAWN);
    check_shapes(step, s, COUNT(s), 200 * (uint64_t)step);
}

/* The suites, from the step table. Suite "stepN"; tests read as sentences. */
#define STEP_TESTS(num, ident, file, what)                                                               \
    Test(CML_CAT(step, num), multiplies_1x1x1_1xn_and_mx1_matrices, .timeout = 120)                      \
    { check_shapes(num, thin_shapes, COUNT(thin_shapes), 100 * (uint64_t)(num)); }                       \
    Test(CML_CAT(step, num), multiplies_when_m_n_and_k_are_not_multiples_of_the_tile, .timeout = 120)    \
    { ragged_shapes(num); }                                                                              \
    Test(CML_CAT(step, num), multiplies_tall_skinny_and_long_k_matrices, .timeout = 120)                 \
    { check_shapes(num, skinny_shapes, COUNT(skinny_shapes), 300 * (uint64_t)(num)); }                   \
    Test(CML_CAT(step, num), multiplies_matrices_of_many_tiles, .timeout = 300)                          \
    { check_shapes(num, large_shapes, COUNT(large_shapes), 400 * (uint64_t)(num)); }
MATMUL_STEPS(STEP_TESTS)
