/* Lab 05's spec (cml_spec.h): the grids its tests and the grader's
 * kit-only check run, and when a step's output is right.
 *
 * A case is a grid: a = nx, b = ny + nz * 2^32; its data (harness.c's
 * layout) is the coefficients (HEAD words: stencil_coeffs as stencil.h
 * lays it out, c1, c2, c3, outside) and then the grid's nx * ny * nz
 * floats. Kind 0 computes the stencil: its output is out with GUARD
 * poisoned words before and after it. Kind 1 is a grid outside the limits
 * of stencil.h: its output is the one word stencil_step returned, which
 * must be cudaErrorInvalidValue. Step 1 runs the 1D grids, step 2 the 2D
 * ones, steps 3-6 the 3D ones (each case's `steps`).
 *
 * Every grid value and the boundary value `outside` are nonzero integers
 * below 2^11 in magnitude, and the coefficients distinct odd multiples of
 * 1/8 below 4: every product and every partial sum is exact in float, so
 * the answer is exact whatever the order of the sum, and a dropped term, a
 * neighbour from the wrong side, a halo cell left unloaded or holding 0,
 * or a read before or past the array (NaN in the grader's harness, 2^20 in
 * the tests' buffers: beyond any sum of the data) changes it.
 *
 * Sizes are never all multiples of a tile (1D 2048, 2D 64 x 32, 3D 32 x 8
 * x 4, 64 x 16 x 64 planes): 1 point, 1 wide, one past a tile, primes,
 * several z chunks, tall grids at the limits of stencil.h, and one grid of
 * each dimension drawn from the seed. The CPU path runs each CUDA thread
 * as a fiber: its large grids are smaller, of the same kinds. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cml/cml_buffer.h>
#include <cml/cml_rng.h>
#include <cml/cml_spec.h>
#include "stencil_host.h"

#define HEAD ((uint64_t)ST_HEAD) /* the harness's layout: stencil_host.h */
#define GUARD ((uint64_t)ST_GUARD)
#define POISON ST_HARNESS_POISON
#define VMAX 2047               /* grid values and `outside`: nonzero integers in +-[1, VMAX] */
#define INVALID_VALUE 1u        /* cudaErrorInvalidValue */
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

enum { COMPUTE = 0, REFUSE = 1 };  /* case kinds (harness.c) */
enum { ANY, GPU, CPU };            /* the path a grid is for */

typedef struct grid {
    int path;           /* ANY, or only on a GPU / the CPU path */
    int kind;           /* COMPUTE or REFUSE */
    int dims;           /* 1, 2 or 3: the steps that run it */
    int nx, ny, nz;
    int where;          /* CML_IN_BOTH or CML_IN_TESTS */
    int limit;          /* at the limits of stencil.h */
} grid;

#define BOTH CML_IN_BOTH
#define TESTS CML_IN_TESTS

/* The steps of a dimension. */
static uint32_t steps_of(int dims)
{
    uint32_t m = 0;
    for (int s = 1; s <= STENCIL_NUM_STEPS; ++s)
        if (st_step_dims(s) == dims)
            m |= 1u << s;
    return m;
}

/* k distinct odd numerators p in +-[1, 31]: coefficients p / 8. */
static void distinct_eighths(cml_rng *rng, float *c, int k)
{
    int odd[32];
    for (int i = 0; i < 32; ++i)
        odd[i] = 2 * i - 31;
    for (int i = 0; i < k; ++i) {
        int j = cml_rng_int(rng, i, 31), p = odd[j];
        odd[j] = odd[i];
        odd[i] = p;
        c[i] = (float)p / 8.0f;
    }
}

/* A nonzero integer in +-[1, VMAX]. */
static float value(cml_rng *rng)
{
    int v = cml_rng_int(rng, 1, VMAX);
    return (float)((cml_rng_next(rng) >> 63) ? -v : v);
}

