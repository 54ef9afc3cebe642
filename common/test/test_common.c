/* Host tests of the common library: argument parsing, seeded data,
 * comparison, medians, the results report, the ncu CSV reader and the
 * runner library (with a fake lab and a fake device probe). No GPU needed. */
#define _POSIX_C_SOURCE 200809L /* setenv, mkstemp */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cml/cml_args.h"
#include "cml/cml_buffer.h"
#include "cml/cml_check.h"
#include "cml/cml_compare.h"
#include "cml/cml_lab_runner.h"
#include "cml/cml_ncu.h"
#include "cml/cml_report.h"
#include "cml/cml_rng.h"
#include "cml/cml_spec.h"
#include "cml/cml_steps.h"
#include "cml/cml_test.h"
#include "cml/cml_timing.h"

/* ---------------------------------------------------------------- args */

Test(args, parses_counts_written_as_powers_of_two_with_offsets)
{
    size_t n = 0;
    cr_assert(cml_parse_count("2^28+1", 1, SIZE_MAX, &n));
    cr_expect_eq(n, (size_t)268435457);
    cr_assert(cml_parse_count("2^20-3", 1, SIZE_MAX, &n));
    cr_expect_eq(n, (size_t)1048573);
    cr_assert(cml_parse_count("1000003", 1, SIZE_MAX, &n));
    cr_expect_eq(n, (size_t)1000003);
    cr_assert(cml_parse_count("64M", 1, SIZE_MAX, &n));
    cr_expect_eq(n, (size_t)64 << 20);
    cr_assert(cml_parse_count("3K", 1, SIZE_MAX, &n));
    cr_expect_eq(n, (size_t)3072);
}

Test(args, rejects_counts_that_are_malformed_or_out_of_range)
{
    size_t n = 12345;
    const char *bad[] = {"", "abc", "-5", "2^", "3^4", "2^28+", "12x", "1.5", "2^70", "0", " 7", "7 "};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i)
        cr_expect(!cml_parse_count(bad[i], 1, SIZE_MAX, &n), "accepted \"%s\"", bad[i]);
    cr_expect(!cml_parse_count("2^10-1025", 0, SIZE_MAX, &n), "a negative result must be rejected");
    cr_expect(!cml_parse_count("1001", 1, 1000, &n), "above the maximum must be rejected");
    cr_expect_eq(n, (size_t)12345, "a rejected value must leave the output alone");
}

Test(args, parses_step_lists_and_ranges)
{
    unsigned m = 0;
    cr_assert(cml_parse_steps("all", 8, &m));
    cr_expect_eq(m, 0xFFu);
    cr_assert(cml_parse_steps("3", 8, &m));
    cr_expect_eq(m, 0x4u);
    cr_assert(cml_parse_steps("1,4,7", 8, &m));
    cr_expect_eq(m, 0x49u);
    cr_assert(cml_parse_steps("2-5,8", 8, &m));
    cr_expect_eq(m, 0x9Eu);
}

Test(args, rejects_unknown_steps)
{
    unsigned m = 0;
    const char *bad[] = {"0", "9", "5-3", "1,,2", "one", "", "1-", "3,"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i)
        cr_expect(!cml_parse_steps(bad[i], 8, &m), "accepted \"%s\"", bad[i]);
}

Test(args, parses_bounded_integers)
{
    int v = 0;
    cr_assert(cml_parse_int("50", 1, 100000, &v));
    cr_expect_eq(v, 50);
    cr_expect(!cml_parse_int("0", 1, 100000, &v));
    cr_expect(!cml_parse_int("5x", 1, 100000, &v));
    cr_expect(!cml_parse_int("", 1, 100000, &v));
}

/* ---------------------------------------------------------------- rng */

Test(rng, gives_the_same_data_for_the_same_seed_and_stream)
{
    int a[1000], b[1000];
    cml_fill_int(a, 1000, -1000, 1000, 42, 7);
    cml_fill_int(b, 1000, -1000, 1000, 42, 7);
    cr_expect_arr_eq(a, b, sizeof a);
}

Test(rng, gives_different_data_for_other_seeds_and_streams)
{
    int a[64], b[64], c[64];
    cml_fill_int(a, 64, -1000, 1000, 42, 7);
    cml_fill_int(b, 64, -1000, 1000, 43, 7);
    cml_fill_int(c, 64, -1000, 1000, 42, 8);
    cr_expect(memcmp(a, b, sizeof a) != 0);
    cr_expect(memcmp(a, c, sizeof a) != 0);
}

Test(rng, any_draw_is_made_at_once_as_the_sequence_makes_it)
{
    /* cml_rng_draw(seed, stream, i): what a kernel's thread makes of word i
     * (lab 04's red_big.cu), the i-th draw after cml_rng_init */
    static const uint64_t seeds[] = {0, 1, 20261122, UINT64_C(0xFFFFFFFFFFFFFFFF)};
    for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; ++s) {
        cml_rng rng;
        cml_rng_init(&rng, seeds[s], 700);
        int words[300];
        cml_fill_int(words, 300, -1, 1, seeds[s], 700);
        for (uint64_t i = 0; i < 300; ++i) {
            uint64_t r = cml_rng_draw(seeds[s], 700, i);
            cr_assert(r == cml_rng_next(&rng), "seed %llu: draw %llu differs from the sequence's",
                      (unsigned long long)seeds[s], (unsigned long long)i);
            cr_assert(cml_rng_int_of(r, -1, 1) == words[i], "seed %llu: word %llu differs from cml_fill_int's",
                      (unsigned long long)seeds[s], (unsigned long long)i);
        }
    }
}

Test(rng, stays_in_range_and_reaches_both_ends)
{
    enum { N = 100000 };
    static int v[N];
    cml_fill_int(v, N, -7, 7, 1, 0);
    int lo = 0, hi = 0;
    long long hist[15] = {0};
    for (int i = 0; i < N; ++i) {
        cr_assert(v[i] >= -7 && v[i] <= 7, "v[%d] = %d is outside [-7, 7]", i, v[i]);
        lo += v[i] == -7;
        hi += v[i] == 7;
        hist[v[i] + 7]++;
    }
    cr_expect(lo > 0 && hi > 0, "never drew an end of the range");
    for (int k = 0; k < 15; ++k)  /* each value about N/15 = 6667 times */
        cr_expect(hist[k] > 6000 && hist[k] < 7400, "value %d drawn %lld times", k - 7, hist[k]);
}

Test(rng, floats_are_in_range_and_not_all_alike)
{
    enum { N = 4096 };
    static float v[N];
    cml_fill_float(v, N, -1.0f, 1.0f, 5, 0);
    double sum = 0.0;
    int distinct = 0;
    for (int i = 0; i < N; ++i) {
        cr_assert(v[i] >= -1.0f && v[i] < 1.0f, "v[%d] = %g", i, (double)v[i]);
        sum += v[i];
        distinct += i > 0 && v[i] != v[i - 1];
    }
    cr_expect(fabs(sum / N) < 0.05, "mean %g is far from 0", sum / N);
    cr_expect(distinct > N - 10);
}

Test(rng, reads_the_seed_from_CML_SEED)
{
    uint64_t s = 0;
    char err[128] = "";
    unsetenv("CML_SEED");
    cr_assert(cml_seed(&s, err, sizeof err));
    cr_expect_eq(s, CML_DEFAULT_SEED);
    setenv("CML_SEED", "0x1F", 1);
    cr_assert(cml_seed(&s, err, sizeof err));
    cr_expect_eq(s, (uint64_t)31);
    setenv("CML_SEED", "12ab", 1);
    cr_expect(!cml_seed(&s, err, sizeof err));
    cr_expect(strstr(err, "12ab") != NULL, "the message should quote the bad value: %s", err);
    unsetenv("CML_SEED");
}

/* ---------------------------------------------------------------- compare */

