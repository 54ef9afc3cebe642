/* Host tests of lab 02 (no GPU): the walk the kernels must follow, the CPU
 * convolution, and the checks' diagnoses, which must name the right
 * mistake from the shape of the wrong results. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_rng.h>
#include "constmem_host.h"

static float table[CONSTMEM_TABLE_ENTRIES], big[CONSTMEM_BIG_ENTRIES];

static void make_tables(void)
{
    cm_make_table(table, CONSTMEM_TABLE_ENTRIES, 7, 0);
    cm_make_table(big, CONSTMEM_BIG_ENTRIES, 7, 1);
}

Test(walk, stays_inside_both_tables_for_every_warp_and_pass)
{
    int max_small = 0, max_big = 0;
    for (int warp = 0; warp < (CONSTMEM_MAX_THREADS / 32); warp += 997)
        for (int p = 0; p < CONSTMEM_MAX_PASSES; ++p) {
            int s = (warp * CONSTMEM_WARP_STEP + p * CONSTMEM_PASS_STEP) & CONSTMEM_SMALL_MASK;
            int b = (warp * CONSTMEM_WARP_STEP + p * CONSTMEM_PASS_STEP) & CONSTMEM_BIG_MASK;
            if (s > max_small) max_small = s;
            if (b > max_big) max_big = b;
        }
    int last_small = max_small + 31 + (CONSTMEM_PASS_READS - 1);
    int last_big = max_big + 31 + (CONSTMEM_PASS_READS - 1) * CONSTMEM_BIG_STRIDE;
    cr_expect(last_small < CONSTMEM_TABLE_ENTRIES, "small walk reaches entry %d of %d", last_small,
              CONSTMEM_TABLE_ENTRIES);
    cr_expect(last_big < CONSTMEM_BIG_ENTRIES, "big walk reaches entry %d of %d", last_big, CONSTMEM_BIG_ENTRIES);
    cr_expect(last_big >= 8192, "the big walk must reach past 32 KB (it reaches entry %d)", last_big);
}

Test(walk, gives_each_lane_the_sum_of_its_own_d_entries)
{
    make_tables();
    unsigned signs = cm_make_signs(7, 2);
    cr_assert(signs != 0 && signs != ~0u, "signs 0x%08x: some reads must be added, some subtracted", signs);
    for (int k = 0; k < CM_NUM_D; ++k) {
        int d = cm_d(k);
        for (int lane = 0; lane < 32; ++lane) {
            double got = cm_walk_sum(table, 0, d, 5 * 32 + lane, 3, signs);
            double want = 0.0;
            for (int p = 0; p < 3; ++p) {
                int base = (5 * CONSTMEM_WARP_STEP + p * CONSTMEM_PASS_STEP) & CONSTMEM_SMALL_MASK;
                for (int r = 0; r < CONSTMEM_PASS_READS; ++r)
                    want += (signs >> r & 1u ? -1.0 : 1.0) * table[base + lane % d + r];
            }
            cr_expect(got == want, "d = %d, lane %d: %.0f, not %.0f", d, lane, got, want);
            if (lane >= d)
                cr_expect(got == cm_walk_sum(table, 0, d, 5 * 32 + lane - d, 3, signs),
                          "d = %d: lane %d differs from lane %d", d, lane, lane - d);
        }
    }
}

Test(walk, bit_k_of_the_signs_subtracts_read_k_of_every_pass)
{
    make_tables();
    for (int big_walk = 0; big_walk <= 1; ++big_walk)
        for (int k = 0; k < CONSTMEM_PASS_READS; k += 5) {
            const float *tab = big_walk ? big : table;
            int mask = big_walk ? CONSTMEM_BIG_MASK : CONSTMEM_SMALL_MASK;
            int stride = big_walk ? CONSTMEM_BIG_STRIDE : 1;
            int t = 77 * 32 + 9, d = big_walk ? 1 : 4;
            double read_k = 0.0;  /* read k of every pass, added up */
            for (int p = 0; p < 4; ++p)
                read_k += tab[((77 * CONSTMEM_WARP_STEP + p * CONSTMEM_PASS_STEP) & mask) + 9 % d + k * stride];
            double plain = cm_walk_sum(tab, big_walk, d, t, 4, 0);
            cr_expect(cm_walk_sum(tab, big_walk, d, t, 4, 1u << k) == plain - 2.0 * read_k, "big %d, bit %d", big_walk,
                      k);
            cr_expect(cm_walk_sum(tab, big_walk, d, t, 4, ~0u) == -plain, "big %d: all bits set negate the sum",
                      big_walk);
        }
    /* step 1: row q's entry k times x, subtracted where bit k is set */
    double plain = cm_walk_sum(table, 0, CM_COEFFS, 4, 33, 0), flipped = plain;
    for (int p = 0; p < 33; ++p)
        flipped -= 2.0 * table[32 * (p % 32) + 3] * ((4 + p) % 3 - 1);
    cr_expect(cm_walk_sum(table, 0, CM_COEFFS, 4, 33, 1u << 3) == flipped);
}