static int add_grid(cml_cases *l, const grid *g, uint64_t seed, uint64_t stream)
{
    uint64_t n = (uint64_t)g->nx * (uint64_t)g->ny * (uint64_t)g->nz;
    uint64_t b = (uint64_t)g->ny | (uint64_t)g->nz << 32;
    cml_case *c;
    if (g->kind == REFUSE)
        c = cml_case_add(l, REFUSE, (uint64_t)g->nx, b, HEAD + n,
                         "%dD step called with nx = %d, ny = %d, nz = %d (must return cudaErrorInvalidValue)", g->dims,
                         g->nx, g->ny, g->nz);
    else if (g->dims == 1)
        c = cml_case_add(l, COMPUTE, (uint64_t)g->nx, b, HEAD + n, "1D n = %d", g->nx);
    else if (g->dims == 2)
        c = cml_case_add(l, COMPUTE, (uint64_t)g->nx, b, HEAD + n, "2D %d x %d", g->nx, g->ny);
    else
        c = cml_case_add(l, COMPUTE, (uint64_t)g->nx, b, HEAD + n, "3D %d x %d x %d", g->nx, g->ny, g->nz);
    if (!c)
        return 0;
    c->steps = steps_of(g->dims);
    c->where = g->where;
    c->limit = g->limit;
    cml_rng rng;
    cml_rng_init(&rng, seed, stream);
    stencil_coeffs co;
    distinct_eighths(&rng, co.c1, 2 * STENCIL_R + 1);
    distinct_eighths(&rng, &co.c2[0][0], 9);
    distinct_eighths(&rng, co.c3, 7);
    co.outside = value(&rng);
    memcpy(c->data, &co, sizeof co);
    float *in = (float *)c->data + HEAD;
    for (uint64_t i = 0; i < n; ++i)
        in[i] = value(&rng);
    return 1;
}

/* The grids of a table for this path, each from (seed, stream + its index). */
static int add_grids(cml_cases *l, const grid *gs, size_t n, int cpu, uint64_t seed, uint64_t stream)
{
    for (size_t k = 0; k < n; ++k)
        if (gs[k].path == ANY || gs[k].path == (cpu ? CPU : GPU))
            if (!add_grid(l, &gs[k], seed, stream + k))
                return 0;
    return 1;
}

/* Table rows: a grid of each dimension on both paths, which the tests and
 * the grader both run; any grid (on one path, run by the tests only, at
 * the limits); a grid stencil_step must refuse. */
#define D1(nx) {ANY, COMPUTE, 1, nx, 1, 1, BOTH, 0}
#define D2(nx, ny) {ANY, COMPUTE, 2, nx, ny, 1, BOTH, 0}
#define D3(nx, ny, nz) {ANY, COMPUTE, 3, nx, ny, nz, BOTH, 0}
#define ANY_GRID(path, dims, nx, ny, nz, where, limit) {path, COMPUTE, dims, nx, ny, nz, where, limit}
#define REFUSED(dims, nx, ny, nz) {ANY, REFUSE, dims, nx, ny, nz, BOTH, 0}

/* 1 point, and grids smaller than the stencil: every neighbour of some
 * point lies outside. */
static int tiny(cml_cases *l, uint64_t seed, int cpu)
{
    static const grid gs[] = {
        D1(1),       D1(2),       D1(3),       D1(4),       D1(7),       D1(100),
        D2(1, 1),    D2(2, 2),    D2(3, 1),    D2(1, 3),    D2(5, 4),
        D3(1, 1, 1), D3(2, 2, 2), D3(3, 1, 2), D3(1, 2, 3), D3(5, 4, 3),
    };
    return add_grids(l, gs, COUNT(gs), cpu, seed, 100);
}

/* Around a tile and past it (1D 2048 points, 2D 64 x 32 and 128 x 16, 3D
 * 32 x 8 x 4 and 64 x 16 planes marching 64): the last tile holds fewer
 * points than threads (98381 = 48 * 2048 + 77), several z chunks. One grid
 * of each dimension is drawn from the seed. */
static int edge(cml_cases *l, uint64_t seed, int cpu)
{
    static const grid gs[] = {
        D1(2047), D1(2048), D1(2049), D1(4099), D1(98381), D1(100003),
        ANY_GRID(GPU, 1, 1000003, 1, 1, BOTH, 0),
        D2(63, 31), D2(64, 32), D2(65, 33), D2(127, 15), D2(128, 16), D2(129, 17), D2(129, 65), D2(257, 33),
        D2(1000, 77),
        D3(31, 7, 3), D3(33, 9, 5), D3(65, 17, 5), D3(64, 16, 64), D3(63, 15, 65), D3(33, 9, 130), D3(65, 17, 70),
        D3(129, 17, 33),
    };
    if (!add_grids(l, gs, COUNT(gs), cpu, seed, 200))
        return 0;
    cml_rng rng;
    cml_rng_init(&rng, seed, 505);
    int n1 = cml_rng_int(&rng, 2, 300000);
    int nx2 = cml_rng_int(&rng, 2, cpu ? 600 : 3000), ny2 = cml_rng_int(&rng, 2, cpu ? 200 : 1500);
    int nx3 = cml_rng_int(&rng, 2, cpu ? 70 : 200), ny3 = cml_rng_int(&rng, 2, 70);
    int nz3 = cml_rng_int(&rng, 2, cpu ? 70 : 200);
    const grid drawn[] = {D1(n1), D2(nx2, ny2), D3(nx3, ny3, nz3)};
    return add_grids(l, drawn, COUNT(drawn), cpu, seed, 250);
}

