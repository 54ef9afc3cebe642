/* GPU tests of lab 02, one Criterion suite per step (step1 ... step8), made
 * from the step table in constmem.h. Built twice: against your
 * labs/02_constant_memory/constmem.cu and against the reference solution.
 *
 * Steps 1-5 (the walk): seeded tables of nonzero integers, so every sum is
 * exact and the check is exact; steps 2-4 run every d = 1, 2, 4, ..., 32,
 * and steps 3 and 4 both tables' walks. The walk's signs are drawn after
 * the upload, for every case anew. Steps 6-8 (the convolution):
 * seeded images and filters of every radius, checked against a CPU
 * convolution in double with a tolerance from float's rounding. Every run:
 * outputs poisoned with NaN, guard zones around every buffer, thread counts
 * and image sizes that are not multiples of a block or tile (1, 31, 33,
 * primes, 1-wide and tall images). CML_SEED changes the data and adds
 * sizes of its own. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include <cml/cml_rng.h>
#include <cml/cml_test.h>
#include "constmem_host.h"

#define COUNT(a) (sizeof (a) / sizeof (a)[0])
#define MAX_FAILED_CASES 4

/* ------------------------------------------------------------ the walk (steps 1-5) */

typedef struct lookup_case {
    int threads, passes;
} lookup_case;

static const lookup_case thin_lookups[] = {{1, 1}, {31, 2}, {32, 1}, {33, 3}};
static const lookup_case edge_lookups[] = {{255, 2}, {257, 1}, {1000, 3}, {65537, 1}, {100003, 2}};
#ifdef CML_CPU_BACKEND
/* The CPU path runs every CUDA thread as a fiber: a smaller large case. */
static const lookup_case large_lookups[] = {{131071, 4}, {1025, CONSTMEM_MAX_PASSES}};
#else
static const lookup_case large_lookups[] = {{(1 << 18) + 3, 16}, {4099, CONSTMEM_MAX_PASSES}};
#endif

/* Uploads seeded tables: table and big to constant memory through
 * constmem_upload_tables, then other tables (global and gbig) as the global
 * copies steps 3 and 4 read. The upload never sees what those steps must
 * read: a step 3 or 4 that reads the constant tables (or anything made
 * from them) gets wrong sums. */
static void upload_tables(cm_lookup_buffers *b, float *table, float *big, float *global, float *gbig, uint64_t seed,
                          uint64_t stream)
{
    cm_make_table(table, CONSTMEM_TABLE_ENTRIES, seed, stream);
    cm_make_table(big, CONSTMEM_BIG_ENTRIES, seed, stream + 1);
    cudaError_t err = cm_call_upload_tables(table, big);
    cr_assert(err == cudaSuccess, "constmem_upload_tables: %s (%s): %s", cudaGetErrorName(err),
              cudaGetErrorString(err), cm_upload_error_text());
    cm_make_table(global, CONSTMEM_TABLE_ENTRIES, seed, stream + 0x5000);
    cm_make_table(gbig, CONSTMEM_BIG_ENTRIES, seed, stream + 0x5001);
    CML_TEST_CHECK(cm_lookup_upload_globals(b, global, gbig));
}

