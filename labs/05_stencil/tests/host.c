/* Host tests of lab 05's known-good side: data, coefficients, the CPU
 * stencils, the tolerance and the diagnosis. No GPU needed; these run in CI. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stencil_host.h"

Test(data, values_are_a_quarter_to_one_in_magnitude_with_both_signs)
{
    enum { N = 100000 };
    static float a[N];
    st_make_data(a, N, 5, 1);
    int neg = 0;
    for (int i = 0; i < N; ++i) {
        cr_assert(fabsf(a[i]) >= 0.25f && fabsf(a[i]) <= 1.0f, "a[%d] = %g", i, (double)a[i]);
        neg += a[i] < 0;
    }
    cr_expect(neg > N / 3 && neg < 2 * N / 3, "%d of %d negative", neg, N);
}

Test(data, coefficients_of_each_stencil_are_far_apart_and_the_seed_changes_them)
{
    stencil_coeffs c, d;
    st_make_coeffs(&c, 1);
    st_make_coeffs(&d, 2);
    const float *sets[3] = {c.c1, &c.c2[0][0], c.c3};
    const int sizes[3] = {2 * STENCIL_R + 1, 9, 7};
    for (int s = 0; s < 3; ++s)
        for (int i = 0; i < sizes[s]; ++i) {
            cr_expect(fabsf(sets[s][i]) >= 0.1f && fabsf(sets[s][i]) <= 1.0f);
            for (int k = 0; k < i; ++k)
                cr_expect(fabsf(sets[s][i] - sets[s][k]) >= 0.05f, "set %d: c[%d] and c[%d] too close", s, i, k);
        }
    cr_expect(memcmp(&c, &d, sizeof c) != 0, "two seeds gave the same coefficients");
}

Test(grids, the_limits_of_stencil_h_per_dimension)
{
    cr_expect(st_grid_fits(1, (st_grid){1, 1, 1}));
    cr_expect(!st_grid_fits(1, (st_grid){5, 2, 1}), "step 1 is 1D");
    cr_expect(st_grid_fits(2, (st_grid){1, 1000000, 1}));
    cr_expect(!st_grid_fits(2, (st_grid){1, 1000001, 1}));
    cr_expect(!st_grid_fits(2, (st_grid){3, 3, 2}), "step 2 is 2D");
    cr_expect(st_grid_fits(6, (st_grid){513, 511, 509}));
    cr_expect(!st_grid_fits(6, (st_grid){1, 65536, 1}));
    cr_expect(!st_grid_fits(3, (st_grid){2048, 1024, 1024}), "2^31 points");
    cr_expect(!st_grid_fits(7, (st_grid){1, 1, 1}), "no step 7");
}

/* 1D: with in = 0 except in[j] = 1, out[i] = c1[j - i + R]: the weights
 * appear mirrored, and those reaching past either end drop out. */
Test(reference, one_d_impulse_gives_the_mirrored_weights_and_zero_boundaries)
{
    float in[5] = {0, 0, 0, 0, 0};
    stencil_coeffs c;
    st_make_coeffs(&c, 9);
    c.outside = 0.0f;
    in[0] = 1.0f;
    st_grid g = {5, 1, 1};
    for (int i = 0; i < 5; ++i) {
        double want = i <= STENCIL_R ? c.c1[STENCIL_R - i] : 0.0;
        cr_expect_eq(st_cpu_point(1, &c, in, g, i, 0, 0, NULL), want, "out[%d]", i);
    }
}

/* 3D: with every point 1, a point's value is the sum of the coefficients of
 * the neighbours inside the grid plus the boundary value times the others'. */
Test(reference, three_d_corner_counts_only_neighbours_inside_the_grid)
{
    float in[8];
    for (int i = 0; i < 8; ++i)
        in[i] = 1.0f;
    stencil_coeffs c;
    st_make_coeffs(&c, 4);
    st_grid g = {2, 2, 2};
    double abs_sum = 0.0;
    double b = c.outside;
    cr_assert(fabs(b) >= 0.25);
    /* (0, 0, 0): x + 1, y + 1 and z + 1 exist; x - 1, y - 1, z - 1 are outside. */
    double want = (double)c.c3[0] + c.c3[2] + c.c3[4] + c.c3[6] + b * ((double)c.c3[1] + c.c3[3] + c.c3[5]);
    cr_expect(fabs(st_cpu_point(3, &c, in, g, 0, 0, 0, &abs_sum) - want) < 1e-12);
    cr_expect(fabs(abs_sum - (fabs(c.c3[0]) + fabs(c.c3[2]) + fabs(c.c3[4]) + fabs(c.c3[6]) +
                              fabs(b) * (fabs(c.c3[1]) + fabs(c.c3[3]) + fabs(c.c3[5])))) < 1e-12);
    /* (1, 1, 1): x - 1, y - 1 and z - 1 exist. */
    want = (double)c.c3[0] + c.c3[1] + c.c3[3] + c.c3[5] + b * ((double)c.c3[2] + c.c3[4] + c.c3[6]);
    cr_expect(fabs(st_cpu_point(6, &c, in, g, 1, 1, 1, NULL) - want) < 1e-12);
}

/* A host stand-in for a kernel: out = the stencil rounded to float. */
static void cpu_out(int step, const stencil_coeffs *c, const float *in, st_grid g, float *out)
{
    size_t i = 0;
    for (int z = 0; z < g.nz; ++z)
        for (int y = 0; y < g.ny; ++y)
            for (int x = 0; x < g.nx; ++x)
                out[i++] = (float)st_cpu_point(step, c, in, g, x, y, z, NULL);
}

