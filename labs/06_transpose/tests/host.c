/* Host tests of lab 06's known-good side: data, CPU transpose, the check
 * and its diagnosis, and the step table against the .cu files' opening
 * comments. No GPU needed; these run in CI. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transpose_host.h"

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

Test(data, every_element_differs_and_is_a_normal_float_of_either_sign)
{
    enum { N = 1 << 20 };
    float *a = malloc(N * sizeof *a);
    uint32_t *u = malloc(N * sizeof *u);
    cr_assert(a != NULL && u != NULL);
    tr_make_data(a, N, 20261122, 6);
    int neg = 0;
    for (int i = 0; i < N; ++i) {
        float m = fabsf(a[i]);
        cr_assert(isnormal(a[i]) && m >= 0x1p-7f && m < 0x1p9f, "a[%d] = %g", i, (double)a[i]);
        u[i] = cml_float_bits(a[i]);
        cr_assert(u[i] != TR_POISON_BITS && u[i] != TR_IN_GUARD_BITS && u[i] != TR_OUT_GUARD_BITS);
        neg += a[i] < 0;
    }
    cr_expect(neg > N / 3 && neg < 2 * N / 3, "expected both signs: %d of %d negative", neg, N);
    qsort(u, N, sizeof *u, cmp_u32);
    for (int i = 1; i < N; ++i)
        cr_assert(u[i] != u[i - 1], "two elements hold %a: a wrong index could go unseen", (double)cml_bits_float(u[i]));
    free(a);
    free(u);
}

Test(data, same_seed_and_stream_give_the_same_values_and_another_stream_others)
{
    float a[512], b[512], c[512];
    tr_make_data(a, 512, 77, 5);
    tr_make_data(b, 512, 77, 5);
    tr_make_data(c, 512, 77, 6);
    cr_expect_arr_eq(a, b, sizeof a);
    int same = 0;
    for (int i = 0; i < 512; ++i)
        same += cml_float_bits(a[i]) == cml_float_bits(c[i]);
    cr_expect(same < 4, "streams 5 and 6 agree in %d of 512 elements", same);
}

Test(reference, cpu_transpose_of_a_2_by_3_matrix)
{
    const float in[6] = {1, 2, 3, 4, 5, 6};
    const float want[6] = {1, 4, 2, 5, 3, 6};
    float out[6];
    tr_cpu_transpose(in, out, 2, 3);
    cr_expect_arr_eq(out, want, sizeof want);
}

Test(reference, cpu_transpose_twice_gives_the_matrix_back_and_passes_the_check)
{
    static const int shapes[][2] = {{1, 1}, {1, 77}, {77, 1}, {33, 31}, {100, 65}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
        int rows = shapes[s][0], cols = shapes[s][1];
        size_t n = (size_t)rows * cols;
        float *a = malloc(n * sizeof *a), *t = malloc(n * sizeof *t), *back = malloc(n * sizeof *back);
        cr_assert(a && t && back);
        tr_make_data(a, n, 3, s);
        tr_cpu_transpose(a, t, rows, cols);
        tr_check chk;
        cr_expect_eq(tr_compare(a, t, rows, cols, TR_TRANSPOSE, &chk), 0, "%d x %d", rows, cols);
        cr_expect_eq(chk.checked, n);
        tr_cpu_transpose(t, back, cols, rows);
        cr_expect_arr_eq(back, a, n * sizeof *a, "%d x %d", rows, cols);
        cr_expect_eq(tr_compare(a, a, rows, cols, TR_COPY, &chk), 0);
        free(a);
        free(t);
        free(back);
    }
}

Test(reference, step_1_is_checked_as_a_copy_and_the_others_as_transposes)
{
    cr_expect_eq(tr_step_mode(1), TR_COPY);
    for (int s = 2; s <= TRANSPOSE_NUM_STEPS; ++s)
        cr_expect_eq(tr_step_mode(s), TR_TRANSPOSE, "step %d", s);
}

/* What the tile kernel of steps 3-5 computes with a side x side tile, right
 * or with one of two classic mistakes: the tile written at the block's own
 * position (block indices not swapped), or not transposed inside. out must
 * be poisoned by the caller. */
static void tile_kernel_on_cpu(const float *in, float *out, int rows, int cols, int side, int swap_blocks,
                               int flip)
{
    for (int r0 = 0; r0 < rows; r0 += side)
        for (int c0 = 0; c0 < cols; c0 += side)
            for (int y = 0; y < side; ++y)
                for (int x = 0; x < side; ++x) {
                    int orow = swap_blocks ? c0 + y : r0 + y, ocol = swap_blocks ? r0 + x : c0 + x;
                    int tr = flip ? x : y, tc = flip ? y : x;  /* tile element read: (x, y) when flipped */
                    if (orow < cols && ocol < rows && r0 + tr < rows && c0 + tc < cols)
                        out[(size_t)orow * rows + ocol] = in[(size_t)(r0 + tr) * cols + c0 + tc];
                }
}

typedef struct case_data {
    int rows, cols;
    float *in, *out;
} case_data;

static case_data make_case(int rows, int cols)
{
    case_data c = {rows, cols, NULL, NULL};
    size_t n = (size_t)rows * cols;
    c.in = malloc(n * sizeof *c.in);
    c.out = malloc(n * sizeof *c.out);
    cr_assert(c.in && c.out);
    tr_make_data(c.in, n, 11, 0);
    for (size_t i = 0; i < n; ++i)
        c.out[i] = cml_bits_float(TR_POISON_BITS);
    return c;
}

static void free_case(case_data *c)
{
    free(c->in);
    free(c->out);
}

