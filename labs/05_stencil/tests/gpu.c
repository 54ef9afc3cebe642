/* GPU tests of lab 05, one Criterion suite per step (step1 ... step6), made
 * from the step table in stencil.h. Built twice: against your
 * labs/05_stencil/stencil.cu and against the reference solution.
 *
 * Every run: seeded data (every value 0.25 to 1 in magnitude, either sign)
 * and coefficients (all different), out poisoned with NaN and guarded on
 * both sides, in surrounded by 2^20 (on the CPU path: in starts right after
 * a guard page, so that reading in[-1] faults). Each point is compared with
 * the stencil in double, within the rounding of a float sum of its terms.
 * CML_SEED changes the data and adds grids of its own. Grids are never all
 * multiples of a tile: 1 point, 1 wide, tall, prime, one past a tile. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include <cml/cml_rng.h>
#include <cml/cml_test.h>
#include "stencil_host.h"

#define COUNT(a) (sizeof (a) / sizeof (a)[0])
#define MAX_FAILED_GRIDS 4

/* The CPU path runs each CUDA thread as a fiber: its grids are smaller, of
 * the same kinds (one past a tile, primes, 1 wide, several z chunks). */
#ifdef CML_CPU_BACKEND
#define ON_GPU(gpu, cpu) cpu
#else
#define ON_GPU(gpu, cpu) gpu
#endif

/* 1D: tiles of 2048 points. Sizes just past a tile (2049, 4099, 98381 =
 * 48 * 2048 + 77) leave a last tile of fewer points than threads. */
static const st_grid tiny_1d[] = {{1, 1, 1}, {2, 1, 1}, {3, 1, 1}, {4, 1, 1}, {7, 1, 1}, {100, 1, 1}};
static const st_grid edge_1d[] = {{2047, 1, 1}, {2048, 1, 1}, {2049, 1, 1}, {4099, 1, 1}, {98381, 1, 1}, {100003, 1, 1}};
static const st_grid thin_1d[] = {{65535, 1, 1}, {65537, 1, 1}, {131071, 1, 1}};
static const st_grid big_1d[] = {{ON_GPU(4194309, 307300), 1, 1}};

/* 2D: tiles of 128 x 16. */
static const st_grid tiny_2d[] = {{1, 1, 1}, {2, 2, 1}, {3, 1, 1}, {1, 3, 1}, {5, 4, 1}};
static const st_grid edge_2d[] = {{127, 15, 1}, {128, 16, 1}, {129, 17, 1}, {257, 33, 1}, {1000, 77, 1}};
static const st_grid thin_2d[] = {{1, ON_GPU(1000000, 20000), 1}, {5000, 1, 1}, {2, 3001, 1}, {3001, 2, 1}};
static const st_grid big_2d[] = {{ON_GPU(4097, 700), ON_GPU(2049, 301), 1}};

/* 3D: tiles of 32 x 8 x 4 (step 4) and 64 x 16 marching 64 planes (5, 6). */
static const st_grid tiny_3d[] = {{1, 1, 1}, {2, 2, 2}, {3, 1, 2}, {1, 2, 3}, {5, 4, 3}};
static const st_grid edge_3d[] = {{65, 17, 5}, {64, 16, 64}, {63, 15, 65}, {33, 9, 130}, {31, 7, 3}};
static const st_grid thin_3d[] = {{1, 1, ON_GPU(65535, 300)}, {1, 300, 1}, {300, 1, 1}, {1, 37, 129}, {67, 1, 65}};
static const st_grid big_3d[] = {{ON_GPU(257, 70), ON_GPU(129, 33), ON_GPU(131, 131)}};

typedef enum { TINY, EDGE, THIN, BIG } kind;