typedef struct fixture {
    st_grid g;
    float *in, *out;
    stencil_coeffs c;
} fixture;

static fixture make(int step, st_grid g)
{
    fixture f;
    memset(&f, 0, sizeof f);
    f.g = g;
    size_t n = st_points(g);
    f.in = malloc(n * sizeof *f.in);
    f.out = malloc(n * sizeof *f.out);
    cr_assert(f.in && f.out);
    st_make_data(f.in, n, 77, (uint64_t)step);
    st_make_coeffs(&f.c, 77);
    cpu_out(step, &f.c, f.in, g, f.out);
    return f;
}

static void drop(fixture *f)
{
    free(f->in);
    free(f->out);
}

static size_t at(st_grid g, int x, int y, int z)
{
    return ((size_t)z * g.ny + y) * g.nx + x;
}

Test(check, a_correct_result_passes_and_a_one_ulp_change_still_passes)
{
    for (int step = 1; step <= STENCIL_NUM_STEPS; ++step) {
        st_grid g = step == 1 ? (st_grid){5000, 1, 1} : step == 2 ? (st_grid){70, 33, 1} : (st_grid){17, 9, 11};
        fixture f = make(step, g);
        st_check chk;
        cr_expect_eq(st_compare(step, &f.c, f.in, f.out, g, &chk), 0, "step %d", step);
        cr_expect_eq(chk.checked, st_points(g));
        f.out[7] = nextafterf(f.out[7], INFINITY);
        cr_expect_eq(st_compare(step, &f.c, f.in, f.out, g, &chk), 0, "step %d: one ulp is rounding", step);
        drop(&f);
    }
}

Test(check, one_term_left_out_fails_at_that_point)
{
    st_grid g = {17, 9, 11};
    fixture f = make(3, g);
    size_t k = at(g, 5, 4, 6);
    /* out(5, 4, 6) without its x + 1 term. */
    f.out[k] = (float)((double)f.out[k] - (double)f.c.c3[2] * f.in[at(g, 6, 4, 6)]);
    st_check chk;
    cr_expect_eq(st_compare(3, &f.c, f.in, f.out, g, &chk), 1);
    cr_expect_eq(chk.first[0].x, 5);
    cr_expect_eq(chk.first[0].y, 4);
    cr_expect_eq(chk.first[0].z, 6);
    drop(&f);
}

Test(check, names_a_read_outside_in_by_its_two_to_the_twentieth)
{
    st_grid g = {3000, 1, 1};
    fixture f = make(1, g);
    for (int i = 0; i < STENCIL_R; ++i)  /* in[-3 .. -1] held 2^20 */
        for (int k = 0; k < STENCIL_R - i; ++k)
            f.out[i] += f.c.c1[k] * 1048576.0f;
    st_check chk;
    cr_expect_eq(st_compare(1, &f.c, f.in, f.out, g, &chk), STENCIL_R);
    cr_expect_eq(st_likely_cause(&chk), ST_CAUSE_OUTSIDE_READ);
    char msg[1400];
    cr_expect(strstr(st_describe(&chk, msg, sizeof msg), "in[-R]") != NULL, "%s", msg);
    drop(&f);
}

Test(check, names_the_far_end_the_tile_border_and_the_rotation)
{
    st_grid g = {5000, 1, 1};
    fixture f = make(1, g);
    st_check chk;
    f.out[4999] += 0.5f;  /* the last point */
    st_compare(1, &f.c, f.in, f.out, g, &chk);
    cr_expect_eq(st_likely_cause(&chk), ST_CAUSE_GRID_END);
    f.out[4999] -= 0.5f;
    f.out[2048] += 0.5f;  /* the first point of the second tile */
    f.out[2047] += 0.5f;
    st_compare(1, &f.c, f.in, f.out, g, &chk);
    cr_expect_eq(st_likely_cause(&chk), ST_CAUSE_TILE_EDGE);
    f.out[1000] += 0.5f;  /* and one in the middle of a tile: no pattern */
    st_compare(1, &f.c, f.in, f.out, g, &chk);
    cr_expect_eq(st_likely_cause(&chk), ST_CAUSE_OTHER);
    drop(&f);

    st_grid g3 = {9, 8, 7};
    fixture h = make(6, g3);
    for (int z = 1; z < g3.nz; ++z)  /* z - 1 replaced by the point itself */
        for (int y = 0; y < g3.ny; ++y)
            for (int x = 0; x < g3.nx; ++x) {
                size_t k = at(g3, x, y, z);
                h.out[k] = (float)((double)h.out[k] + (double)h.c.c3[5] * (h.in[k] - h.in[at(g3, x, y, z - 1)]));
            }
    st_compare(6, &h.c, h.in, h.out, g3, &chk);
    cr_expect_eq(chk.rotation, (size_t)(g3.nx * g3.ny * (g3.nz - 1)));
    cr_expect_eq(st_likely_cause(&chk), ST_CAUSE_ROTATION);
    drop(&h);
}

Test(check, poison_is_never_written_and_says_so)
{
    st_grid g = {40, 30, 1};
    fixture f = make(2, g);
    uint32_t poison = ST_POISON_BITS;
    for (int i = 0; i < 40 * 30; i += 3)
        memcpy(&f.out[i], &poison, sizeof poison);
    st_check chk;
    cr_expect_eq(st_compare(2, &f.c, f.in, f.out, g, &chk), 400);
    cr_expect_eq(chk.unwritten, 400);
    cr_expect_eq(st_likely_cause(&chk), ST_CAUSE_UNWRITTEN);
    drop(&f);
}