/* One wide and tall: a grid of one tile across and many down; the tall
 * grids at the limits of stencil.h (2D ny up to 1,000,000, 3D ny and nz up
 * to 65535: on the CPU path nz at an eighth of it, where a z-marching
 * step's blocks over 65535 planes take half a minute); and grids just
 * outside those limits, which stencil_step must refuse. */
static int thin(cml_cases *l, uint64_t seed, int cpu)
{
    static const grid gs[] = {
        ANY_GRID(ANY, 1, 65535, 1, 1, TESTS, 0),
        ANY_GRID(ANY, 1, 65537, 1, 1, TESTS, 0),
        ANY_GRID(ANY, 1, 131071, 1, 1, TESTS, 0),
        D2(1, 3001), D2(2, 3001), D2(3001, 2), D2(5000, 1),
        ANY_GRID(ANY, 2, 1, 1000000, 1, BOTH, 1),
        ANY_GRID(GPU, 2, 3, 1000000, 1, BOTH, 1),
        D3(1, 1, 300), D3(1, 300, 1), D3(300, 1, 1), D3(1, 37, 129), D3(67, 1, 65),
        ANY_GRID(GPU, 3, 1, 1, 65535, BOTH, 1),
        ANY_GRID(GPU, 3, 1, 65535, 5, BOTH, 1),
        ANY_GRID(GPU, 3, 3, 4, 65535, BOTH, 1),
        ANY_GRID(GPU, 3, 2, 65535, 9, BOTH, 1),
        ANY_GRID(CPU, 3, 1, 65535, 1, BOTH, 1),
        ANY_GRID(CPU, 3, 1, 2, 65535 / 8, BOTH, 1),
        REFUSED(1, 0, 1, 1), REFUSED(1, 5, 2, 1), REFUSED(2, 0, 1, 1), REFUSED(2, 4, 3, 2),
        REFUSED(3, 0, 1, 1), REFUSED(3, 1, 65536, 1), REFUSED(3, 1, 1, 65536),
    };
    return add_grids(l, gs, COUNT(gs), cpu, seed, 300);
}

/* Large grids: on a GPU past the caches and one wave of blocks (the
 * largest of each dimension the tests' only); on the CPU path thousands of
 * blocks. */
static int big(cml_cases *l, uint64_t seed, int cpu)
{
    static const grid gs[] = {
        ANY_GRID(GPU, 2, 2049, 1025, 1, BOTH, 0),
        ANY_GRID(CPU, 2, 700, 301, 1, BOTH, 0),
        ANY_GRID(GPU, 3, 257, 129, 67, BOTH, 0),
        ANY_GRID(CPU, 3, 70, 33, 131, BOTH, 0),
    };
    return add_grids(l, gs, COUNT(gs), cpu, seed, 400);
}

/* The largest grids, the tests' only (the same test as the large grids
 * above): tens of MiB a grid on a GPU, which the grader's verifier never
 * makes (cml_group.where). */
static int bigger(cml_cases *l, uint64_t seed, int cpu)
{
    static const grid gs[] = {
        ANY_GRID(GPU, 1, 4194309, 1, 1, TESTS, 0),
        ANY_GRID(CPU, 1, 307300, 1, 1, TESTS, 0),
        ANY_GRID(GPU, 2, 4097, 2049, 1, TESTS, 0),
        ANY_GRID(GPU, 3, 257, 129, 131, TESTS, 0),
    };
    return add_grids(l, gs, COUNT(gs), cpu, seed, 450);
}

static const cml_group groups[] = {
    {"computes_grids_of_one_point_and_smaller_than_the_stencil", tiny, 0},
    {"computes_grids_that_are_not_multiples_of_the_tile", edge, 0},
    {"computes_one_wide_and_tall_grids", thin, 0},
    {"computes_a_large_grid", big, 0},
    {"computes_a_large_grid_in_the_tests_only", bigger, CML_IN_TESTS},
};

static uint64_t out_bytes(const cml_case *c)
{
    return c->kind == REFUSE ? 4 : 4 * (c->count - HEAD + 2 * GUARD);
}

