/* GPU tests of lab 06, one Criterion suite per step (step1 ... step6),
 * made from the step table in transpose.h. Built twice: against your
 * labs/06_transpose/transpose.cu and against the reference solution.
 *
 * Every run: seeded data with a different value in every element (CML_SEED
 * changes them, and adds two shapes of its own), guard zones around in and
 * out, out poisoned with NaN. A transpose moves values without arithmetic,
 * so the check is bit for bit. Step 1 is checked as a copy. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include <cml/cml_rng.h>
#include <cml/cml_test.h>
#include "transpose_host.h"

typedef struct shape {
    int rows, cols;
} shape;

#define COUNT(a) (sizeof (a) / sizeof (a)[0])
#define MAX_FAILED_SHAPES 4
/* More tile rows than a grid's y extent (65535) holds, for tiles up to 64
 * rows high: 65537 tiles of 64 rows, 131073 of 32. */
#define TALL ((1 << 22) + 17)

static const shape thin_shapes[] = {{1, 1}, {1, 33}, {33, 1}, {1, 100003}, {100003, 1}};
/* Around one tile, then many tiles with ragged right and bottom edges; the
 * seed adds two more (see edge_shapes). */
static const shape fixed_edge_shapes[] = {{31, 33}, {32, 32}, {33, 31}, {1000, 777}, {1025, 4097}};
#ifndef CML_CPU_BACKEND
static const shape tall_shapes[] = {{TALL, 1}, {TALL, 3}, {1, TALL}};
#else
/* On the CPU path (common/cpu) every CUDA thread is a fiber, and the three
 * shapes above cost minutes a step: one shape there, 3 columns (a partial
 * tile) and just past grid y's 65535 tile rows: 2^21 + 17 rows for the
 * 32-row tiles, TALL for the last step's 64-row tiles. */
static shape cpu_tall_shape(int step)
{
    shape s = {step == TRANSPOSE_NUM_STEPS ? TALL : (1 << 21) + 17, 3};
    return s;
}
#endif
/* One large matrix, 2^13 - 1 by 3 * 2^12 + 1 on a GPU; on the CPU path
 * (common/cpu), where a CPU second moves a few million elements, the same
 * kind at 2^11 - 1 by 3 * 2^10 + 1. */
#ifdef CML_CPU_BACKEND
#define BIG_ROWS 2047
#define BIG_COLS 3073
#define BIG_TEST places_every_element_of_a_2047_x_3073_matrix
#else
#define BIG_ROWS 8191
#define BIG_COLS 12289
#define BIG_TEST places_every_element_of_an_8191_x_12289_matrix
#endif
static const shape big_shape[] = {{BIG_ROWS, BIG_COLS}};

/* Runs step on one seeded rows x cols matrix and checks out and the guards.
 * Reports what is wrong and returns 0 when anything is. */
static int check_shape(int step, shape s, uint64_t seed, uint64_t stream)
{
    size_t n = (size_t)s.rows * (size_t)s.cols;
    float *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
    cr_assert(in != NULL && out != NULL, "out of host memory for %d x %d", s.rows, s.cols);
    tr_make_data(in, n, seed, stream);
    tr_buffers b;
    CML_TEST_CHECK(tr_buffers_alloc(&b, s.rows, s.cols));
    CML_TEST_CHECK(tr_upload(&b, in));
    tr_result res;
    int ok = tr_run_checked(&b, step, in, out, &res);
    cr_assert(res.err == cudaSuccess,
              "step %d, %d x %d: CUDA error %s: %s. Likely cause: an access far outside in or out (a missing "
              "bounds check); find it with compute-sanitizer --tool memcheck ./build/transpose_run --step %d "
              "--rows %d --cols %d --check-only",
              step, s.rows, s.cols, cudaGetErrorName(res.err), cudaGetErrorString(res.err), step, s.rows,
              s.cols);
    tr_buffers_free(&b);
    const char *job = tr_step_mode(step) == TR_COPY ? "copy" : "transpose";
    cr_expect(res.guards_intact, "step %d, %s of %d x %d (seed %llu): %s", step, job, s.rows, s.cols,
              (unsigned long long)seed, res.guard_msg);
    if (res.check.wrong > 0) {
        char msg[1400];
        cr_expect(0, "step %d, %s of %d x %d (seed %llu): %s", step, job, s.rows, s.cols,
                  (unsigned long long)seed, tr_describe(&res.check, msg, sizeof msg));
    }
    free(in);
    free(out);
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

/* The fixed edge shapes and two drawn from the seed: one up to 3000 x 3000,
 * and one thin strip (1 to 40 by 1000 to 300000, either way round). */
static void edge_shapes(int step)
{
    shape s[COUNT(fixed_edge_shapes) + 2];
    for (size_t k = 0; k < COUNT(fixed_edge_shapes); ++k)
        s[k] = fixed_edge_shapes[k];
    cml_rng rng;
    cml_rng_init(&rng, cml_test_seed(), 606);
    shape *a = &s[COUNT(fixed_edge_shapes)], *b = a + 1;
    a->rows = cml_rng_int(&rng, 2, 3000);
    a->cols = cml_rng_int(&rng, 2, 3000);
    int thin = cml_rng_int(&rng, 1, 40), wide = cml_rng_int(&rng, 1000, 300000);
    int across = cml_rng_int(&rng, 0, 1);
    b->rows = across ? thin : wide;
    b->cols = across ? wide : thin;
    check_shapes(step, s, COUNT(s), 200 * (uint64_t)step);
}

/* More tile rows than a grid's y extent holds. */
static void tall(int step)
{
#ifdef CML_CPU_BACKEND
    shape s = cpu_tall_shape(step);
    check_shapes(step, &s, 1, 300 * (uint64_t)step);
#else
    check_shapes(step, tall_shapes, COUNT(tall_shapes), 300 * (uint64_t)step);
#endif
}

/* The suites, from the step table. Suite "stepN"; tests read as sentences. */
#define STEP_TESTS(num, ident, file, what)                                                              \
    Test(CML_CAT(step, num), places_every_element_of_1x1_1xn_and_nx1_matrices, .timeout = 120)   \
    { check_shapes(num, thin_shapes, COUNT(thin_shapes), 100 * (uint64_t)(num)); }                \
    Test(CML_CAT(step, num), places_every_element_when_the_shape_is_not_a_multiple_of_the_tile, \
         .timeout = 120) { edge_shapes(num); }                                                    \
    Test(CML_CAT(step, num), places_every_element_of_more_tile_rows_than_grid_dim_y_allows,      \
         .timeout = 120) { tall(num); }                                                           \
    Test(CML_CAT(step, num), BIG_TEST, .timeout = 300)                                            \
    { check_shapes(num, big_shape, 1, 400 * (uint64_t)(num)); }
TRANSPOSE_STEPS(STEP_TESTS)