/* One checked sweep of step on one case and walk; reports what is wrong. */
static int check_lookup(int step, lookup_case c, int big, uint64_t seed, uint64_t stream)
{
    static float table[CONSTMEM_TABLE_ENTRIES], big_table[CONSTMEM_BIG_ENTRIES];
    static float global[CONSTMEM_TABLE_ENTRIES], global_big[CONSTMEM_BIG_ENTRIES];
    int from_global = step == 3 || step == 4;
    float *out = malloc((size_t)CM_NUM_D * (size_t)c.threads * sizeof *out);
    cr_assert(out != NULL, "out of host memory for %d threads", c.threads);
    cm_lookup_buffers b;
    CML_TEST_CHECK(cm_lookup_alloc(&b, c.threads));
    upload_tables(&b, table, big_table, global, global_big, seed, stream);
    /* after the upload: what it computed from its tables cannot know them */
    unsigned signs = cm_make_signs(seed, stream + 0x6000);
    CML_TEST_CHECK(cm_lookup_poison(&b));
    cudaError_t err = cm_lookup_launch(&b, step, big, c.passes, signs);
    cm_lookup_result res = {.err = err};
    if (err == cudaSuccess)
        cm_lookup_verify(&b, step, big, c.passes, signs, from_global ? global : table,
                         from_global ? global_big : big_table, out, &res);
    cr_assert(res.err == cudaSuccess,
              "step %d, %d threads, %d passes: CUDA error %s: %s. Likely cause: an access outside the table or "
              "out; find it with compute-sanitizer --tool memcheck ./build/constmem_run --step %d --threads %d "
              "--check-only",
              step, c.threads, c.passes, cudaGetErrorName(res.err), cudaGetErrorString(res.err), step, c.threads);
    cm_lookup_free(&b);
    int ok = res.guards_intact;
    cr_expect(res.guards_intact, "step %d, %d threads (seed %llu): %s", step, c.threads, (unsigned long long)seed,
              res.guard_msg);
    for (int k = 0; k < res.nd; ++k) {
        if (res.check[k].wrong == 0)
            continue;
        char msg[1600];
        cr_expect(0, "step %d, %d threads (seed %llu): %s", step, c.threads, (unsigned long long)seed,
                  cm_lookup_describe(&res.check[k], msg, sizeof msg));
        ok = 0;
        break;  /* the first wrong d says enough */
    }
    free(out);
    return ok;
}

/* Every case with the step's walks: steps 3 and 4 read both tables. */
static void check_lookups(int step, const lookup_case *cases, size_t count, uint64_t stream0)
{
    uint64_t seed = cml_test_seed();
    int failures = 0;
    for (int big = 0; big <= 1; ++big) {
        if (big != cm_step_big(step) && step != 3 && step != 4)
            continue;
        for (size_t k = 0; k < count && failures < MAX_FAILED_CASES; ++k)
            failures += !check_lookup(step, cases[k], big, seed, stream0 + 2 * k);
    }
}

/* ------------------------------------------------------------ the convolution (steps 6-8) */

typedef struct conv_case {
    int width, height, radius;
} conv_case;

static const conv_case thin_convs[] = {{1, 1, 1}, {1, 1, 4}, {1, 1025, 2}, {4097, 1, 3}, {2, 3, 4}};
/* Around one tile (32 x 64), then ragged right and bottom edges. */
static const conv_case fixed_edge_convs[] = {{31, 63, 1}, {32, 64, 2}, {33, 65, 3}, {257, 131, 4},
                                             {1000, 777, 2}, {97, 1031, 1}};
#ifdef CML_CPU_BACKEND
static const conv_case large_convs[] = {{1031, 1021, 2}, {61, 20011, 4}};
#else
static const conv_case large_convs[] = {{4099, 4097, 2}, {8191, 1031, 4}, {61, 200003, 3}};
#endif

static int check_conv(int step, conv_case c, uint64_t seed, uint64_t stream)
{
    size_t n = (size_t)c.width * (size_t)c.height;
    float *img = malloc(n * sizeof *img), *out = malloc(n * sizeof *out);
    float w[CONSTMEM_MAX_TAPS];
    cr_assert(img != NULL && out != NULL, "out of host memory for %d x %d", c.width, c.height);
    cm_make_image(img, n, seed, stream);
    cm_make_filter(w, c.radius, seed, stream + 1);
    cm_conv_buffers b;
    CML_TEST_CHECK(cm_conv_alloc(&b, c.width, c.height));
    CML_TEST_CHECK(cm_conv_upload_image(&b, img));
    CML_TEST_CHECK(cm_conv_upload_filter_global(&b, w, c.radius));
    cudaError_t err = cm_call_upload_filter(w, c.radius);
    cr_assert(err == cudaSuccess, "constmem_upload_filter: %s (%s): %s", cudaGetErrorName(err),
              cudaGetErrorString(err), cm_upload_error_text());
    CML_TEST_CHECK(cm_conv_poison(&b));
    err = cm_conv_launch(&b, step, w, c.radius);
    cm_conv_result res = {.err = err};
    if (err == cudaSuccess)
        cm_conv_verify(&b, img, w, c.radius, out, &res);
    cr_assert(res.err == cudaSuccess,
              "step %d, %d x %d, radius %d: CUDA error %s: %s. Likely cause: an access far outside the image "
              "(a missing bounds check); find it with compute-sanitizer --tool memcheck ./build/constmem_run "
              "--step %d --width %d --height %d --radius %d --check-only",
              step, c.width, c.height, c.radius, cudaGetErrorName(res.err), cudaGetErrorString(res.err), step,
              c.width, c.height, c.radius);
    cm_conv_free(&b);
    cr_expect(res.guards_intact, "step %d, %d x %d, radius %d (seed %llu): %s", step, c.width, c.height, c.radius,
              (unsigned long long)seed, res.guard_msg);
    if (res.check.wrong > 0) {
        char msg[1600];
        cr_expect(0, "step %d, %d x %d, radius %d (seed %llu): %s", step, c.width, c.height, c.radius,
                  (unsigned long long)seed, cm_conv_describe(&res.check, msg, sizeof msg));
    }
    free(img);
    free(out);
    return res.guards_intact && res.check.wrong == 0;
}

