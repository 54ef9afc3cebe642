/* GPU tests of lab @LAB@, one Criterion suite per step (step1, step2, ...)
 * made from the step table in @STEM@.h. Built twice: against your
 * labs/@LAB@/@STEM@.cu and against the reference solution.
 *
 * Every run: seeded data (CML_SEED changes them, and adds a size of its
 * own), guard zones around in and out, out poisoned with NaN. One multiply
 * per element leaves no rounding freedom, so the check is bit for bit. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include <cml/cml_rng.h>
#include <cml/cml_test.h>
#include "@STEM@_host.h"

#define COUNT(a) (sizeof (a) / sizeof (a)[0])

/* Around one block of 256 and past it; primes; 2^k - 1 and 2^k + 1. */
static const size_t small_sizes[] = {1, 2, 255, 256, 257, 1009, 65535, 65537};
#ifdef CML_CPU_BACKEND
static const size_t large_sizes[] = {1000003, (1u << 20) + 1};  /* the CPU path: the same kinds, smaller */
#else
static const size_t large_sizes[] = {(1u << 24) + 1, 100000007};
#endif

static int check_size(int step, size_t n, uint64_t seed, uint64_t stream)
{
    float *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out), a;
    cr_assert(in != NULL && out != NULL, "out of host memory for n = %zu", n);
    @STEM@_make_data(in, n, &a, seed, stream);
    @STEM@_buffers b;
    CML_TEST_CHECK(@STEM@_buffers_alloc(&b, n, a, in));
    @STEM@_result res;
    int ok = @STEM@_run_checked(&b, step, in, out, &res);
    cr_assert(res.err == cudaSuccess, "step %d, n = %zu: CUDA error %s: %s", step, n, cudaGetErrorName(res.err),
              cudaGetErrorString(res.err));
    @STEM@_buffers_free(&b);
    cr_expect(res.guards_intact, "step %d, n = %zu: %s", step, n, res.guard_msg);
    if (res.check.wrong > 0) {
        char msg[400];
        cr_expect(0, "step %d, n = %zu: %s", step, n, @STEM@_describe(&res.check, msg, sizeof msg));
    }
    free(in);
    free(out);
    return ok;
}

static void check_sizes(int step, const size_t *sizes, size_t count, uint64_t stream0, int seeded_extra)
{
    CML_REQUIRE_GPU();
    uint64_t seed = cml_test_seed();
    for (size_t k = 0; k < count; ++k)
        if (!check_size(step, sizes[k], seed, stream0 + k))
            return;  /* one failing size is enough to read */
    if (seeded_extra) {
        cml_rng rng;
        cml_rng_init(&rng, seed, 700 + (uint64_t)step);
        check_size(step, (size_t)cml_rng_int(&rng, 2, 3000000), seed, stream0 + 99);
    }
}

#define STEP_TESTS(num, ident, file, what)                                                        \
    Test(CML_CAT(step, num), scales_every_element_of_small_and_ragged_arrays, .timeout = 120)   \
    { check_sizes(num, small_sizes, COUNT(small_sizes), 100 * (uint64_t)(num), 1); }           \
    Test(CML_CAT(step, num), scales_every_element_of_large_arrays, .timeout = 300)               \
    { check_sizes(num, large_sizes, COUNT(large_sizes), 200 * (uint64_t)(num), 0); }
@STEM_UPPER@_STEPS(STEP_TESTS)