/* "1D n = 100", "2D 129 x 17", "3D 65 x 17 x 5" into buf. */
static const char *grid_name(int step, st_grid g, char *buf, size_t len)
{
    int dims = st_step_dims(step);
    if (dims == 1)
        snprintf(buf, len, "1D n = %d", g.nx);
    else if (dims == 2)
        snprintf(buf, len, "2D %d x %d", g.nx, g.ny);
    else
        snprintf(buf, len, "3D %d x %d x %d", g.nx, g.ny, g.nz);
    return buf;
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

/* Runs step on one seeded grid and checks out and its guards. Reports what
 * is wrong and returns 0 when anything is. */
static int check_grid(int step, st_grid g, uint64_t seed, uint64_t stream)
{
    char name[64], args[64];
    grid_name(step, g, name, sizeof name);
    cr_assert(st_grid_fits(step, g), "test bug: %s does not suit step %d", name, step);
    size_t n = st_points(g);
    float *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
    cr_assert(in != NULL && out != NULL, "out of host memory for %s", name);
    st_make_data(in, n, seed, stream);
    stencil_coeffs c;
    st_make_coeffs(&c, seed + stream);
    st_buffers b;
    CML_TEST_CHECK(st_buffers_alloc(&b, n));
    CML_TEST_CHECK(st_upload(&b, in, n));
    st_result res;
    int ok = st_run_checked(&b, step, g, &c, in, out, &res);
    cr_assert(res.err == cudaSuccess,
              "step %d, %s: CUDA error %s: %s. Likely cause: an access outside in or out: a halo cell before "
              "the array (in[-R] on the first tile) or past its end read without a bounds check, or a point "
              "past the grid's edge written. Find it with compute-sanitizer --tool memcheck "
              "./build/stencil_run --step %d %s --check-only (on the CPU path the report above names the line)",
              step, name, cudaGetErrorName(res.err), cudaGetErrorString(res.err), step,
              grid_args(step, g, args, sizeof args));
    st_buffers_free(&b);
    cr_expect(res.guards_intact, "step %d, %s (seed %llu): %s", step, name, (unsigned long long)seed,
              res.guard_msg);
    if (res.check.wrong > 0) {
        char msg[1400];
        cr_expect(0, "step %d, %s (seed %llu): %s", step, name, (unsigned long long)seed,
                  st_describe(&res.check, msg, sizeof msg));
    }
    free(in);
    free(out);
    return ok;
}

/* Every grid; stop after a few failures so the report stays readable. */
static void check_grids(int step, const st_grid *grids, size_t count, uint64_t stream0)
{
    CML_REQUIRE_GPU();
    uint64_t seed = cml_test_seed();
    int failures = 0;
    for (size_t k = 0; k < count && failures < MAX_FAILED_GRIDS; ++k)
        failures += !check_grid(step, grids[k], seed, stream0 + k);
}

/* The step's grids of one kind; EDGE adds one drawn from the seed. */
static void check_kind(int step, kind which)
{
    static const st_grid *tables[3][4] = {{tiny_1d, edge_1d, thin_1d, big_1d},
                                          {tiny_2d, edge_2d, thin_2d, big_2d},
                                          {tiny_3d, edge_3d, thin_3d, big_3d}};
    static const size_t counts[3][4] = {
        {COUNT(tiny_1d), COUNT(edge_1d), COUNT(thin_1d), COUNT(big_1d)},
        {COUNT(tiny_2d), COUNT(edge_2d), COUNT(thin_2d), COUNT(big_2d)},
        {COUNT(tiny_3d), COUNT(edge_3d), COUNT(thin_3d), COUNT(big_3d)}};
    int d = st_step_dims(step) - 1;
    cr_assert(d >= 0 && d < 3, "test bug: step %d has no dimensions", step);
    st_grid grids[16];
    size_t n = counts[d][which];
    for (size_t k = 0; k < n; ++k)
        grids[k] = tables[d][which][k];
    if (which == EDGE) {
        cml_rng rng;
        cml_rng_init(&rng, cml_test_seed(), 505);
        st_grid *g = &grids[n++];
        *g = (st_grid){cml_rng_int(&rng, 2, 300000), 1, 1};
        if (d == 1)
            *g = (st_grid){cml_rng_int(&rng, 2, ON_GPU(3000, 600)), cml_rng_int(&rng, 2, ON_GPU(1500, 200)), 1};
        if (d == 2)
            *g = (st_grid){cml_rng_int(&rng, 2, ON_GPU(200, 70)), cml_rng_int(&rng, 2, 70),
                           cml_rng_int(&rng, 2, ON_GPU(200, 70))};
    }
    check_grids(step, grids, n, 1000 * (uint64_t)step + 100 * (uint64_t)which);
}

/* The suites, from the step table. Suite "stepN"; tests read as sentences. */
#define STEP_TESTS(num, ident, file, what)                                                                  \
    Test(CML_CAT(step, num), computes_grids_of_one_point_and_smaller_than_the_stencil, .timeout = 120)  \
    { check_kind(num, TINY); }                                                                        \
    Test(CML_CAT(step, num), computes_grids_that_are_not_multiples_of_the_tile, .timeout = 240)         \
    { check_kind(num, EDGE); }                                                                        \
    Test(CML_CAT(step, num), computes_one_wide_and_tall_grids, .timeout = 240)                          \
    { check_kind(num, THIN); }                                                                        \
    Test(CML_CAT(step, num), computes_a_large_grid, .timeout = 300) { check_kind(num, BIG); }
STENCIL_STEPS(STEP_TESTS)