static void check_convs(int step, const conv_case *cases, size_t count, uint64_t stream0)
{
    uint64_t seed = cml_test_seed();
    int failures = 0;
    for (size_t k = 0; k < count && failures < MAX_FAILED_CASES; ++k)
        failures += !check_conv(step, cases[k], seed, stream0 + 2 * k);
}

/* ------------------------------------------------------------ per step */

static void thin(int step)
{
    CML_REQUIRE_GPU();
    if (cm_step_kind(step) == CM_LOOKUP)
        check_lookups(step, thin_lookups, COUNT(thin_lookups), 100 * (uint64_t)step);
    else
        check_convs(step, thin_convs, COUNT(thin_convs), 100 * (uint64_t)step);
}

/* The fixed cases and one drawn from the seed. */
static void edges(int step)
{
    CML_REQUIRE_GPU();
    cml_rng rng;
    cml_rng_init(&rng, cml_test_seed(), 202);
    if (cm_step_kind(step) == CM_LOOKUP) {
        lookup_case c[COUNT(edge_lookups) + 1];
        for (size_t k = 0; k < COUNT(edge_lookups); ++k)
            c[k] = edge_lookups[k];
        c[COUNT(edge_lookups)].threads = cml_rng_int(&rng, 2, 50000);
        c[COUNT(edge_lookups)].passes = cml_rng_int(&rng, 1, 8);
        check_lookups(step, c, COUNT(c), 200 * (uint64_t)step);
    } else {
        conv_case c[COUNT(fixed_edge_convs) + 1];
        for (size_t k = 0; k < COUNT(fixed_edge_convs); ++k)
            c[k] = fixed_edge_convs[k];
        conv_case *s = &c[COUNT(fixed_edge_convs)];
        s->width = cml_rng_int(&rng, 2, 600);
        s->height = cml_rng_int(&rng, 2, 600);
        s->radius = cml_rng_int(&rng, 1, CONSTMEM_MAX_RADIUS);
        check_convs(step, c, COUNT(c), 200 * (uint64_t)step);
    }
}

static void large(int step)
{
    CML_REQUIRE_GPU();
    if (cm_step_kind(step) == CM_LOOKUP)
        check_lookups(step, large_lookups, COUNT(large_lookups), 300 * (uint64_t)step);
    else
        check_convs(step, large_convs, COUNT(large_convs), 300 * (uint64_t)step);
}

/* The suites, from the step table. Suite "stepN"; tests read as sentences. */
#define STEP_TESTS(num, ident, file, what)                                                             \
    Test(CML_CAT(step, num), is_right_for_one_thread_a_warp_and_1_wide_images, .timeout = 120)       \
    { thin(num); }                                                                                   \
    Test(CML_CAT(step, num), is_right_when_sizes_are_not_multiples_of_the_block_or_tile, .timeout = 120) \
    { edges(num); }                                                                                  \
    Test(CML_CAT(step, num), is_right_for_a_large_problem, .timeout = 300) { large(num); }
CONSTMEM_STEPS(STEP_TESTS)