static int judge(const cml_case *c, int step, const void *out, uint64_t nbytes, char *msg, size_t cap)
{
    uint64_t want_bytes = out_bytes(c);
    if (nbytes != want_bytes) {
        snprintf(msg, cap, "%llu bytes of output, expected %llu", (unsigned long long)nbytes,
                 (unsigned long long)want_bytes);
        return 0;
    }
    const uint32_t *words = (const uint32_t *)out;
    if (c->kind == REFUSE) {
        if (words[0] == INVALID_VALUE)
            return 1;
        if (words[0] == 0)
            snprintf(msg, cap, "returned cudaSuccess, expected cudaErrorInvalidValue (%u): the grid is outside the "
                     "limits of stencil.h", INVALID_VALUE);
        else
            snprintf(msg, cap, "returned error %u, expected cudaErrorInvalidValue (%u)", words[0], INVALID_VALUE);
        return 0;
    }
    uint64_t n = c->count - HEAD;
    char where[96];
    if (cml_spec_outside_write(words, words + GUARD + n, GUARD, "out", where, sizeof where)) {
        snprintf(msg, cap, "%s: a point past the edge of the grid written without a bounds check (the last tiles "
                 "hang over the grid)", where);
        return 0;
    }
    st_grid g = {(int)c->a, (int)(c->b & 0xffffffffu), (int)(c->b >> 32)};
    stencil_coeffs co;
    memcpy(&co, c->data, sizeof co);
    const float *in = (const float *)c->data + HEAD;
    st_check chk;
    st_check_begin(&chk, step, g);
    uint64_t i = 0;
    for (int z = 0; z < g.nz; ++z)
        for (int y = 0; y < g.ny; ++y)
            for (int x = 0; x < g.nx; ++x, ++i) {
                /* every term a multiple of 1/8 well below 2^20: exact in double, and the answer in float */
                double w[9], v[9], want = 0.0, reach = 0.0;
                int terms = st_terms(step, &co, in, g, x, y, z, w, v);
                for (int k = 0; k < terms; ++k) {
                    want += w[k] * v[k];
                    reach += fabs(w[k]) * VMAX;
                }
                uint32_t bits = words[GUARD + i];
                float got = cml_bits_float(bits);
                if ((double)got == want)
                    continue;
                st_wrong what = ST_WRONG_OTHER;
                if (bits == POISON)
                    what = ST_WRONG_UNWRITTEN;
                else if (isnan(got) || fabs((double)got) > reach) /* no sum of the data gets there */
                    what = ST_WRONG_OUTSIDE_READ;
                else if (terms == 7 && (double)got == want + w[5] * (v[0] - v[5]))
                    what = ST_WRONG_ROTATION;
                st_check_wrong(&chk, what, x, y, z, want, got);
            }
    chk.checked = (size_t)i;
    if (chk.wrong == 0)
        return 1;
    st_describe(&chk, msg, cap);
    return 0;
}

/* The lab's results sizes: 512 MiB in and out each, far past L2. The
 * harness fills the data (floats in [-1, 1)) and takes the coefficients
 * from its first HEAD words. */
static int timing(int step, cml_spec_timing *t)
{
    int nx, ny = 1, nz = 1, terms;
    if (step == 1) {
        nx = 1 << 27;
        terms = 2 * STENCIL_R + 1;
        snprintf(t->label, sizeof t->label, "1D n = %d (timed)", nx);
    } else if (step == 2) {
        nx = 16384;
        ny = 8192;
        terms = 9;
        snprintf(t->label, sizeof t->label, "2D %d x %d (timed)", nx, ny);
    } else if (step == 6) {
        nx = ny = nz = 512;
        terms = 7;
        snprintf(t->label, sizeof t->label, "3D %d x %d x %d (timed)", nx, ny, nz);
    } else {
        return 0;
    }
    t->kind = COMPUTE;
    t->a = (uint64_t)nx;
    t->b = (uint64_t)ny | (uint64_t)nz << 32;
    t->count = HEAD + (uint64_t)nx * (uint64_t)ny * (uint64_t)nz;
    t->fill = 2;
    t->traffic = 8 * t->count; /* the grid read once, out written once */
    /* coefficients and data in [-1, 1): a T-term sum has sum |c v| < T, each
     * harness is within (T + 1) u sum |c v| of the exact value (the lab's
     * bound), so the two differ by at most 2 (T + 1) T u */
    t->close_rel = 0.0;
    t->close_abs = 2.0 * (terms + 1) * terms * 5.9604644775390625e-08;
    return 1;
}

const cml_spec cml_lab_spec = {"05_stencil", groups, COUNT(groups), out_bytes, judge, timing, ""};