/* Checks out as a transpose and expects `cause` and `words` in the report. */
static void expect_diagnosis(case_data *c, tr_mode mode, tr_cause cause, const char *words)
{
    tr_check chk;
    cr_assert(tr_compare(c->in, c->out, c->rows, c->cols, mode, &chk) > 0);
    cr_expect_eq(tr_likely_cause(&chk), cause, "cause %d, expected %d", (int)tr_likely_cause(&chk), (int)cause);
    char msg[1400];
    tr_describe(&chk, msg, sizeof msg);
    cr_expect(strstr(msg, words) != NULL, "\"%s\" is not in: %s", words, msg);
}

Test(diagnosis, the_right_tile_kernel_passes)
{
    case_data c = make_case(1000, 777);
    tile_kernel_on_cpu(c.in, c.out, c.rows, c.cols, 32, 1, 1);
    tr_check chk;
    cr_expect_eq(tr_compare(c.in, c.out, c.rows, c.cols, TR_TRANSPOSE, &chk), 0);
    free_case(&c);
}

Test(diagnosis, names_elements_never_written)
{
    case_data c = make_case(31, 33);
    expect_diagnosis(&c, TR_TRANSPOSE, TR_CAUSE_UNWRITTEN, "never written");
    expect_diagnosis(&c, TR_COPY, TR_CAUSE_UNWRITTEN, "never written");
    tr_check chk;
    tr_compare(c.in, c.out, c.rows, c.cols, TR_TRANSPOSE, &chk);
    cr_expect_eq(chk.wrong, 31u * 33u);
    cr_expect_eq(chk.reported, TR_MAX_REPORTED);
    cr_expect(chk.first[0].row == 0 && chk.first[0].col == 0 && chk.first[1].col == 1, "row-major order");
    free_case(&c);
}

Test(diagnosis, names_a_copy_where_a_transpose_belongs)
{
    case_data c = make_case(40, 70);
    memcpy(c.out, c.in, (size_t)c.rows * c.cols * sizeof *c.in);
    expect_diagnosis(&c, TR_TRANSPOSE, TR_CAUSE_NOT_TRANSPOSED, "copied, not transposed");
    free_case(&c);
}

Test(diagnosis, names_block_indices_not_swapped_on_the_write)
{
    case_data c = make_case(1000, 777);
    tile_kernel_on_cpu(c.in, c.out, c.rows, c.cols, 32, 0, 1);
    expect_diagnosis(&c, TR_TRANSPOSE, TR_CAUSE_TILE_NOT_MOVED, "swap the block indices");
    free_case(&c);
    c = make_case(256, 320);  /* a tile of 64 (step 6 may use one) */
    tile_kernel_on_cpu(c.in, c.out, c.rows, c.cols, 64, 0, 1);
    expect_diagnosis(&c, TR_TRANSPOSE, TR_CAUSE_TILE_NOT_MOVED, "swap the block indices");
    free_case(&c);
}

Test(diagnosis, names_a_tile_moved_but_not_transposed_inside)
{
    case_data c = make_case(100, 130);
    tile_kernel_on_cpu(c.in, c.out, c.rows, c.cols, 32, 1, 0);
    expect_diagnosis(&c, TR_TRANSPOSE, TR_CAUSE_TILE_NOT_FLIPPED, "not transposed inside");
    free_case(&c);
}

Test(diagnosis, names_reads_past_the_end_of_in_from_its_guard_value)
{
    case_data c = make_case(33, 31);
    tr_cpu_transpose(c.in, c.out, c.rows, c.cols);
    c.out[5] = cml_bits_float(TR_IN_GUARD_BITS);
    expect_diagnosis(&c, TR_TRANSPOSE, TR_CAUSE_GUARD_VALUE, "reads past the end of in");
    free_case(&c);
}

Test(diagnosis, suggests_the_sanitizers_for_other_wrong_values)
{
    case_data c = make_case(64, 64);
    tr_cpu_transpose(c.in, c.out, c.rows, c.cols);
    float t = c.out[100];
    c.out[100] = c.out[2000];
    c.out[2000] = t;
    expect_diagnosis(&c, TR_TRANSPOSE, TR_CAUSE_OTHER, "racecheck");
    free_case(&c);
}

Test(diagnosis, a_race_that_leaves_one_value_equal_to_a_copy_is_still_a_race)
{
    /* A racy tile leaves stale words in out; one of them may equal in[k] by
     * chance. That one element must not turn the diagnosis into "copied". */
    case_data c = make_case(64, 96);
    tr_cpu_transpose(c.in, c.out, c.rows, c.cols);
    for (int k = 0; k < 500; ++k)
        c.out[(size_t)k * 7] = c.out[(size_t)k * 7 + 1];
    c.out[3001] = c.in[3001];
    expect_diagnosis(&c, TR_TRANSPOSE, TR_CAUSE_OTHER, "racecheck");
    free_case(&c);
}

Test(diagnosis, reports_position_expected_and_got)
{
    case_data c = make_case(3, 2);
    tr_cpu_transpose(c.in, c.out, 3, 2);
    c.out[1 * 3 + 2] = cml_bits_float(TR_POISON_BITS);  /* out(1, 2), which must hold in(2, 1) */
    tr_check chk;
    cr_assert_eq(tr_compare(c.in, c.out, 3, 2, TR_TRANSPOSE, &chk), 1);
    char msg[1400], want[200];
    snprintf(want, sizeof want, "out(1, 2) expected %.9g, got nan", (double)c.in[2 * 2 + 1]);
    tr_describe(&chk, msg, sizeof msg);
    cr_expect(strstr(msg, "1 of 6 elements of out are wrong (1 never written)") != NULL, "%s", msg);
    cr_expect(strstr(msg, want) != NULL, "\"%s\" is not in: %s", want, msg);
    free_case(&c);
}