Test(walk, signs_are_drawn_from_the_seed_and_differ_between_streams)
{
    cr_expect(cm_make_signs(5, 1) == cm_make_signs(5, 1));
    cr_expect(cm_make_signs(5, 1) != cm_make_signs(5, 2) && cm_make_signs(5, 1) != cm_make_signs(6, 1));
}

Test(walk, tables_have_no_zero_and_stay_exact_in_float)
{
    make_tables();
    for (int i = 0; i < CONSTMEM_BIG_ENTRIES; ++i) {
        cr_assert(big[i] != 0.0f && fabsf(big[i]) <= CM_TABLE_MAX && big[i] == floorf(big[i]),
                  "big[%d] = %g", i, (double)big[i]);
    }
    cr_expect((double)CM_TABLE_MAX * CONSTMEM_PASS_READS * CONSTMEM_MAX_PASSES <= 16777216.0,
              "the largest sum must stay exact in float");
}

/* Sums computed as if lane l read entry base + l + k (a per-thread index). */
static void per_lane_sums(float *out, int threads, int passes)
{
    for (int t = 0; t < threads; ++t) {
        int warp = t / 32, lane = t % 32;
        double s = 0.0;
        for (int p = 0; p < passes; ++p) {
            int base = (warp * CONSTMEM_WARP_STEP + p * CONSTMEM_PASS_STEP) & CONSTMEM_SMALL_MASK;
            for (int k = 0; k < CONSTMEM_PASS_READS; ++k)
                s += table[base + lane + k];
        }
        out[t] = (float)s;
    }
}

Test(lookup_check, passes_the_right_sums_and_names_per_lane_addresses)
{
    enum { T = 1000 };
    static float out[T];
    cm_lookup_check chk;
    make_tables();
    for (int t = 0; t < T; ++t)
        out[t] = (float)cm_walk_sum(table, 0, 1, t, 2, 0);
    cr_expect(cm_lookup_compare(table, 0, 1, 2, 0, out, T, &chk) == 0, "right sums reported wrong");

    per_lane_sums(out, T, 2);
    cr_expect(cm_lookup_compare(table, 0, 1, 2, 0, out, T, &chk) > 0);
    cr_expect(cm_lookup_likely_cause(&chk) == CM_LK_LANE_ADDRESSES, "per-lane reads not recognised (cause %d)",
              (int)cm_lookup_likely_cause(&chk));
    char msg[1600];
    cr_expect(strstr(cm_lookup_describe(&chk, msg, sizeof msg), "per-thread") != NULL, "%s", msg);
}

Test(lookup_check, agrees_with_the_walk_on_both_tables_and_every_d)
{
    enum { T = 2085 };
    static float out[T];
    cm_lookup_check chk;
    make_tables();
    unsigned signs = cm_make_signs(7, 3);
    for (int big_walk = 0; big_walk <= 1; ++big_walk)
        for (int k = 0; k < CM_NUM_D; ++k) {
            const float *tab = big_walk ? big : table;
            for (int t = 0; t < T; ++t)
                out[t] = (float)cm_walk_sum(tab, big_walk, cm_d(k), t, 5, signs);
            cr_expect(cm_lookup_compare(tab, big_walk, cm_d(k), 5, signs, out, T, &chk) == 0,
                      "big %d, d = %d: %zu right sums reported wrong", big_walk, cm_d(k), chk.wrong);
            out[T - 1] += 1.0f;
            cr_expect(cm_lookup_compare(tab, big_walk, cm_d(k), 5, signs, out, T, &chk) == 1 &&
                          chk.first[0].t == T - 1,
                      "big %d, d = %d: a sum off by one not found", big_walk, cm_d(k));
            cr_expect(cm_lookup_likely_cause(&chk) == CM_LK_OTHER, "one wrong sum is no ignored sign");
        }
}