Test(compare, reports_the_first_integer_mismatches_in_order)
{
    int got[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    int want[10] = {0, 1, 2, 30, 4, 5, 60, 7, 8, 9};
    cml_compare_result r;
    cr_expect_eq(cml_compare_int(got, want, 10, &r), (size_t)2);
    cr_expect_eq(r.reported, (size_t)2);
    cr_expect_eq(r.first[0].index, (size_t)3);
    cr_expect_eq(r.first[0].expected, 30.0);
    cr_expect_eq(r.first[0].got, 3.0);
    cr_expect_eq(r.first[1].index, (size_t)6);
    char buf[256];
    cml_compare_describe(&r, "out", buf, sizeof buf);
    cr_expect_str_eq(buf, "2 of 10 elements of out differ: [3] expected 30, got 3; [6] expected 60, got 6");
}

Test(compare, keeps_only_the_first_few_of_many_mismatches)
{
    int got[100], want[100];
    for (int i = 0; i < 100; ++i) {
        got[i] = i;
        want[i] = -i - 1;
    }
    cml_compare_result r;
    cr_expect_eq(cml_compare_int(got, want, 100, &r), (size_t)100);
    cr_expect_eq(r.reported, (size_t)CML_MAX_REPORTED);
    cr_expect_eq(r.first[CML_MAX_REPORTED - 1].index, (size_t)CML_MAX_REPORTED - 1);
}

Test(compare, float_tolerance_is_atol_plus_rtol_times_the_reference)
{
    /* atol 1e-3, rtol 1e-2: at 100 the bound is 1.001. */
    float got[4] = {101.0f, 101.01f, 0.0009f, 0.0011f};
    double want[4] = {100.0, 100.0, 0.0, 0.0};
    cml_compare_result r;
    cr_expect_eq(cml_compare_float(got, want, 4, 1e-3, 1e-2, &r), (size_t)2);
    cr_expect_eq(r.first[0].index, (size_t)1);
    cr_expect_eq(r.first[1].index, (size_t)3);
}

Test(compare, nan_and_inf_never_match)
{
    float got[2] = {NAN, INFINITY};
    double want[2] = {1.0, 1.0};
    cml_compare_result r;
    cr_expect_eq(cml_compare_float(got, want, 2, 1e30, 1e30, &r), (size_t)2);
    cr_expect(!cml_close(NAN, NAN, 1.0, 1.0));
}

/* ---------------------------------------------------------------- timing */

Test(timing, median_of_odd_and_even_counts)
{
    double a[5] = {5, 1, 4, 2, 3};
    double b[4] = {10, 1, 3, 2};
    cr_expect_eq(cml_median(a, 5), 3.0);
    cr_expect_eq(cml_median(b, 4), 2.5);
}

/* ---------------------------------------------------------------- report */

static cml_report sample_report(void)
{
    cml_report r;
    cml_report_init(&r, "99_sample", "Sample \"lab\"", "GB/s");
    snprintf(r.device.name, sizeof r.device.name, "Test GPU");
    r.device.cc_major = 9;
    r.ceiling_rate = 2000.0;
    snprintf(r.ceiling_name, sizeof r.ceiling_name, "device copy");
    cml_row *a = cml_report_add(&r, CML_ROW_STEP, 1, "first");
    a->status = CML_ROW_OK;
    a->timed = 1;
    a->ms = 2.0;
    a->rate = 500.0;
    cml_row *b = cml_report_add(&r, CML_ROW_STEP, 2, "second");
    b->status = CML_ROW_WRONG;
    snprintf(b->note, sizeof b->note, "expected 5, got 4");
    return r;
}

static char *read_all(FILE *f)
{
    static char buf[8192];
    rewind(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    return buf;
}

Test(report, json_has_the_rows_and_the_fraction_of_the_ceiling)
{
    cml_report r = sample_report();
    FILE *f = tmpfile();
    cr_assert(f != NULL);
    cml_report_print_json(&r, f);
    char *s = read_all(f);
    cr_expect(strstr(s, "\"title\": \"Sample \\\"lab\\\"\"") != NULL, "title not escaped: %s", s);
    cr_expect(strstr(s, "\"fraction_of_ceiling\": 0.2500") != NULL, "%s", s);
    cr_expect(strstr(s, "\"status\": \"WRONG\", \"correct\": false, \"note\": \"expected 5, got 4\"") != NULL, "%s", s);
    fclose(f);
}

/* The whole page cml_report_write_markdown writes for r (a new file). */
static char *written_page(const cml_report *r)
{
    char path[] = "/tmp/cml_pageXXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    unlink(path);  /* a new page: the whole file is written */
    cr_assert(cml_report_write_markdown(r, path) == 0);
    FILE *f = fopen(path, "rb");
    cr_assert(f != NULL);
    char *s = read_all(f);
    fclose(f);
    unlink(path);
    return s;
}

/* The lab gives its data; the report adds how each row was timed, once,
 * in the table, the page and the JSON alike (nothing when none was). */
Test(report, the_data_and_the_median_of_the_timed_runs_are_said_once_everywhere)
{
    cml_report r = sample_report();
    snprintf(r.params, sizeof r.params, "n = 3 floats");
    r.runs = 7;
    char *s = written_page(&r);
    cr_expect(strstr(s, ". n = 3 floats, median of 7 runs, seed ") != NULL, "the page:\n%s", s);
    FILE *t = tmpfile();
    cr_assert(t != NULL);
    cml_report_print_table(&r, t);
    s = read_all(t);
    cr_expect(strstr(s, "\nn = 3 floats, median of 7 runs, seed ") != NULL, "the table:\n%s", s);
    cml_report_print_json(&r, t);   /* after the table: read again from the start */
    s = read_all(t);
    cr_expect(strstr(s, "\"params\": \"n = 3 floats, median of 7 runs\"") != NULL, "the JSON:\n%s", s);
    fclose(t);
    r.runs = 0;   /* --check-only: nothing timed */
    t = tmpfile();
    cr_assert(t != NULL);
    cml_report_print_table(&r, t);
    s = read_all(t);
    cr_expect(strstr(s, "\nn = 3 floats, seed ") != NULL && strstr(s, "median of") == NULL, "untimed:\n%s", s);
    fclose(t);
}

Test(report, table_shows_wrong_steps_untimed_with_their_reason)
{
    cml_report r = sample_report();
    FILE *f = tmpfile();
    cr_assert(f != NULL);
    cml_report_print_table(&r, f);
    char *s = read_all(f);
    cr_expect(strstr(s, "25%  |######.") != NULL, "bar for 25%% missing:\n%s", s);
    cr_expect(strstr(s, "WRONG") != NULL && strstr(s, "^ expected 5, got 4") != NULL, "%s", s);
    fclose(f);
}

Test(report, markdown_replaces_only_the_marked_region_of_a_handout)
{
    char path[] = "/tmp/cml_handoutXXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    const char *before = "# Handout\nintro\n<!-- results:begin -->\nold table\n<!-- results:end -->\noutro\n";
    cr_assert(write(fd, before, strlen(before)) == (ssize_t)strlen(before));
    close(fd);
    cml_report r = sample_report();
    cr_assert(cml_report_write_markdown(&r, path) == 0);
    FILE *f = fopen(path, "rb");
    cr_assert(f != NULL);
    char *s = read_all(f);
    fclose(f);
    unlink(path);
    cr_expect(strncmp(s, "# Handout\nintro\n<!-- results:begin -->\n", 39) == 0, "%s", s);
    cr_expect(strstr(s, "old table") == NULL, "%s", s);
    cr_expect(strstr(s, "| 1 | first | ok | 2.000 | 500.0 | 25% |") != NULL, "%s", s);
    cr_expect(strstr(s, "<!-- results:end -->\noutro\n") != NULL, "%s", s);
}

/* What ncu --csv prints (details page), with the program's own output and
 * ncu's ==PROF== lines mixed in, and values with thousands separators. */
static const char ncu_text[] =
    "==PROF== Connected to process 4242 (/kit/build/banks_run_ref)\n"
    "step 6 ok\n"
    "==PROF== Profiling \"abt_kernel\" - 0: 0%....50%....100% - 1 pass\n"
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\","
    "\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
    "\"0\",\"4242\",\"banks_run_ref\",\"127.0.0.1\",\"void abt_kernel<0>(const float *, float *, int)\",\"1\",\"7\","
    "\"(32, 32, 1)\",\"(4096, 1, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\","
    "\"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum\",\"\",\"4,063,232\"\n"
    "\"0\",\"4242\",\"banks_run_ref\",\"127.0.0.1\",\"void abt_kernel<0>(const float *, float *, int)\",\"1\",\"7\","
    "\"(32, 32, 1)\",\"(4096, 1, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\","
    "\"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum\",\"\",\"12\"\n"
    "\"1\",\"4242\",\"banks_run_ref\",\"127.0.0.1\",\"void abt_kernel<1>(const float *, float *, int)\",\"1\",\"7\","
    "\"(32, 32, 1)\",\"(4096, 1, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\","
    "\"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum\",\"\",\"0\"\n"
    "\"1\",\"4242\",\"banks_run_ref\",\"127.0.0.1\",\"void abt_kernel<1>(const float *, float *, int)\",\"1\",\"7\","
    "\"(32, 32, 1)\",\"(4096, 1, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\","
    "\"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum\",\"\",\"n/a\"\n";

Test(ncu, reads_each_launch_and_metric_from_the_csv)
{
    const char *metrics[] = {CML_NCU_SHARED_LD_CONFLICTS, CML_NCU_SHARED_ST_CONFLICTS};
    cml_ncu_counts c;
    cr_assert_eq(cml_ncu_parse_csv(ncu_text, metrics, 2, &c), 2);
    cr_expect_str_eq(c.kernel[0], "void abt_kernel<0>(const float *, float *, int)");
    cr_expect(c.value[0][0] == 4063232.0, "thousands separators: got %g", c.value[0][0]);
    cr_expect(c.value[0][1] == 12.0, "second metric of launch 0: got %g", c.value[0][1]);
    cr_expect(c.value[1][0] == 0.0, "launch 1: got %g", c.value[1][0]);
    cr_expect(c.value[1][1] == -1.0, "a value that is not a number is -1, never 0: got %g", c.value[1][1]);
}

Test(ncu, reads_nan_and_inf_as_no_value)
{
    /* ncu gave a SASS counter as "nan" on an H200 beside other GPU work: strtod takes it for a number */
    const char *cells[] = {"nan", "-nan", "inf", "NaN"};
    const char *metrics[] = {CML_NCU_SHARED_LD_CONFLICTS};
    for (size_t i = 0; i < sizeof cells / sizeof cells[0]; ++i) {
        char text[512];
        snprintf(text, sizeof text,
                 "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
                 "\"0\",\"k\",\"%s\",\"\",\"%s\"\n",
                 CML_NCU_SHARED_LD_CONFLICTS, cells[i]);
        cml_ncu_counts c;
        cr_assert_eq(cml_ncu_parse_csv(text, metrics, 1, &c), 1);
        cr_expect(c.value[0][0] == -1.0, "\"%s\" is no value (-1): got %g", cells[i], c.value[0][0]);
    }
}

Test(ncu, finds_nothing_in_text_without_the_metric)
{
    const char *metrics[] = {"sm__cycles_elapsed.avg"};
    cml_ncu_counts c;
    cr_expect_eq(cml_ncu_parse_csv(ncu_text, metrics, 1, &c), 0);
    cr_expect_eq(cml_ncu_parse_csv("==ERROR== ERR_NVGPUCTRPERM - no permission\n", metrics, 1, &c), 0);
}

/* ncu 2025.3's CSV for a launch of lab 04's step 3 on an H200 (metrics in
 * its own order, a unit on the sector rows, thousands separators). */
static const char ncu_sectors_text[] =
    "==PROF== Connected to process 1619 (/tmp/b28/reduction_run_ref)\n"
    "step 3 sequential       ok\n"
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"Block Size\","
    "\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
    "\"12\",\"1619\",\"reduction_run_ref\",\"127.0.0.1\",\"void reduce_kernel3<int>(const T1 *, T1 *, unsigned long)\","
    "\"1\",\"7\",\"(512, 1, 1)\",\"(1954, 1, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\","
    "\"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum\",\"\",\"31,251\"\n"
    "\"12\",\"1619\",\"reduction_run_ref\",\"127.0.0.1\",\"void reduce_kernel3<int>(const T1 *, T1 *, unsigned long)\","
    "\"1\",\"7\",\"(512, 1, 1)\",\"(1954, 1, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\","
    "\"l1tex__t_requests_pipe_lsu_mem_global_op_st.sum\",\"\",\"1,954\"\n"
    "\"12\",\"1619\",\"reduction_run_ref\",\"127.0.0.1\",\"void reduce_kernel3<int>(const T1 *, T1 *, unsigned long)\","
    "\"1\",\"7\",\"(512, 1, 1)\",\"(1954, 1, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\","
    "\"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum\",\"sector\",\"125,001\"\n"
    "\"12\",\"1619\",\"reduction_run_ref\",\"127.0.0.1\",\"void reduce_kernel3<int>(const T1 *, T1 *, unsigned long)\","
    "\"1\",\"7\",\"(512, 1, 1)\",\"(1954, 1, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\","
    "\"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum\",\"sector\",\"1,954\"\n";

static const char *const sector_metrics[] = {CML_NCU_GLOBAL_LD_REQUESTS, CML_NCU_GLOBAL_LD_SECTORS,
                                             CML_NCU_GLOBAL_ST_REQUESTS, CML_NCU_GLOBAL_ST_SECTORS};

Test(ncu, reads_the_global_sector_metrics_in_any_order)
{
    cml_ncu_counts c;
    cr_assert_eq(cml_ncu_parse_csv(ncu_sectors_text, sector_metrics, 4, &c), 1);
    cr_expect_str_eq(c.kernel[0], "void reduce_kernel3<int>(const T1 *, T1 *, unsigned long)");
    const double want[4] = {31251.0, 125001.0, 1954.0, 1954.0};
    for (int m = 0; m < 4; ++m)
        cr_expect(c.value[0][m] == want[m], "%s: got %g, want %g", sector_metrics[m], c.value[0][m], want[m]);
    cr_expect_eq(c.nlines, 0, "ncu's details page has no source lines");
}

/* Without --print-units base ncu scales a value and says so in its unit
 * column: the reader gives bytes and nanoseconds whatever it printed. */
Test(ncu, gives_scaled_units_in_bytes_and_nanoseconds)
{
    static const char text[] =
        "\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
        "\"0\",\"k\",\"dram__bytes_read.sum\",\"Mbyte\",\"536.87\"\n"
        "\"0\",\"k\",\"dram__bytes_write.sum\",\"byte\",\"1,024\"\n"
        "\"0\",\"k\",\"gpu__time_duration.sum\",\"usecond\",\"12.5\"\n"
        "\"0\",\"k\",\"lts__t_sector_hit_rate.pct\",\"%\",\"45.5\"\n";
    const char *metrics[] = {"dram__bytes_read.sum", "dram__bytes_write.sum", "gpu__time_duration.sum",
                             "lts__t_sector_hit_rate.pct"};
    cml_ncu_counts c;
    cr_assert_eq(cml_ncu_parse_csv(text, metrics, 4, &c), 1);
    const double want[4] = {536.87e6, 1024.0, 12500.0, 45.5};
    for (int m = 0; m < 4; ++m)
        cr_expect(fabs(c.value[0][m] - want[m]) <= 1e-9 * want[m], "%s: got %.17g, want %g", metrics[m],
                  c.value[0][m], want[m]);
}

#include "cml/cml_gpu_turn.h"

/* Another process that takes `how` (LOCK_SH, LOCK_EX) on `path`, holds it
 * 0.5 s, makes the file `done` and ends (which lets go). Returns its pid
 * once it holds the lock. */
static pid_t lock_holder(const char *path, int how, const char *done)
{
    int ready[2];
    cr_assert_eq(pipe(ready), 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int fd = open(path, O_RDWR | O_CREAT, 0666);
        if (fd < 0 || flock(fd, how) != 0)
            _exit(1);
        (void)!write(ready[1], "x", 1);
        nanosleep(&(struct timespec){0, 500000000L}, NULL);
        int m = open(done, O_WRONLY | O_CREAT, 0666);
        _exit(m < 0);   /* the lock goes with the process, after the file is there */
    }
    close(ready[1]);
    char x;
    cr_assert_eq(read(ready[0], &x, 1), 1, "the other process took its lock");
    close(ready[0]);
    return pid;
}


/* How another process finds a lock file now: "ex" where it could take it
 * exclusively at once, "sh" shared, "-" neither. */
static const char *lock_state(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT, 0666);
    cr_assert(fd >= 0, "%s", path);
    pid_t pid = fork();   /* another open file description: as another process would */
    cr_assert(pid >= 0);
    if (pid == 0) {
        int own = open(path, O_RDWR);
        _exit(flock(own, LOCK_EX | LOCK_NB) == 0 ? 0 : flock(own, LOCK_SH | LOCK_NB) == 0 ? 1 : 2);
    }
    int ws = 0;
    waitpid(pid, &ws, 0);
    close(fd);
    return WEXITSTATUS(ws) == 0 ? "ex" : WEXITSTATUS(ws) == 1 ? "sh" : "-";
}

/* A folder of lock files for one test (its $TMPDIR), and the paths of a
 * GPU's gate and use files there, and of a file a helper process makes. */
typedef struct turn_dir {
    char dir[32], gate[200], use[200], done[128];
} turn_dir;

static void turn_dir_make(turn_dir *t, const char *uuid)
{
    snprintf(t->dir, sizeof t->dir, "/tmp/cml-gpu-turn-XXXXXX");
    cr_assert_not_null(mkdtemp(t->dir));
    snprintf(t->gate, sizeof t->gate, "%s/cml-gpu-%s.gate", t->dir, uuid);
    snprintf(t->use, sizeof t->use, "%s/cml-gpu-%s.use", t->dir, uuid);
    snprintf(t->done, sizeof t->done, "%s/let-go", t->dir);
}

static void turn_dir_remove(turn_dir *t)
{
    unsetenv("TMPDIR");
    unlink(t->done);
    unlink(t->use);
    unlink(t->gate);
    rmdir(t->dir);
}

Test(gpu_turn, a_uuid_is_written_as_cuda_and_the_slots_write_it)
{
    const unsigned char b[16] = {0x0a, 0x1b, 0x2c, 0x3d, 0, 0, 0x11, 0x11, 0x22, 0x22, 0x33, 0x33, 0x44, 0x44, 0x55, 0xff};
    char t[64];
    cml_gpu_uuid_text(b, t, sizeof t);
    cr_expect_str_eq(t, "GPU-0a1b2c3d-0000-1111-2222-3333444455ff");
}

/* A process that would share the GPU while another has it alone waits at
 * the gate until that one lets go; with CML_GPU_HELD=1 (inside a process
 * that holds it) it takes nothing. */
Test(gpu_turn, sharing_waits_while_another_has_the_gpu_alone)
{
    const char *uuid = "GPU-00000000-0000-0000-0000-0000000000bb";
    turn_dir t;
    turn_dir_make(&t, uuid);
    const char *gate = t.gate, *use = t.use, *done = t.done, *dir = t.dir;
    /* wants it alone: the gate held, as while it waits for the `.use` file, for 0.5 s */
    pid_t alone = lock_holder(gate, LOCK_EX, done);
    cr_assert_eq(setenv("TMPDIR", dir, 1), 0);
    cr_assert_eq(setenv("CML_GPU_HELD", "1", 1), 0);
    cml_gpu_share(uuid);   /* inside one that holds it: nothing taken (and no wait: it returns) */
    cr_expect_str_eq(cml_gpu_shared(), "");
    cr_expect_str_eq(lock_state(use), "ex", "no share taken");
    unsetenv("CML_GPU_HELD");
    cml_gpu_share(uuid);
    cr_expect(access(done, F_OK) == 0, "shared while another had the GPU alone");
    cr_expect_str_eq(cml_gpu_shared(), uuid);
    cr_expect_str_eq(lock_state(use), "sh");
    cr_expect_str_eq(lock_state(gate), "ex", "the gate is taken only for the moment of sharing");
    int ws = 0;
    waitpid(alone, &ws, 0);
    cr_expect(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    turn_dir_remove(&t);
}

/* Alone: waits for a process that shares the GPU to end, keeps new ones
 * out (the gate) while it holds it, and lets both files go after. */
Test(gpu_turn, alone_waits_for_those_sharing_and_keeps_new_ones_out)
{
    const char *uuid = "GPU-00000000-0000-0000-0000-0000000000cc";
    turn_dir t;
    turn_dir_make(&t, uuid);
    const char *gate = t.gate, *use = t.use, *done = t.done, *dir = t.dir;
    cr_assert_eq(setenv("TMPDIR", dir, 1), 0);
    pid_t other = lock_holder(use, LOCK_SH, done);   /* shares the GPU, as a runner does */
    cml_gpu_alone_hold h;
    char why[400] = "";
    cr_assert_eq(cml_gpu_alone(uuid, &h, why, sizeof why), 1, "%s", why);
    cr_expect(access(done, F_OK) == 0, "had the GPU alone while another process shared it");
    cr_expect_str_eq(lock_state(gate), "-", "new processes wait at the gate");
    cr_expect_str_eq(lock_state(use), "-");
    cml_gpu_alone_end(&h);
    cr_expect_str_eq(lock_state(gate), "ex");
    cr_expect_str_eq(lock_state(use), "ex");
    int ws = 0;
    waitpid(other, &ws, 0);
    turn_dir_remove(&t);
}

#ifndef CML_CPU_BACKEND
/* A stand-in for ncu (CML_NCU) that writes its arguments to `args` and
 * prints `csv`; its path in script (a temporary file). Given a metric to
 * refuse, a run that asks for it fails as ncu does for a name it does not
 * know, and prints nothing else. */
static void fake_ncu_refusing(char *script, size_t len, const char *args, const char *csv, const char *refuse)
{
    snprintf(script, len, "/tmp/cml-fake-ncu-XXXXXX");
    int fd = mkstemp(script);
    cr_assert(fd >= 0, "a temporary file for the fake ncu");
    FILE *f = fdopen(fd, "w");
    cr_assert_not_null(f);
    fprintf(f, "#!/bin/sh\necho \"$@\" > '%s'\n", args);
    if (refuse != NULL)
        fprintf(f, "case \"$*\" in *%s*) echo '==ERROR== Failed to find metric %s'; exit 1;; esac\n", refuse,
                refuse);
    fprintf(f, "cat <<'CSV'\n%sCSV\n", csv);
    fclose(f);
    cr_assert_eq(chmod(script, 0700), 0);
    cr_assert_eq(setenv("CML_NCU", script, 1), 0);
}

static void fake_ncu(char *script, size_t len, const char *args, const char *csv)
{
    fake_ncu_refusing(script, len, args, csv, NULL);
}

Test(ncu, says_why_when_ncu_is_missing)
{
    const char *metrics[] = {CML_NCU_SHARED_LD_CONFLICTS};
    const char *args[] = {"--check-only", NULL};
    cml_ncu_counts c;
    cr_assert_eq(setenv("CML_NCU", "/nonexistent/ncu", 1), 0);
    cr_expect_eq(cml_ncu_collect("/bin/true", args, metrics, 1, NULL, &c), 0);
    cr_expect_eq(c.available, 0);
    cr_expect(strstr(c.reason, "was not found") != NULL, "reason: %s", c.reason);
    unsetenv("CML_NCU");
}

/* ncu that reported an error after some launches (seen on an H200: two
 * ncu runs on one GPU at once) measured nothing: a launch that is missing
 * from its rows must not read as one that never ran. */
Test(ncu, a_run_that_failed_part_way_measured_nothing_and_says_why)
{
    char script[64], args_file[] = "/tmp/cml-fake-ncu-args-XXXXXX";
    int fd = mkstemp(args_file);
    cr_assert(fd >= 0);
    close(fd);
    const char *metrics[] = {CML_NCU_GLOBAL_LD_REQUESTS, CML_NCU_GLOBAL_LD_SECTORS, CML_NCU_GLOBAL_ST_REQUESTS,
                             CML_NCU_GLOBAL_ST_SECTORS};
    static char csv[4096];
    snprintf(csv, sizeof csv, "%s==ERROR== An error was reported by the counter measurement library:\n"
                              "==ERROR== LaunchFailed\n==PROF== Trying to shutdown target application\n",
             strstr(ncu_sectors_text, "\"ID\""));
    fake_ncu(script, sizeof script, args_file, csv);
    const char *args[] = {"--check-only", NULL};
    cml_ncu_counts c;
    cr_expect_eq(cml_ncu_collect("/bin/true", args, metrics, 4, NULL, &c), 0);
    cr_expect_eq(c.available, 0);
    cr_expect_eq(c.nkernels, 0, "no launch is given from a failed run: %d", c.nkernels);
    cr_expect(strstr(c.reason, "ncu failed after profiling 1 launch (An error was reported by the counter "
                               "measurement library: LaunchFailed; exit status 0)") != NULL,
              "reason: %s", c.reason);
    /* the rows alone, from a run that exited non-zero without a word */
    unlink(script);
    fake_ncu(script, sizeof script, args_file, strstr(ncu_sectors_text, "\"ID\""));
    FILE *f = fopen(script, "a");
    cr_assert_not_null(f);
    fprintf(f, "exit 9\n");
    fclose(f);
    cr_expect_eq(cml_ncu_collect("/bin/true", args, metrics, 4, NULL, &c), 0);
    cr_expect(strstr(c.reason, "ncu failed after profiling 1 launch (it printed no error; exit status 9)") != NULL,
              "reason: %s", c.reason);
    unlink(args_file);
    unlink(script);
    unsetenv("CML_NCU");
}

/* An ncu run has the GPU alone among the kit's processes (cml_gpu_turn.h):
 * it waits for another process that shares the GPU to end (the stand-in
 * ncu fails where that one's file is not there yet: a run that did not
 * wait), tells the program it profiles that the GPU is held
 * (CML_GPU_HELD=1), and this process shares the GPU again after. */
Test(ncu, a_run_has_the_gpu_alone_among_the_kits_processes)
{
    const char *uuid = "GPU-00000000-0000-0000-0000-0000000000aa";
    turn_dir t;
    turn_dir_make(&t, uuid);
    const char *gate = t.gate, *use = t.use, *done = t.done, *dir = t.dir;
    char script[64], args_file[] = "/tmp/cml-fake-ncu-args-XXXXXX";
    int afd = mkstemp(args_file);
    cr_assert(afd >= 0);
    close(afd);
    static char csv[4096];
    snprintf(csv, sizeof csv, "%s", strstr(ncu_sectors_text, "\"ID\""));
    fake_ncu(script, sizeof script, args_file, csv);
    FILE *f = fopen(script, "r+");  /* the checks go first: after the shebang */
    cr_assert_not_null(f);
    static char body[8192];
    size_t n = fread(body, 1, sizeof body - 1, f);
    body[n] = '\0';
    rewind(f);
    fprintf(f, "#!/bin/sh\n[ -e '%s' ] || { echo '==ERROR== ran while another process shared the GPU'; exit 3; }\n"
               "[ \"$CML_GPU_HELD\" = 1 ] || { echo '==ERROR== CML_GPU_HELD not set'; exit 4; }\n%s",
            done, strchr(body, '\n') + 1);
    fclose(f);
    cr_assert_eq(setenv("TMPDIR", dir, 1), 0);
    cml_gpu_share(uuid);   /* as this runner's probe does */
    cr_expect_str_eq(cml_gpu_shared(), uuid);
    cr_expect_str_eq(lock_state(use), "sh");
    pid_t other = lock_holder(use, LOCK_SH, done);   /* shares the GPU, as a runner does */
    const char *metrics[] = {CML_NCU_GLOBAL_LD_REQUESTS, CML_NCU_GLOBAL_LD_SECTORS, CML_NCU_GLOBAL_ST_REQUESTS,
                             CML_NCU_GLOBAL_ST_SECTORS};
    const char *args[] = {"--check-only", NULL};
    cml_ncu_counts c;
    int got = cml_ncu_collect("/bin/true", args, metrics, 4, NULL, &c);
    int ws = 0;
    waitpid(other, &ws, 0);
    cr_expect(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "the other process ran");
    cr_expect_eq(got, 1, "the run waited for the other process, then measured: %s", c.reason);
    cr_expect_eq(c.nkernels, 1);
    cr_expect(getenv("CML_GPU_HELD") == NULL, "CML_GPU_HELD is the profiled program's alone");
    cr_expect_str_eq(lock_state(use), "sh", "this process shares the GPU again");
    cr_expect_str_eq(lock_state(gate), "ex", "and holds no gate");
    turn_dir_remove(&t);
    unlink(args_file);
    unlink(script);
    unsetenv("CML_NCU");
}
#else
/* On the CPU path the counts come from the runtime's bank lines on stderr
 * (here printed by a shell standing in for the runner). */
Test(ncu, reads_the_cpu_paths_bank_lines_per_launch_with_the_filter)
{
    const char *metrics[] = {CML_NCU_SHARED_ST_CONFLICTS, CML_NCU_SHARED_LD_CONFLICTS, "sm__cycles_elapsed.avg"};
    const char *args[] = {"-c",
                          "echo 'cml-cpu banks: launch abt_naive_kernel ld conflicts=31744 st conflicts=7' >&2; "
                          "echo 'cml-cpu banks: launch cml_fill32_kernel ld conflicts=5 st conflicts=5' >&2; "
                          "echo 'cml-cpu banks: launch abt_padded_kernel ld conflicts=0 st conflicts=3' >&2; "
                          "echo 'cml-cpu banks: abt_naive_kernel total ld conflicts=31744 st conflicts=7' >&2",
                          NULL};
    cml_ncu_counts c;
    cr_assert_eq(cml_ncu_collect("/bin/sh", args, metrics, 3, "regex:^abt_", &c), 1, "reason: %s", c.reason);
    cr_assert_eq(c.nkernels, 2, "two launches match ^abt_, got %d", c.nkernels);
    cr_expect_str_eq(c.kernel[0], "abt_naive_kernel");
    cr_expect_str_eq(c.kernel[1], "abt_padded_kernel");
    cr_expect(c.value[0][0] == 7.0 && c.value[0][1] == 31744.0, "launch 1: st %g ld %g", c.value[0][0],
              c.value[0][1]);
    cr_expect(c.value[1][0] == 3.0 && c.value[1][1] == 0.0, "launch 2: st %g ld %g", c.value[1][0], c.value[1][1]);
    cr_expect(c.value[0][2] == -1.0, "a metric the CPU path does not count is -1, never 0: got %g", c.value[0][2]);
}

Test(ncu, sums_a_steps_kernel_totals_when_there_are_no_launch_lines)
{
    const char *metrics[] = {CML_NCU_SHARED_LD_CONFLICTS};
    const char *args[] = {"-c",
                          "echo 'cml-cpu banks: tile_kernel<plain> total ld conflicts=100 st conflicts=0' >&2; "
                          "echo 'cml-cpu banks: tile_kernel<padded> total ld conflicts=20 st conflicts=0' >&2; "
                          "echo 'cml-cpu banks: cml_fill32_kernel total ld conflicts=9 st conflicts=0' >&2",
                          NULL};
    cml_ncu_counts c;
    cr_assert_eq(cml_ncu_collect("/bin/sh", args, metrics, 1, "regex:^tile_kernel", &c), 1, "reason: %s", c.reason);
    cr_assert_eq(c.nkernels, 1, "one run is one launch, got %d", c.nkernels);
    cr_expect(c.value[0][0] == 120.0, "the matching kernels' totals summed: got %g", c.value[0][0]);
}

Test(ncu, says_why_when_the_cpu_path_reports_no_launch)
{
    const char *metrics[] = {CML_NCU_SHARED_LD_CONFLICTS};
    const char *args[] = {"--check-only", NULL};
    cml_ncu_counts c;
    cr_expect_eq(cml_ncu_collect("/bin/true", args, metrics, 1, NULL, &c), 0);
    cr_expect_eq(c.available, 0);
    cr_expect(strstr(c.reason, "reported no launch") != NULL, "reason: %s", c.reason);
}

/* The sector counts' lines: one launch a line, the kit's own kernels left to
 * the filter, and the source lines at exit (path left out). */
Test(ncu, reads_the_cpu_paths_sector_lines_per_launch_and_source_line)
{
    const char *args[] = {
        "-c",
        "echo 'cml-cpu sectors: launch cml_fill32_kernel ld requests=0 sectors=0 ideal=0 st requests=9 sectors=36 "
        "ideal=36' >&2; "
        "echo 'cml-cpu sectors: launch reduce_kernel3<int> ld requests=31251 sectors=125001 ideal=125001 st "
        "requests=1954 sectors=1954 ideal=1954' >&2; "
        "echo 'cml-cpu sectors: launch reduce_kernel3<int> ld requests=62 sectors=245 ideal=245 st requests=4 "
        "sectors=4 ideal=4' >&2; "
        "echo 'cml-cpu sectors: reduce_kernel3<int> /kit/solutions/04_reduction/reduction.cu:131 ld requests=31313 "
        "sectors=125246 ideal=125246 sectors/request=4.00 ideal/request=4.00' >&2; "
        "echo 'cml-cpu sectors: reduce_kernel3<int> total ld requests=31313 sectors=125246 ideal=125246 st "
        "requests=1958 sectors=1958 ideal=1958' >&2",
        NULL};
    cml_ncu_counts c;
    cr_assert_eq(cml_ncu_collect("/bin/sh", args, sector_metrics, 4, "regex:^reduce_", &c), 1, "reason: %s",
                 c.reason);
    cr_assert_eq(c.nkernels, 2, "two launches of reduce_kernel3, got %d", c.nkernels);
    cr_expect_str_eq(c.kernel[1], "reduce_kernel3<int>");
    const double want[2][4] = {{31251, 125001, 1954, 1954}, {62, 245, 4, 4}};
    for (int k = 0; k < 2; ++k)
        for (int m = 0; m < 4; ++m)
            cr_expect(c.value[k][m] == want[k][m], "launch %d, %s: got %g, want %g", k + 1, sector_metrics[m],
                      c.value[k][m], want[k][m]);
    cr_assert_eq(c.nlines, 1, "one source line (the total is none), got %d", c.nlines);
    cr_expect_str_eq(c.line[0].where, "reduction.cu:131");
    cr_expect(c.line[0].store == 0 && c.line[0].requests == 31313 && c.line[0].sectors == 125246 &&
                  c.line[0].ideal == 125246,
              "the line's counts: %d %g %g %g", c.line[0].store, c.line[0].requests, c.line[0].sectors,
              c.line[0].ideal);
}

/* Both kinds at once (the runners' --sectors): one run under
 * CML_CPU_CHECK=sectors,banks, each launch's bank line paired with its
 * sector line in order; a launch without a bank line keeps -1 there. */
Test(ncu, counts_bank_conflicts_and_sectors_in_one_run_paired_per_launch)
{
    const char *metrics[] = {CML_NCU_GLOBAL_LD_SECTORS, CML_NCU_SHARED_LD_CONFLICTS, CML_NCU_SHARED_ST_CONFLICTS};
    const char *args[] = {
        "-c",
        "case \"$CML_CPU_CHECK\" in sectors,banks) ;; *) echo \"wrong check: $CML_CPU_CHECK\" >&2; exit 1;; esac; "
        "echo 'cml-cpu sectors: launch tile_kernel ld requests=4 sectors=16 ideal=16 st requests=4 sectors=16 "
        "ideal=16' >&2; "
        "echo 'cml-cpu banks: launch tile_kernel ld conflicts=124 st conflicts=0' >&2; "
        "echo 'cml-cpu sectors: launch padded_kernel ld requests=4 sectors=20 ideal=16 st requests=0 sectors=0 "
        "ideal=0' >&2; "
        "echo 'cml-cpu banks: launch padded_kernel ld conflicts=0 st conflicts=3' >&2; "
        "echo 'cml-cpu sectors: launch copy_kernel ld requests=4 sectors=16 ideal=16 st requests=4 sectors=16 "
        "ideal=16' >&2",
        NULL};
    cml_ncu_counts c;
    cr_assert_eq(cml_ncu_collect("/bin/sh", args, metrics, 3, NULL, &c), 1, "reason: %s", c.reason);
    cr_assert_eq(c.nkernels, 3, "three launches, got %d", c.nkernels);
    const double want[3][3] = {{16, 124, 0}, {20, 0, 3}, {16, -1, -1}};
    for (int k = 0; k < 3; ++k)
        for (int m = 0; m < 3; ++m)
            cr_expect(c.value[k][m] == want[k][m], "launch %d (%s), %s: got %g, want %g", k + 1, c.kernel[k],
                      metrics[m], c.value[k][m], want[k][m]);
}

Test(ncu, says_so_when_the_cpu_path_has_no_bank_model)
{
    const char *metrics[] = {CML_NCU_SHARED_LD_CONFLICTS};
    const char *args[] = {"-c", "echo 'cml-cpu banks: no bank model in this build (why)' >&2", NULL};
    cml_ncu_counts c;
    cr_expect_eq(cml_ncu_collect("/bin/sh", args, metrics, 1, NULL, &c), 0);
    cr_expect_eq(c.available, 0, "no model: no counts, not 0 conflicts");
    cr_expect_str_eq(c.reason, "no bank model in this build (why)");
}
#endif

Test(report, markdown_has_a_note_column_and_the_extra_text_json_the_extra_value)
{
    cml_report r = sample_report();
    snprintf(r.rows[0].note, sizeof r.rows[0].note, "a|b");
    r.extra_markdown = "| pattern | model |\n|---|---:|\n| stride_2 | 2 |\n";
    r.extra_json = "{\"patterns\": [1, 2]}";
    char *s = written_page(&r);
    cr_expect(strstr(s, "| of max | note |\n") != NULL, "%s", s);
    cr_expect(strstr(s, "| 25% | a\\|b |\n") != NULL, "a '|' in a note is escaped: %s", s);
    cr_expect(strstr(s, "| - | - | - | expected 5, got 4 |\n") != NULL, "%s", s);
    cr_expect(strstr(s, "\n| stride_2 | 2 |\n") != NULL, "%s", s);
    FILE *j = tmpfile();
    cr_assert(j != NULL);
    cml_report_print_json(&r, j);
    s = read_all(j);
    fclose(j);
    cr_expect(strstr(s, "], \"extra\": {\"patterns\": [1, 2]}}\n") != NULL, "%s", s);
}

/* ---------------------------------------------------------------- steps */

static void write_text(char *path, const char *text)
{
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
}

Test(steps, the_opening_comment_must_list_exactly_the_table)
{
    static const int nums[] = {1, 2};
    static const char *const idents[] = {"naive", "tiled"};
    char good[] = "/tmp/cml_stepsXXXXXX", missing[] = "/tmp/cml_stepsXXXXXX", extra[] = "/tmp/cml_stepsXXXXXX";
    write_text(good, "/* Lab\n *   1 naive  one\n *   2 tiled  two\n */\nint x;\n");
    write_text(missing, "/* Lab\n *   1 naive  one\n */\n");
    write_text(extra, "/* Lab\n *   1 naive  one\n *   2 tiled  two\n *   3 fast  three\n */\n");
    char msg[1024];
    cr_expect_eq(cml_check_step_comment(good, nums, idents, 2, msg, sizeof msg), 0, "%s", msg);
    cr_expect_eq(cml_check_step_comment(missing, nums, idents, 2, msg, sizeof msg), 2, "%s", msg);
    cr_expect(strstr(msg, "no line \" *   2 tiled ...\"") != NULL, "%s", msg);
    cr_expect_eq(cml_check_step_comment(extra, nums, idents, 2, msg, sizeof msg), 1, "%s", msg);
    cr_expect(strstr(msg, "lists 3 steps, the table has 2") != NULL, "%s", msg);
    cr_expect_eq(cml_check_step_comment("/nonexistent/file.cu", nums, idents, 2, msg, sizeof msg), 1);
    unlink(good);
    unlink(missing);
    unlink(extra);
}

/* ---------------------------------------------------------------- lab runner */

/* A lab of three steps: step 1 on the host (a model), 2 and 3 on the GPU;
 * step 3 gives a wrong answer. The probe is a stand-in (gpu_present). */
static int gpu_present;
static int checked[4];

static int fake_probe(cml_device_info *info, char *reason, size_t len)
{
    memset(info, 0, sizeof *info);
    if (gpu_present == CML_PROBE_NO_GPU)
        snprintf(reason, len, "no CUDA device: a test without one");
    if (gpu_present == CML_PROBE_FAILED)
        snprintf(reason, len, "the GPU is not usable: cudaMalloc failed: cudaErrorMemoryAllocation (out of memory)");
    return gpu_present;
}

static int fake_host_part(cml_lab_run *r)
{
    if (r->args.check_only || r->counters || r->args.json)
        return 0;
    printf("MODEL TABLE, ");  /* no newline: a row still being written */
    printf("last row\n");
    return 1;
}

static char calls[64];  /* the order of the callbacks: p2 l2 v2 ... */

static void called(const char *what, int step)
{
    snprintf(calls + strlen(calls), sizeof calls - strlen(calls), "%s%d ", what, step);
}

typedef struct {
    int size;  /* --size N */
} fake_data;

static int fake_option(cml_lab_run *r, const char *flag, const char *value)
{
    if (strcmp(flag, "--size") != 0 || value == NULL)
        return 0;
    ((fake_data *)r->data)->size = atoi(value);
    return 2;
}

static int fake_prepare(cml_lab_run *r)
{
    snprintf(r->rep.params, sizeof r->rep.params, "fake data");
    called("s", ((fake_data *)r->data)->size);
    return CML_EXIT_OK;
}

static cudaError_t fake_poison(cml_lab_run *r, int step)
{
    (void)r;
    called("p", step);
    return cudaSuccess;
}

static cudaError_t fake_launch(cml_lab_run *r, int step)
{
    (void)r;
    called("l", step);
    return cudaSuccess;
}

static int fake_check(cml_lab_run *r, int step, cml_row *row)
{
    (void)r;
    called("v", step);
    checked[step] = 1;
    row->status = step == 3 ? CML_ROW_WRONG : CML_ROW_OK;
    if (step == 3)
        snprintf(row->note, sizeof row->note, "expected 1, got 2");
    return step != 3;
}

static int fake_counters(cml_lab_run *r, cml_lab_counters *c)
{
    c->available = 1;
    cml_lab_counters_add(c, r, 2, "fake_kernel", 1024.0);
    return CML_EXIT_OK;
}

/* The bytes a step must move: 1 MB a unit of --size. */
static double fake_work(const cml_lab_run *r, int step)
{
    (void)step;
    return 1e6 * ((const fake_data *)r->data)->size;
}

static const cml_lab_step fake_steps[] = {
    {1, "model", "model.c", "the host part"}, {2, "gpu_ok", "k.cu", "right"}, {3, "gpu_wrong", "k.cu", "wrong"}};

static const cml_lab fake_lab = {
    .name = "99_fake", .prog = "fake_run", .title = "a fake lab", .unit = "GB/s",
    .steps = fake_steps, .nsteps = 3, .first_gpu_step = 2, .default_repeat = 5,
    .usage = "[--step S] | --help", .about = "A fake lab.", .step_help = "steps",
    .repeat_help = "runs", .check_only_help = "check only",
    .counters_help = "counters", .no_counters_help = "no counters",
    .host_part = fake_host_part, .host_part_name = "model", .host_part_hint = "`fake_run --model`",
    .option = fake_option, .prepare = fake_prepare, .poison = fake_poison, .launch = fake_launch,
    .verify = fake_check, .work = fake_work,
    .counters = fake_counters, .counters_metric = "fake__metric.sum",
    .probe = fake_probe,
};

/* Output capture: stdout and stderr both into one file, stdout fully
 * buffered (as into a pipe, where the order of the two can go wrong). */
static FILE *captured;
static int saved_out, saved_err;

static void capture_begin(void)
{
    static char buf[BUFSIZ];
    fflush(stdout);
    fflush(stderr);
    captured = tmpfile();
    cr_assert(captured != NULL);
    saved_out = dup(1);
    saved_err = dup(2);
    dup2(fileno(captured), 1);
    dup2(fileno(captured), 2);
    setvbuf(stdout, buf, _IOFBF, sizeof buf);
}

static void capture_end(char *out, size_t len)
{
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, 1);
    dup2(saved_err, 2);
    close(saved_out);
    close(saved_err);
    setvbuf(stdout, NULL, _IOLBF, 0);
    rewind(captured);
    size_t n = fread(out, 1, len - 1, captured);
    out[n] = '\0';
    fclose(captured);
}

/* Runs `fake_run ARGS` (words split at spaces) under capture; returns the
 * exit status, the text in out. */
static int run_fake(char *out, size_t len, const char *args)
{
    static char words[256];
    static fake_data data;
    char *argv[32] = {words};
    int argc = 1;
    snprintf(words, sizeof words, "fake_run%s%s", args[0] ? " " : "", args);
    for (char *p = strchr(words, ' '); p != NULL && argc < 31; p = strchr(p + 1, ' ')) {
        *p = '\0';
        argv[argc++] = p + 1;
    }
    argv[argc] = NULL;
    data.size = 7;   /* main()'s default */
    capture_begin();
    int rc = cml_lab_main(&fake_lab, &data, sizeof data, argc, argv);
    capture_end(out, len);
    return rc;
}

Test(lab_runner, without_a_gpu_prints_the_model_before_the_no_gpu_lines_it_refers_to)
{
    static char out[8192];
    const char *argv = "";  /* every step */
    gpu_present = 0;
    int rc = run_fake(out, sizeof out, argv);
    cr_expect_eq(rc, CML_EXIT_NO_GPU, "exit %d, expected 77:\n%s", rc, out);
    const char *table = strstr(out, "MODEL TABLE, last row\n");
    const char *why = strstr(out, "fake_run: no CUDA device: a test without one\n");
    const char *above = strstr(out, "fake_run: the measurements need a GPU; the model above");
    cr_assert(table && why && above, "missing lines:\n%s", out);
    cr_expect(table < why && why < above, "the model table must come first, whole, then the reason:\n%s", out);
    /* and where the kernels run without a GPU: the CPU path's runner */
    cr_expect(strstr(out, "without a GPU, the CPU path runs your kernels") != NULL &&
                  strstr(out, "./build/fake_run_cpu --help") != NULL,
              "no pointer to the CPU path's runner:\n%s", out);
}

Test(lab_runner, a_gpu_that_fails_its_probe_is_an_error_not_no_gpu)
{
    static char out[8192];
    gpu_present = CML_PROBE_FAILED;   /* a GPU full of other work: out of memory */
    int rc = run_fake(out, sizeof out, "");
    cr_expect_eq(rc, CML_EXIT_FAIL, "exit %d, expected 1 (never 77, which skips):\n%s", rc, out);
    cr_expect(strstr(out, "fake_run: the GPU is not usable: cudaMalloc failed: cudaErrorMemoryAllocation") != NULL,
              "the reason and the CUDA error's name:\n%s", out);
    cr_expect(strstr(out, "no CUDA device") == NULL && strstr(out, "need a GPU") == NULL, "%s", out);
}

Test(lab_runner, never_mentions_the_model_above_when_none_was_printed)
{
    static char out[8192];
    const char *argv = "--counters";
    gpu_present = 0;
    int rc = run_fake(out, sizeof out, argv);
    cr_expect_eq(rc, CML_EXIT_NO_GPU);
    cr_expect(strstr(out, "MODEL TABLE") == NULL, "--counters prints no model:\n%s", out);
    cr_expect(strstr(out, "above") == NULL, "no model was printed, yet a line refers to it:\n%s", out);
    cr_expect(strstr(out, "`fake_run --model` and the host tests") != NULL, "%s", out);
}

Test(lab_runner, host_steps_alone_need_no_gpu)
{
    static char out[8192];
    const char *argv = "--step 1";
    gpu_present = 0;
    int rc = run_fake(out, sizeof out, argv);
    cr_expect_eq(rc, CML_EXIT_OK, "%s", out);
    cr_expect(strstr(out, "MODEL TABLE") != NULL && strstr(out, "no CUDA device") == NULL, "%s", out);
}

Test(lab_runner, counters_json_names_the_metric_and_each_step_or_why_not)
{
    static char out[8192];
    static const struct {
        int gpu, rc;
        const char *json;
    } cases[] = {
        {0, CML_EXIT_NO_GPU,
         "{\"lab\": \"99_fake\", \"metric\": \"fake__metric.sum\", \"available\": false, "
         "\"reason\": \"no CUDA device: a test without one\", \"steps\": []}"},
        {1, CML_EXIT_OK,
         "{\"lab\": \"99_fake\", \"metric\": \"fake__metric.sum\", \"available\": true, \"reason\": \"\", "
         "\"steps\": [{\"step\": 2, \"ident\": \"gpu_ok\", \"kernels\": \"fake_kernel\", \"value\": 1024}]}"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        gpu_present = cases[k].gpu;
        int rc = run_fake(out, sizeof out, "--counters --json");
        cr_expect_eq(rc, cases[k].rc, "gpu %d: exit %d\n%s", cases[k].gpu, rc, out);
        cr_expect(strstr(out, cases[k].json) != NULL, "gpu %d: expected %s in\n%s", cases[k].gpu, cases[k].json,
                  out);
    }
}

#ifndef CML_CPU_BACKEND
/* --sectors: each step checked, then measured alone under ncu (here a
 * stand-in printing a launch of the kit's poison kernel and one of the
 * lab's) with the lab's own options; a wrong step is not measured. */
Test(lab_runner, sectors_measures_each_checked_step_under_ncu_with_the_labs_options)
{
    static char out[8192];
    char script[64], args_file[] = "/tmp/cml-fake-ncu-args-XXXXXX";
    int fd = mkstemp(args_file);
    cr_assert(fd >= 0);
    close(fd);
    static char csv[4096];
    snprintf(csv, sizeof csv, "%s", strstr(ncu_sectors_text, "\"ID\"")); /* the CSV without ncu's lines */
    static const char poison[] =
        "\"3\",\"7\",\"fake_run\",\"h\",\"cml_fill32_kernel(unsigned int *, unsigned long, unsigned int)\",\"1\","
        "\"7\",\"(256, 1, 1)\",\"(4, 1, 1)\",\"0\",\"9.0\",\"m\",\"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum\","
        "\"\",\"36\"\n";
    strncat(csv, poison, sizeof csv - strlen(csv) - 1);
    static const char conflicts[] =  /* the load's bank conflicts; none for the stores: not measured */
        "\"12\",\"1619\",\"reduction_run_ref\",\"127.0.0.1\",\"void reduce_kernel3<int>(const T1 *, T1 *, unsigned long)\","
        "\"1\",\"7\",\"(512, 1, 1)\",\"(1954, 1, 1)\",\"0\",\"9.0\",\"Command line profiler metrics\","
        "\"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum\",\"\",\"1,084\"\n";
    char *second = strstr(csv, "\"12\""); /* among the launch's rows (one ID, one launch) */
    cr_assert_not_null(second);
    static char rest[4096];
    snprintf(rest, sizeof rest, "%s", second);
    snprintf(second, sizeof csv - (size_t)(second - csv), "%s%s", conflicts, rest);
    fake_ncu(script, sizeof script, args_file, csv);
    gpu_present = 1;
    int rc = run_fake(out, sizeof out, "--sectors --size 9");
    cr_expect_eq(rc, CML_EXIT_FAIL, "step 3 is wrong: exit 1\n%s", out);
    cr_expect(strstr(out, "step 2 gpu_ok: reduce_kernel3<int>: ld 31,251 requests, 125,001 sectors, 4.00 per "
                          "request; st 1,954 requests, 1,954 sectors, 1.00 per request; shared-memory bank "
                          "conflicts: ld 1,084, st not measured\n") != NULL,
              "the launch's line:\n%s", out);
    cr_expect(strstr(out, "cml_fill32") == NULL, "the kit's own kernels are left out:\n%s", out);
    cr_expect(strstr(out, "step 3 gpu_wrong: sectors not available: not measured: expected 1, got 2\n") != NULL,
              "%s", out);
    FILE *f = fopen(args_file, "r");
    char given[512] = "";
    cr_assert(f != NULL && fgets(given, sizeof given, f) != NULL, "the fake ncu ran");
    fclose(f);
    cr_expect(strstr(given, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum") != NULL &&
                  strstr(given, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum") != NULL &&
                  strstr(given, "--check-only --step 2 --size 9") != NULL,
              "ncu's arguments: the metrics, then the step alone with the lab's options: %s", given);
    rc = run_fake(out, sizeof out, "--sectors --json --step 2");
    cr_expect_eq(rc, CML_EXIT_OK, "%s", out);
    cr_expect(strstr(out, "{\"step\": 2, \"ident\": \"gpu_ok\", \"kernel\": \"reduce_kernel3<int>\", \"ld_requests\": "
                          "31251, \"ld_sectors\": 125001, \"st_requests\": 1954, \"st_sectors\": 1954, "
                          "\"ld_bank_conflicts\": 1084, \"st_bank_conflicts\": null}") != NULL,
              "the launch in the JSON:\n%s", out);
    cr_expect(strstr(out, "\"emulated\": false") != NULL, "%s", out);
    unlink(args_file);
    unlink(script);
    unsetenv("CML_NCU");
}
#endif

#ifndef CML_CPU_BACKEND
/* What ncu prints for --profile's metrics: two launches of the lab's
 * kernel (in the units ncu scales to without --print-units base) and one
 * of the kit's poison kernel; launch__occupancy_limit_shared_mem has no row,
 * and the fake ncu refuses the imc_miss stall's name as one it does not
 * know. Columns: metric, unit, first launch, second launch. */
static const char *const profile_rows[][4] = {
    {"gpu__time_duration.sum", "usecond", "750", "250"},
    {"dram__bytes_read.sum", "Mbyte", "6", "1.5"},
    {"dram__bytes_write.sum", "byte", "2,500,000", "500,000"},
    {"dram__throughput.avg.pct_of_peak_sustained_elapsed", "%", "90", "50"},
    {"lts__t_sector_hit_rate.pct", "%", "40", "40"},
    {"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "sector", "4,000", "1,000"},
    {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", "", "1,000", "250"},
    {"l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum", "sector", "32,000", "8,000"},
    {"l1tex__t_requests_pipe_lsu_mem_global_op_st.sum", "", "1,000", "250"},
    {"sm__warps_active.avg.pct_of_peak_sustained_active", "%", "70", "70"},
    {"sm__maximum_warps_per_active_cycle_pct", "%", "100", "100"},
    {"launch__registers_per_thread", "register/thread", "40", "40"},
    {"launch__occupancy_limit_registers", "block", "3", "3"},
    {"launch__occupancy_limit_warps", "block", "8", "8"},
    {"launch__occupancy_limit_blocks", "block", "32", "32"},
    {"smsp__issue_active.avg.pct_of_peak_sustained_active", "%", "20", "20"},
    {"smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct", "%", "50", "10"},
    {"smsp__warp_issue_stalled_lg_throttle_per_warp_active.pct", "%", "12", "12"},
    {"smsp__warp_issue_stalled_barrier_per_warp_active.pct", "%", "5", "5"},
    {"smsp__warp_issue_stalled_mio_throttle_per_warp_active.pct", "%", "1", "1"},
    {"smsp__warp_issue_stalled_short_scoreboard_per_warp_active.pct", "%", "1", "1"},
    {"smsp__warp_issue_stalled_wait_per_warp_active.pct", "%", "2", "2"},
    {"smsp__warp_issue_stalled_not_selected_per_warp_active.pct", "%", "1", "1"},
    {"smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct", "%", "0", "0"},
    {"smsp__warp_issue_stalled_membar_per_warp_active.pct", "%", "0", "0"},
    {"smsp__warp_issue_stalled_drain_per_warp_active.pct", "%", "1", "1"},
    {"smsp__warp_issue_stalled_dispatch_stall_per_warp_active.pct", "%", "0", "0"},
    {"smsp__warp_issue_stalled_no_instruction_per_warp_active.pct", "%", "1", "1"},
    {"smsp__warp_issue_stalled_sleeping_per_warp_active.pct", "%", "0", "0"},
    {"smsp__warp_issue_stalled_tex_throttle_per_warp_active.pct", "%", "0", "0"},
    {"smsp__warp_issue_stalled_selected_per_warp_active.pct", "%", "60", "60"},
};
#define IMC_MISS "smsp__warp_issue_stalled_imc_miss_per_warp_active.pct"

static void profile_csv(char *csv, size_t len)
{
    static const char *const kernels[3] = {"void fake_kernel<4>(const float *, float *, int)",
                                           "cml_fill32_kernel(unsigned int *, unsigned long, unsigned int)",
                                           "void fake_kernel<4>(const float *, float *, int)"};
    int at = snprintf(csv, len, "\"ID\",\"Process ID\",\"Kernel Name\",\"Metric Name\",\"Metric Unit\",\"Metric "
                                "Value\"\n");
    for (int k = 0; k < 3; ++k)
        for (size_t m = 0; m < sizeof profile_rows / sizeof profile_rows[0]; ++m)
            at += snprintf(csv + at, len - (size_t)at, "\"%d\",\"7\",\"%s\",\"%s\",\"%s\",\"%s\"\n", k + 4, kernels[k],
                           profile_rows[m][0], profile_rows[m][1], profile_rows[m][k == 2 ? 3 : 2]);
    cr_assert((size_t)at < len, "the CSV fits");
}

/* A file's text, for the assertions (static: one at a time). */
static const char *file_text(const char *path)
{
    static char text[16384];
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s was written", path);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* --profile: the step checked, then measured under ncu with the lab's own
 * options; launches of one kernel summed or averaged, the kit's left out;
 * DRAM bytes against the step's work(); a metric this ncu refuses left out
 * and named; a metric without a value said so, never 0. */
Test(lab_runner, profile_reads_one_step_under_ncu_and_says_what_each_number_tells)
{
    static char out[32768], csv[65536];
    char script[64], args_file[] = "/tmp/cml-fake-ncu-args-XXXXXX", page[] = "/tmp/cml-profile-XXXXXX";
    int fd = mkstemp(args_file);
    cr_assert(fd >= 0);
    close(fd);
    fd = mkstemp(page);
    cr_assert(fd >= 0);
    close(fd);
    unlink(page);  /* a new page: written whole */
    profile_csv(csv, sizeof csv);
    fake_ncu_refusing(script, sizeof script, args_file, csv, IMC_MISS);
    gpu_present = 1;
    char words[128];
    snprintf(words, sizeof words, "--profile --step 2 --size 10 --markdown %s", page);
    int rc = run_fake(out, sizeof out, words);
    cr_expect_eq(rc, CML_EXIT_OK, "%s", out);
    const char *given = file_text(args_file);
    cr_expect(strstr(given, "--print-units base") != NULL && strstr(given, "--check-only --step 2 --size 10") != NULL,
              "ncu's arguments: base units, the step alone with the lab's options: %s", given);
    cr_expect(strstr(given, "imc_miss") == NULL && strstr(given, "long_scoreboard") != NULL,
              "the refused metric is left out of the second run, the others kept: %s", given);
    cr_expect(strstr(out, "kernel fake_kernel<4> (2 launches)") != NULL, "two launches, one kernel:\n%s", out);
    cr_expect(strstr(out, "cml_fill32") == NULL, "the kit's own kernels are left out:\n%s", out);
    /* summed: 750 us + 250 us; bytes from Mbyte and byte */
    cr_expect(strstr(out, "1.000 ms") != NULL, "time summed over the launches:\n%s", out);
    cr_expect(strstr(out, "7,500,000 B, 3,000,000 B") != NULL, "DRAM bytes summed, in bytes:\n%s", out);
    /* the step's DRAM bytes against work(): 10 x 1 MB at --size 10 */
    char ratio[64];
    snprintf(ratio, sizeof ratio, "%.2f x the ideal", (6e6 + 1.5e6 + 2.5e6 + 0.5e6) / (10 * 1e6));
    cr_expect(strstr(out, ratio) != NULL && strstr(out, "10,500,000 B crossed DRAM; the step must move 10,000,000 B") &&
                  strstr(out, "5 % more bytes than that crossed DRAM") != NULL,
              "the ratio to the ideal (%s):\n%s", ratio, out);
    /* averaged over the launches' time: 90 % for 0.75 ms, 50 % for 0.25 ms */
    char peak[32];
    snprintf(peak, sizeof peak, "%.1f %% of peak", (90 * 0.75 + 50 * 0.25) / 1.0);
    cr_expect(strstr(out, peak) != NULL, "DRAM throughput averaged over time (%s):\n%s", peak, out);
    cr_expect(strstr(out, "4.00 sectors/request (ideal 4)") != NULL &&
                  strstr(out, "32.00 sectors/request (ideal 4)") != NULL && strstr(out, "8.00 x more than") != NULL,
              "sectors per request of loads and stores:\n%s", out);
    const char *s1 = strstr(out, "long_scoreboard 40.0 %"), *s2 = strstr(out, "lg_throttle 12.0 %"),
               *s3 = strstr(out, "barrier 5.0 %");
    cr_expect(s1 && s2 && s3 && s1 < s2 && s2 < s3, "the top three stalls in order, issuing not among them:\n%s", out);
    cr_expect(strstr(out, "selected 60") == NULL, "issuing is no stall:\n%s", out);
    cr_expect(strstr(out, "no value for: imc_miss (a name unknown to this ncu, which said: Failed to find metric "
                          IMC_MISS ")") != NULL,
              "the refused stall is named among those without a value:\n%s", out);
    cr_expect(strstr(out, "ncu gave no value for launch__occupancy_limit_shared_mem") != NULL,
              "a metric without a row is not measured, never 0:\n%s", out);
    const char *md = file_text(page);
    cr_expect(strncmp(md, "# 99_fake on ", 13) == 0 && strstr(md, "What limits step 2 (gpu_ok)") != NULL &&
                  strstr(md, "<!-- profile:begin -->\n") != NULL && strstr(md, "<!-- profile:end -->\n") != NULL,
              "a whole page, its region marked:\n%s", md);
    cr_expect(strstr(md, "`fake_run --profile --step 2 --size 10`") != NULL, "the command on the page:\n%s", md);
    cr_expect(strstr(md, "fake data, seed") != NULL && strstr(md, "median of") == NULL,
              "the data described without the timing's median (a profile is one run):\n%s", md);
    cr_expect(strstr(md, "| stall 1 | long_scoreboard 40.0 % | of the active warps' cycles: waiting for") != NULL &&
                  strstr(md, "| measure | value | what it tells |") != NULL,
              "the table:\n%s", md);

    /* the marked region of an existing file only; the rest kept */
    FILE *f = fopen(page, "w");
    cr_assert_not_null(f);
    fputs("# notes\nbefore\n<!-- profile:begin -->\nold\n<!-- profile:end -->\nafter\n", f);
    fclose(f);
    rc = run_fake(out, sizeof out, words);
    cr_expect_eq(rc, CML_EXIT_OK, "%s", out);
    md = file_text(page);
    static const char kept[] = "# notes\nbefore\n<!-- profile:begin -->\nMeasured on ";
    cr_expect(strncmp(md, kept, sizeof kept - 1) == 0 &&
                  strstr(md, "\nold\n") == NULL && strstr(md, "<!-- profile:end -->\nafter\n") != NULL,
              "the region replaced, the rest kept:\n%s", md);

    rc = run_fake(out, sizeof out, "--profile --step 2 --size 10 --json");
    cr_expect_eq(rc, CML_EXIT_OK, "%s", out);
    cr_expect(strstr(out, "\"ideal_bytes\": 1e+07, \"unknown_metrics\": [\"" IMC_MISS "\"]") != NULL &&
                  strstr(out, "{\"kernel\": \"fake_kernel<4>\", \"launches\": 2, \"metrics\": {"
                              "\"gpu__time_duration.sum\": 1e+06, \"dram__bytes_read.sum\": 7.5e+06") != NULL &&
                  strstr(out, "\"launch__occupancy_limit_shared_mem\": null") != NULL,
              "the JSON:\n%s", out);
    unlink(page);
    unlink(args_file);
    unlink(script);
    unsetenv("CML_NCU");
}

/* A wrong step is never measured, and without ncu no page is written. */
Test(lab_runner, profile_measures_nothing_it_cannot_trust)
{
    static char out[8192];
    char page[] = "/tmp/cml-profile-XXXXXX";
    int fd = mkstemp(page);
    cr_assert(fd >= 0);
    close(fd);
    unlink(page);
    cr_assert_eq(setenv("CML_NCU", "/nonexistent/ncu", 1), 0);
    gpu_present = 1;
    int rc = run_fake(out, sizeof out, "--profile");  /* the last step, 3, gives a wrong result */
    cr_expect_eq(rc, CML_EXIT_FAIL, "%s", out);
    cr_expect(strstr(out, "step 3 gpu_wrong: profile not available: not measured: expected 1, got 2\n") != NULL,
              "%s", out);
    char words[96];
    snprintf(words, sizeof words, "--profile --step 2 --markdown %s", page);
    rc = run_fake(out, sizeof out, words);
    cr_expect_eq(rc, CML_EXIT_FAIL, "%s", out);
    cr_expect(strstr(out, "step 2 gpu_ok: profile not available: Nsight Compute (/nonexistent/ncu) was not found") !=
                  NULL,
              "%s", out);
    cr_expect(access(page, F_OK) != 0, "no page without measurements");
    unsetenv("CML_NCU");
}
#else
Test(lab_runner, profile_refuses_on_the_cpu_path_and_says_what_works_there)
{
    static char out[8192];
    gpu_present = 1;
    int rc = run_fake(out, sizeof out, "--profile --step 2");
    cr_expect_eq(rc, CML_EXIT_USAGE, "%s", out);
    cr_expect(strstr(out, "fake_run: --profile reads Nsight Compute on a GPU; on the CPU path see --sectors and "
                          "--picture\n") != NULL,
              "%s", out);
    cr_expect_str_eq(calls, "", "nothing was run: %s", calls);
}
#endif

Test(lab_runner, profile_goes_alone, .exit_code = 2)
{
    static char out[8192];
    gpu_present = 1;
    run_fake(out, sizeof out, "--profile --sectors");
}

Test(lab_runner, profile_measures_one_step, .exit_code = 2)
{
    static char out[8192];
    gpu_present = 1;
    run_fake(out, sizeof out, "--profile --step 2,3");
}

Test(lab_runner, profile_measures_no_host_step, .exit_code = 2)
{
    static char out[8192];
    gpu_present = 1;
    run_fake(out, sizeof out, "--profile --step 1");
}

Test(lab_runner, sectors_goes_alone, .exit_code = 2)
{
    static char out[8192];
    gpu_present = 1;
    run_fake(out, sizeof out, "--sectors --check-only");
}

Test(lab_runner, check_only_checks_every_chosen_step_and_exits_1_on_a_wrong_one)
{
    static char out[8192];
    const char *argv = "--check-only";
    gpu_present = 1;
    memset(checked, 0, sizeof checked);
    calls[0] = '\0';
    int rc = run_fake(out, sizeof out, argv);
    cr_expect_str_eq(calls, "s7 p2 l2 v2 p3 l3 v3 ", "prepare, then each check is poison, launch, verify, in step order");
    cr_expect_eq(rc, CML_EXIT_FAIL, "%s", out);
    cr_expect(checked[2] && checked[3] && !checked[1], "steps checked: %d %d %d", checked[1], checked[2],
              checked[3]);
    cr_expect(strstr(out, "step 2 gpu_ok           ok\nstep 3 gpu_wrong        WRONG: expected 1, got 2\n") != NULL,
              "%s", out);
    const char *one = "--check-only --step 2";
    cr_expect_eq(run_fake(out, sizeof out, one), CML_EXIT_OK, "%s", out);
}

Test(lab_runner, then_runs_again_in_the_process_each_run_as_if_started_alone)
{
    static char out[8192];
    gpu_present = 1;
    calls[0] = '\0';
    /* the second run gives no --size: main()'s 7, not the first run's 3 */
    int rc = run_fake(out, sizeof out,
                      "--check-only --step 2 --size 3 --then --check-only --step 2 --then --step 3 --check-only");
    cr_expect_str_eq(calls, "s3 p2 l2 v2 s7 p2 l2 v2 s7 p3 l3 v3 ", "each run's data as main() made it");
    cr_expect_eq(rc, CML_EXIT_FAIL, "the third run's wrong step fails the whole:\n%s", out);
    const char *r1 = strstr(out, "run 1 of 3: --check-only --step 2 --size 3\nstep 2 gpu_ok");
    const char *r2 = strstr(out, "run 2 of 3: --check-only --step 2\nstep 2 gpu_ok");
    const char *r3 = strstr(out, "run 3 of 3: --step 3 --check-only\nstep 3 gpu_wrong        WRONG");
    cr_expect(r1 && r2 && r3 && r1 < r2 && r2 < r3, "each run's line, then its check lines, in order:\n%s", out);
    /* a wrong first run does not stop the others; the status is the first that is not 0 */
    calls[0] = '\0';
    rc = run_fake(out, sizeof out, "--check-only --step 3 --then --check-only --step 2");
    cr_expect_eq(rc, CML_EXIT_FAIL, "%s", out);
    cr_expect_str_eq(calls, "s7 p3 l3 v3 s7 p2 l2 v2 ", "%s", out);
    /* one JSON document a process: --json and --then refused, nothing run */
    calls[0] = '\0';
    rc = run_fake(out, sizeof out, "--json --step 2 --then --step 2");
    cr_expect_eq(rc, CML_EXIT_USAGE, "%s", out);
    cr_expect_str_eq(calls, "", "%s", out);
    cr_expect(strstr(out, "fake_run: --json does not go with --then") != NULL, "%s", out);
    /* no GPU ends them all, 77 */
    gpu_present = 0;
    calls[0] = '\0';
    rc = run_fake(out, sizeof out, "--check-only --step 2 --then --check-only --step 2");
    cr_expect_eq(rc, CML_EXIT_NO_GPU, "%s", out);
    cr_expect(strstr(out, "run 2 of 2") == NULL, "a second run after no GPU:\n%s", out);
}

Test(lab_runner, bad_arguments_exit_2, .exit_code = 2)
{
    static char out[8192];
    const char *argv = "--step 4";
    run_fake(out, sizeof out, argv);
}

Test(lab_runner, unknown_arguments_exit_2, .exit_code = 2)
{
    static char out[8192];
    const char *argv = "--frobnicate";
    run_fake(out, sizeof out, argv);
}

Test(lab_runner, say_flushes_the_table_first)
{
    static char out[256];
    cml_lab_run r;
    memset(&r, 0, sizeof r);
    r.args.prog = "x_run";
    capture_begin();
    printf("| a row ");
    cml_lab_say(&r, "a message");
    capture_end(out, sizeof out);
    cr_expect_str_eq(out, "| a row x_run: a message\n");
}

Test(lab_runner, writes_large_counts_with_thousands_separators)
{
    char buf[32];
    cr_expect_str_eq(cml_with_commas(261888.0, buf, sizeof buf), "261,888");
    cr_expect_str_eq(cml_with_commas(4063232.0, buf, sizeof buf), "4,063,232");
    cr_expect_str_eq(cml_with_commas(0.0, buf, sizeof buf), "0");
    cr_expect_str_eq(cml_with_commas(999.0, buf, sizeof buf), "999");
}

Test(buffer, hashes_in_pieces_as_in_one_go)
{
    unsigned char data[1000];
    for (int i = 0; i < 1000; ++i)
        data[i] = (unsigned char)(i * 7 + 3);
    uint64_t whole = cml_hash_bytes(data, sizeof data, 0);
    uint64_t pieces = cml_hash_bytes(data + 300, 700, cml_hash_bytes(data, 300, 0));
    cr_expect_eq(whole, pieces);
    data[999] ^= 1;
    cr_expect_neq(cml_hash_bytes(data, sizeof data, 0), whole, "one changed bit must change the hash");
}

/* cml_spec_outside_write: a write into either guard zone of a spec's output
 * is found and placed (4 guard words each side of 5 output words). */
Test(spec, a_write_into_either_guard_zone_is_found_and_placed)
{
    uint32_t w[4 + 5 + 4];
    char msg[120];
    for (int at = -1; at < 13; ++at) {
        for (int k = 0; k < 13; ++k)
            w[k] = k >= 4 && k < 9 ? 7u : 0xffffffffu;
        if (at >= 0)
            w[at] = 0;
        int hit = cml_spec_outside_write(w, w + 9, 4, "out", msg, sizeof msg);
        cr_expect_eq(hit, at >= 0 && (at < 4 || at >= 9), "a write at word %d", at);
    }
    w[3] = 0;
    cr_assert(cml_spec_outside_write(w, w + 9, 4, "out", msg, sizeof msg));
    cr_expect_str_eq(msg, "a write outside out, 1 floats before out");
    w[0] = 0;
    cr_assert(cml_spec_outside_write(w, w + 9, 4, "out", msg, sizeof msg));
    cr_expect_str_eq(msg, "a write outside out, 4 floats before out");
    for (int k = 0; k < 4; ++k)
        w[k] = 0xffffffffu;
    w[9] = 0;
    cr_assert(cml_spec_outside_write(w, w + 9, 4, "C", msg, sizeof msg));
    cr_expect_str_eq(msg, "a write outside C, 1 floats past C's end");
    w[9] = 0xffffffffu;
    w[12] = 0;
    cr_assert(cml_spec_outside_write(w, w + 9, 4, "C", msg, sizeof msg));
    cr_expect_str_eq(msg, "a write outside C, 4 floats past C's end");
}

/* cml_test_gpu_lock (common/test/criterion_main.c): a lock file of $TMPDIR
 * per name and GPU, open to every user, that another process cannot take
 * while this one holds it. */
Test(gpu_lock, is_a_file_per_name_and_gpu_that_one_process_holds_at_a_time)
{
    char dir[] = "/tmp/cml-gpu-lock-XXXXXX", path[200];
    cr_assert(mkdtemp(dir) != NULL);
    setenv("TMPDIR", dir, 1);
    setenv("CUDA_VISIBLE_DEVICES", "GPU-0123", 1);
    int fd = cml_test_gpu_lock("big-case");
    cr_assert(fd >= 0, "cml_test_gpu_lock: -1");
    snprintf(path, sizeof path, "%s/cml-big-case-GPU-0123.lock", dir);
    struct stat st;
    cr_assert(stat(path, &st) == 0, "no %s", path);
    cr_assert_eq(st.st_mode & 0777, 0666, "the lock file is open to every user: %o", (unsigned)(st.st_mode & 0777));
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {   /* another process: the lock is taken (the child's copy of fd shares it, so open anew) */
        int other = open(path, O_RDWR | O_CLOEXEC);
        _exit(other >= 0 && flock(other, LOCK_EX | LOCK_NB) != 0 ? 0 : 1);
    }
    int status = 0;
    cr_assert(waitpid(pid, &status, 0) == pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "another process took the lock this one holds");
    close(fd);
    unlink(path);
    rmdir(dir);
}

