/* Host tests of lab 01's support code (no GPU): the patterns the probe
 * measures, the probe's expected sums, the A*B^T reference, its error bound
 * and diagnosis, and the files' opening comments against the step table. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "banks_host.h"

Test(patterns, stay_inside_the_probe_array_and_say_what_they_read)
{
    for (int p = 0; p < BANKS_NUM_PATTERNS; ++p) {
        cr_expect(strlen(banks_pattern_names[p]) > 0 && strlen(banks_pattern_whats[p]) > 0);
        for (int lane = 0; lane < BANKS_WARP; ++lane)
            cr_expect(banks_pattern_word((banks_pattern)p, lane) < BANKS_PROBE_MAX_WORD,
                      "%s, lane %d reads word %u, past the probe's %d", banks_pattern_names[p], lane,
                      banks_pattern_word((banks_pattern)p, lane), BANKS_PROBE_MAX_WORD);
    }
    cr_expect_eq(banks_pattern_word(BANKS_PATTERN_stride_33, 31), 1023u);
    cr_expect_eq(banks_pattern_word(BANKS_PATTERN_tile_column, 2), 69u);
    cr_expect_eq(banks_pattern_word(BANKS_PATTERN_padded_column, 2), 71u);
    cr_expect_eq(banks_pattern_word(BANKS_PATTERN_swizzled_column, 2), 64u + (5u ^ 2u));
    uint32_t addr[BANKS_WARP];
    banks_pattern_addresses(BANKS_PATTERN_stride_4, addr);
    cr_expect_eq(addr[3], 48u, "addresses are bytes: word 12 is byte 48");
}

Test(patterns, probe_sums_follow_from_the_words_read)
{
    /* lane 1 of stride_2 reads word 2 + 32 j, j = 0..31, each round. */
    unsigned one_round = 0;
    for (unsigned j = 0; j < BANKS_PROBE_UNROLL; ++j)
        one_round += 2u + 32u * j;
    cr_expect_eq(banks_probe_expected_sum(BANKS_PATTERN_stride_2, 1, 1), one_round);
    cr_expect_eq(banks_probe_expected_sum(BANKS_PATTERN_stride_2, 1, 5), 5u * one_round);
    cr_expect_neq(banks_probe_expected_sum(BANKS_PATTERN_stride_2, 1, 1),
                  banks_probe_expected_sum(BANKS_PATTERN_stride_2, 2, 1), "lanes must differ");
}

Test(abt, cpu_reference_is_a_times_b_transposed)
{
    static float a[1024], b[1024];
    static double c[1024], abs_c[1024];
    for (int i = 0; i < 1024; ++i) {
        a[i] = (float)(i % 7) - 3.0f;
        b[i] = (float)(i % 5) - 2.0f;
    }
    banks_cpu_abt(a, b, 1, c, abs_c);
    for (int i = 0; i < 32; i += 7)
        for (int j = 0; j < 32; j += 5) {
            double s = 0.0, sa = 0.0;
            for (int k = 0; k < 32; ++k) {
                s += (double)a[i * 32 + k] * b[j * 32 + k];
                sa += fabs((double)a[i * 32 + k] * b[j * 32 + k]);
            }
            cr_expect_eq(c[i * 32 + j], s, "C[%d][%d]", i, j);
            cr_expect_eq(abs_c[i * 32 + j], sa, "|C|[%d][%d]", i, j);
        }
}

Test(abt, small_integer_data_are_integers_in_range_with_both_signs)
{
    static float m[3 * 1024];
    banks_make_matrices(m, 3, BANKS_DATA_SMALL_INTS, 5, 6);
    int neg = 0, pos = 0, distinct[17] = {0};
    for (int i = 0; i < 3 * 1024; ++i) {
        cr_assert(m[i] == floorf(m[i]) && m[i] >= -8.0f && m[i] <= 8.0f, "m[%d] = %g", i, (double)m[i]);
        neg += m[i] < 0;
        pos += m[i] > 0;
        distinct[(int)m[i] + 8] = 1;
    }
    int kinds = 0;
    for (int k = 0; k < 17; ++k)
        kinds += distinct[k];
    cr_expect(neg > 1000 && pos > 1000 && kinds == 17, "neg %d, pos %d, %d distinct values", neg, pos, kinds);
}

Test(abt, tolerance_passes_rounding_and_fails_a_wrong_index)
{
    /* 32 products of reals in [-1, 1): sum |ab| is about 8; the bound is a
     * few 1e-5, far below what a wrong k or a wrong row changes (~0.1 or more). */
    double tol = banks_abt_tolerance(8.0);
    cr_expect(tol > 8.0 * 32 * 0x1p-24 * 0.99 && tol < 2e-5, "tol %g", tol);
    cr_expect(banks_abt_tolerance(0.0) > 0.0, "all-zero products need a bound above 0");
}