Test(lookup_check, names_ignored_signs_and_sums_made_before_them)
{
    enum { T = 1500 };
    static float out[T];
    cm_lookup_check chk;
    char msg[1600];
    make_tables();
    unsigned signs = cm_make_signs(7, 4);
    /* every read added (signs ignored, or sums precomputed by the upload), on steps 1, 2 and 5's walks */
    const int ds[3] = {CM_COEFFS, 8, 1}, bigs[3] = {0, 0, 1};
    for (int i = 0; i < 3; ++i) {
        const float *tab = bigs[i] ? big : table;
        for (int t = 0; t < T; ++t)
            out[t] = (float)cm_walk_sum(tab, bigs[i], ds[i], t, 40, 0);
        cr_expect(cm_lookup_compare(tab, bigs[i], ds[i], 40, signs, out, T, &chk) > (size_t)T / 2);
        cr_expect(cm_lookup_likely_cause(&chk) == CM_LK_SIGNS_IGNORED, "pattern %d: cause %d", ds[i],
                  (int)cm_lookup_likely_cause(&chk));
        cr_expect(strstr(cm_lookup_describe(&chk, msg, sizeof msg), "signs are ignored") != NULL, "%s", msg);
        /* the right sums with those signs pass */
        for (int t = 0; t < T; ++t)
            out[t] = (float)cm_walk_sum(tab, bigs[i], ds[i], t, 40, signs);
        cr_expect(cm_lookup_compare(tab, bigs[i], ds[i], 40, signs, out, T, &chk) == 0, "%zu wrong", chk.wrong);
    }
}

Test(lookup_check, checks_step_1s_coefficients_and_names_per_lane_reads)
{
    enum { T = 999 };
    static float out[T];
    cm_lookup_check chk;
    make_tables();
    for (int t = 0; t < T; ++t) {
        double want = 0.0;
        for (int p = 0; p < 40; ++p)  /* more than 32 passes: rows come round again */
            for (int k = 0; k < CONSTMEM_PASS_READS; ++k)
                want += (double)table[32 * (p % 32) + k] * ((t + p) % 3 - 1);
        cr_assert(cm_walk_sum(table, 0, CM_COEFFS, t, 40, 0) == want, "thread %d", t);
        out[t] = (float)want;
    }
    cr_expect(cm_lookup_compare(table, 0, CM_COEFFS, 40, 0, out, T, &chk) == 0, "%zu right sums reported wrong",
              chk.wrong);
    for (int t = 0; t < T; ++t) {  /* as if lane l read entry 32 q + k + l */
        double s = 0.0;
        for (int p = 0; p < 40; ++p)
            for (int k = 0; k < CONSTMEM_PASS_READS; ++k)
                s += (double)table[(32 * (p % 32) + k + t % 32) % CONSTMEM_TABLE_ENTRIES] * ((t + p) % 3 - 1);
        out[t] = (float)s;
    }
    cr_expect(cm_lookup_compare(table, 0, CM_COEFFS, 40, 0, out, T, &chk) > 0);
    cr_expect(cm_lookup_likely_cause(&chk) == CM_LK_LANE_ADDRESSES, "cause %d", (int)cm_lookup_likely_cause(&chk));
}

Test(lookup_check, names_an_empty_table_and_unwritten_sums)
{
    enum { T = 77 };
    static float out[T];
    cm_lookup_check chk;
    make_tables();
    memset(out, 0, sizeof out);
    cm_lookup_compare(table, 0, 4, 1, 0x5u, out, T, &chk);
    cr_expect(cm_lookup_likely_cause(&chk) == CM_LK_EMPTY_TABLE);
    char msg[1600];
    cr_expect(strstr(cm_lookup_describe(&chk, msg, sizeof msg), "cudaMemcpyToSymbol") != NULL, "%s", msg);
    for (int t = 0; t < T; ++t)
        out[t] = cml_bits_float(CM_POISON_BITS);
    cm_lookup_compare(table, 0, 4, 1, 0x5u, out, T, &chk);
    cr_expect(chk.wrong == T && cm_lookup_likely_cause(&chk) == CM_LK_UNWRITTEN);
}

Test(conv_reference, identity_and_shifted_deltas)
{
    enum { W = 7, H = 5 };
    float in[W * H], w[CONSTMEM_MAX_TAPS];
    cml_fill_float(in, W * H, -1.0f, 1.0f, 3, 0);
    for (int r = 1; r <= CONSTMEM_MAX_RADIUS; ++r) {
        int taps = 2 * r + 1;
        for (int a = 0; a < taps; ++a)
            for (int b = 0; b < taps; ++b) {
                memset(w, 0, sizeof w);
                w[a * taps + b] = 1.0f;  /* out(y, x) = in(y + a - r, x + b - r), 0 outside */
                for (int y = 0; y < H; ++y)
                    for (int x = 0; x < W; ++x) {
                        double mag;
                        double got = cm_conv_pixel(in, W, H, w, r, y, x, &mag);
                        int yy = y + a - r, xx = x + b - r;
                        double want = yy < 0 || yy >= H || xx < 0 || xx >= W ? 0.0 : in[yy * W + xx];
                        cr_assert(got == want, "radius %d, delta at (%d, %d), pixel (%d, %d): %g, not %g", r, a, b,
                                  y, x, got, want);
                    }
            }
    }
}