Test(abt, diagnosis_names_unwritten_elements_and_a_times_b)
{
    static float a[1024], b[1024], c[1024];
    static double ref[1024], abs_ref[1024], ab[1024];
    banks_make_matrices(a, 1, BANKS_DATA_REALS, 9, 1);
    banks_make_matrices(b, 1, BANKS_DATA_REALS, 9, 2);
    banks_cpu_abt(a, b, 1, ref, abs_ref);
    for (int i = 0; i < 32; ++i)
        for (int j = 0; j < 32; ++j) {
            double s = 0.0;
            for (int k = 0; k < 32; ++k)
                s += (double)a[i * 32 + k] * b[k * 32 + j];
            ab[i * 32 + j] = s;
        }
    for (int i = 0; i < 1024; ++i)
        c[i] = (float)ab[i];
    char report[2000];
    size_t wrong = banks_abt_check(5, a, b, c, ref, abs_ref, 1, 2, report, sizeof report);
    cr_expect(wrong > 1000, "A*B differs from A*B^T almost everywhere: %zu", wrong);
    cr_expect(strstr(report, "(A*B)") != NULL, "%s", report);
    uint32_t poison = BANKS_POISON;
    for (int i = 0; i < 1024; ++i)
        memcpy(&c[i], &poison, sizeof poison);
    banks_abt_check(7, a, b, c, ref, abs_ref, 1, 1, report, sizeof report);
    cr_expect(strstr(report, "never written") != NULL, "%s", report);
    for (int i = 0; i < 1024; ++i)
        c[i] = (float)ref[i];
    c[33] += 0.5f;
    wrong = banks_abt_check(7, a, b, c, ref, abs_ref, 1, 1, report, sizeof report);
    cr_expect_eq(wrong, 1u);
    cr_expect(strstr(report, "C[1][1]") != NULL && strstr(report, "swizzle") != NULL, "%s", report);
}

/* The model's view (banks_run --model, and the runner without a GPU): a
 * student with step 1 done sees their banks, and a '?' says which step it
 * waits for. The stand-ins play a student's bank_model.c at that point. */
static int bank_done(uint32_t byte_address)
{
    return (int)(byte_address / BANKS_WORD_BYTES % BANKS_COUNT);
}

static int bank_stub(uint32_t byte_address)
{
    (void)byte_address;
    return -1;
}

static int degree_stub(const uint32_t byte_address[BANKS_WARP], int access_bytes)
{
    (void)byte_address;
    (void)access_bytes;
    return 0;  /* the skeleton's step-2 stub */
}

static int degree_done(const uint32_t byte_address[BANKS_WARP], int access_bytes)
{
    (void)access_bytes;
    return byte_address[1] == byte_address[0] ? 1 : 7;  /* any answer: the view shows it */
}

Test(model_view, shows_the_banks_of_bank_of_once_step_1_is_done)
{
    static char text[8192];
    int unknown = banks_model_table(bank_done, degree_stub, text, sizeof text);
    cr_expect_eq(unknown, BANKS_NUM_PATTERNS, "only the model column waits (step 2), got %d '?'", unknown);
    cr_expect(strstr(text, "0 2 4 6 8 10 12 14") != NULL, "stride_2's banks from bank_of are missing:\n%s", text);
    cr_expect(strstr(text, "5 5 5 5 5 5 5 5") != NULL, "tile_column's banks are missing:\n%s", text);
    cr_expect(strstr(text, "banks ?") == NULL, "bank_of is done, yet the view says it is not:\n%s", text);
    cr_expect(strstr(text, "model ?: conflict_degree gives no wavefront count yet (steps 2-3") != NULL,
              "the '?' in the model column is not explained:\n%s", text);
}

Test(model_view, says_which_step_each_question_mark_waits_for)
{
    static char text[8192];
    banks_model_table(bank_stub, degree_stub, text, sizeof text);
    cr_expect(strstr(text, "banks ?: bank_of gives no bank from 0 to 31 yet (step 1") != NULL, "%s", text);
    cr_expect(strstr(text, "model ?:") != NULL, "%s", text);
    int unknown = banks_model_table(bank_done, degree_done, text, sizeof text);
    cr_expect_eq(unknown, 0, "%s", text);
    cr_expect(strstr(text, "?") == NULL, "nothing waits, yet a '?' is shown:\n%s", text);
    cr_expect(strstr(text, "broadcast        word 7 for every lane                            7 7 7 7 7 7 7 7"
                           "              1") != NULL,
              "broadcast's row:\n%s", text);
}