/* A float convolution as a GPU would compute it (float sums). */
static void float_conv(const float *in, int w_, int h, const float *w, int r, float *out)
{
    int taps = 2 * r + 1;
    for (int y = 0; y < h; ++y)
        for (int x = 0; x < w_; ++x) {
            float s = 0.0f;
            for (int a = 0; a < taps; ++a)
                for (int b = 0; b < taps; ++b) {
                    int yy = y + a - r, xx = x + b - r;
                    if (yy >= 0 && yy < h && xx >= 0 && xx < w_)
                        s += w[a * taps + b] * in[yy * w_ + xx];
                }
            out[y * w_ + x] = s;
        }
}

typedef struct conv_fixture {
    int width, height, r;
    float *in, *out, w[CONSTMEM_MAX_TAPS];
} conv_fixture;

static void conv_setup(conv_fixture *f, int width, int height, int r)
{
    f->width = width;
    f->height = height;
    f->r = r;
    f->in = malloc(sizeof(float) * (size_t)width * height);
    f->out = malloc(sizeof(float) * (size_t)width * height);
    cr_assert(f->in && f->out);
    cm_make_image(f->in, (size_t)width * height, 11, 0);
    cm_make_filter(f->w, r, 11, 1);
    float_conv(f->in, width, height, f->w, r, f->out);
}

static cm_conv_cause conv_cause(conv_fixture *f, cm_conv_check *chk)
{
    cm_conv_compare(f->in, f->width, f->height, f->w, f->r, f->out, chk);
    return cm_conv_likely_cause(chk);
}

Test(conv_check, passes_float_sums_and_fails_a_dropped_tap)
{
    conv_fixture f;
    cm_conv_check chk;
    conv_setup(&f, 100, 70, 4);
    cr_expect(cm_conv_compare(f.in, f.width, f.height, f.w, f.r, f.out, &chk) == 0,
              "float sums of the right taps reported wrong: %zu", chk.wrong);
    /* Drop the last column of taps (a radius off by one on one side). */
    float w2[CONSTMEM_MAX_TAPS];
    memcpy(w2, f.w, sizeof w2);
    for (int a = 0; a < 9; ++a)
        w2[a * 9 + 8] = 0.0f;
    float_conv(f.in, f.width, f.height, w2, f.r, f.out);
    cr_expect(conv_cause(&f, &chk) == CM_CV_SUM, "cause %d", (int)conv_cause(&f, &chk));
    cr_expect(chk.wrong > (size_t)f.width * f.height / 2, "only %zu wrong", chk.wrong);
    free(f.in);
    free(f.out);
}

Test(conv_check, names_the_left_edge_the_halo_and_the_unwritten)
{
    conv_fixture f;
    cm_conv_check chk;
    char msg[1600];
    conv_setup(&f, 100, 150, 2);
    f.out[40 * 100 + 1] += 1.0f;  /* x = 1 < r */
    f.out[90 * 100 + 0] -= 1.0f;
    cr_expect(conv_cause(&f, &chk) == CM_CV_LEFT_EDGE);
    cr_expect(strstr(cm_conv_describe(&chk, msg, sizeof msg), "x = 0") != NULL, "%s", msg);
    float_conv(f.in, f.width, f.height, f.w, f.r, f.out);
    f.out[10 * 100 + 31] += 1.0f;  /* the right edge of the first tile, inside the image */
    f.out[63 * 100 + 50] += 1.0f;  /* the bottom edge of a tile */
    cr_expect(conv_cause(&f, &chk) == CM_CV_HALO);
    cr_expect(strstr(cm_conv_describe(&chk, msg, sizeof msg), "halo not loaded") != NULL, "%s", msg);
    f.out[20 * 100 + 15] += 1.0f;  /* in the middle of a tile */
    cr_expect(conv_cause(&f, &chk) == CM_CV_SUM);
    float_conv(f.in, f.width, f.height, f.w, f.r, f.out);
    for (int x = 0; x < 100; ++x)
        f.out[149 * 100 + x] = cml_bits_float(CM_POISON_BITS);
    cr_expect(conv_cause(&f, &chk) == CM_CV_UNWRITTEN && chk.wrong == 100);
    free(f.in);
    free(f.out);
}
