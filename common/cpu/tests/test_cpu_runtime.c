/* The CPU path's own tests: barriers, warp operations, atomics, the reports
 * (deadlock, out-of-bounds, watchdog, host pointer), the race check, the
 * bank counts (on the kernels in kernels.cu) and the global-memory sector
 * counts (sector_kernels.cu). Reports are checked by their text, including
 * the source line (found by its "mark:" comment). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../src/cml_cpu_internal.h"
#include "kernels.h"
#include "sector_kernels.h"

#define CHECK(call) cr_assert_eq((call), cudaSuccess, "%s failed: %s", #call, cudaGetErrorString(call))

/* "FILE:N" for the line of the file at path that carries "mark:NAME". */
static const char *line_in(const char *path, const char *name, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot read %s", path);
    char text[400], want[64];
    snprintf(want, sizeof want, "mark:%s", name);
    int n = 0, found = 0;
    while (!found && fgets(text, sizeof text, f) != NULL) {
        ++n;
        const char *m = strstr(text, want);
        found = m != NULL && (m[strlen(want)] == '\n' || m[strlen(want)] == '\0' || m[strlen(want)] == ' ');
    }
    fclose(f);
    const char *base = strrchr(path, '/');
    base = base != NULL ? base + 1 : path;
    cr_assert(found, "no line marked %s in %s", want, base);
    snprintf(buf, len, "%s:%d", base, n);
    return buf;
}

/* "kernels.cu:N" for the line of kernels.cu that carries "mark:NAME". */
static const char *line_of(const char *name, char *buf, size_t len)
{
    return line_in(CML_CPU_TEST_KERNELS, name, buf, len);
}

/* Everything the test wrote on stderr so far (stderr redirected). */
static char *captured_stderr(void)
{
    static char buf[1 << 16];
    static size_t have;
    fflush(stderr);
    have += fread(buf + have, 1, sizeof buf - 1 - have, cr_get_redirected_stderr());
    buf[have] = '\0';
    return buf;
}

static void expect_in(const char *text, const char *what)
{
    cr_expect(strstr(text, what) != NULL, "the report should contain \"%s\"; it reads:\n%s", what, text);
}

static void *device_copy(const void *host, size_t bytes)
{
    void *d = NULL;
    CHECK(cudaMalloc(&d, bytes));
    CHECK(cudaMemcpy(d, host, bytes, cudaMemcpyHostToDevice));
    return d;
}

static void *device_poisoned(size_t bytes)
{
    void *d = NULL;
    CHECK(cudaMalloc(&d, bytes));
    CHECK(cudaMemset(d, 0xA5, bytes));
    return d;
}

// ------------------------------------------------------------ resources

/* The CPU path compiles no device code: a kernel's registers and local
 * bytes are "not known" (0), never a made-up count; occupancy is one block
 * per worker; a block past the launch limit is refused as on a GPU. */
Test(resources, attributes_say_not_known_and_occupancy_is_one_block)
{
    struct cudaFuncAttributes a;
    memset(&a, 0x5a, sizeof a);
    int blocks = -1;
    CHECK(k_attributes(&a, &blocks, 256));
    cr_expect_eq(a.numRegs, 0, "numRegs %d: the CPU path cannot know a kernel's registers", a.numRegs);
    cr_expect_eq(a.localSizeBytes, 0, "localSizeBytes %zu", a.localSizeBytes);
    cr_expect_eq(a.binaryVersion, 0, "binaryVersion %d", a.binaryVersion);
    cr_expect_eq(a.maxThreadsPerBlock, 1024, "maxThreadsPerBlock %d", a.maxThreadsPerBlock);
    cr_expect_eq(blocks, 1, "blocks per worker %d", blocks);
    cr_expect_eq(k_attributes(&a, &blocks, 1025), cudaErrorInvalidValue, "a block of 1025 threads");
    cr_expect_eq(cudaGetLastError(), cudaErrorInvalidValue, "the error is recorded");
    cr_expect_eq(cudaFuncGetAttributes(&a, NULL), cudaErrorInvalidValue, "no function");
    cudaGetLastError();
}

// ------------------------------------------------------------ barriers

Test(barriers, hold_in_blocks_of_odd_shapes)
{
    const unsigned bx = 7, by = 5, bz = 3, n = bx * by * bz, blocks = 3;
    const int rounds = 37;
    int in[3 * 105], out[3 * 105];
    for (unsigned i = 0; i < blocks * n; ++i)
        in[i] = (int)(i * 7919u % 1000u) - 500;
    int *din = device_copy(in, sizeof in), *dout = device_poisoned(sizeof out);
    CHECK(k_rotate(din, dout, rounds, blocks, bx, by, bz));
    CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
    for (unsigned b = 0; b < blocks; ++b)
        for (unsigned t = 0; t < n; ++t) {
            int want = in[b * n + (t + rounds) % n] + rounds;
            cr_assert_eq(out[b * n + t], want, "block %u thread %u: got %d, want %d", b, t, out[b * n + t], want);
        }
    cudaFree(din);
    cudaFree(dout);
}

Test(barriers, count_and_or)
{
    const unsigned threads = 100, blocks = 4;
    int pred[4 * 100], out[12];
    for (unsigned t = 0; t < threads; ++t) {
        pred[t] = 5;                           /* all, not just 1 */
        pred[threads + t] = 0;                 /* none */
        pred[2 * threads + t] = t % 3 == 0;    /* some */
        pred[3 * threads + t] = t != 61;       /* all but one */
    }
    int *dp = device_copy(pred, sizeof pred), *dout = device_poisoned(sizeof out);
    CHECK(k_barrier_pred(dp, dout, blocks, threads));
    CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
    const int want[12] = {100, 1, 1, 0, 0, 0, 34, 0, 1, 99, 0, 1};
    const char *what[3] = {"count", "and", "or"};
    for (int i = 0; i < 12; ++i)
        cr_assert_eq(out[i], want[i], "block %d, %s: got %d, want %d", i / 3, what[i % 3], out[i], want[i]);
    cudaFree(dp);
    cudaFree(dout);
}

// ------------------------------------------------------------ warps

static void shuffles_with(int active)
{
    const unsigned threads = 64;
    int in[64], out[4 * 64];
    for (unsigned t = 0; t < threads; ++t)
        in[t] = (int)(t * 2654435761u % 100000u);
    int *din = device_copy(in, sizeof in), *dout = device_poisoned(sizeof out);
    CHECK(k_shuffle(din, dout, active, threads));
    CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
    for (unsigned t = 0; t < threads; ++t) {
        int lane = (int)(t % 32), base = (int)(t - t % 32);
        if (lane >= active) {
            cr_assert_eq(out[4 * t], -1, "lane %d is not in the mask", lane);
            continue;
        }
        /* Sources outside the segment give the lane's own value; sources
         * outside the mask are undefined on a GPU and not checked. */
        int src[4] = {lane + 3 < 32 ? lane + 3 : lane, lane - 2 >= 0 ? lane - 2 : lane, lane ^ 5, (lane & ~7) + 7};
        const char *what[4] = {"shfl_down 3", "shfl_up 2", "shfl_xor 5 (width 16)", "shfl 7 (width 8)"};
        for (int k = 0; k < 4; ++k) {
            if (src[k] >= active)
                continue;
            cr_assert_eq(out[4 * t + k], in[base + src[k]], "%s, thread %u (mask of %d lanes): got %d, want %d",
                         what[k], t, active, out[4 * t + k], in[base + src[k]]);
        }
    }
    cudaFree(din);
    cudaFree(dout);
}

Test(warps, shuffles_full_warp) { shuffles_with(32); }
Test(warps, shuffles_under_a_partial_mask) { shuffles_with(20); }
Test(warps, shuffles_under_an_odd_partial_mask) { shuffles_with(13); }

static void votes_with(int active)
{
    const unsigned threads = 64;
    int pred[64];
    unsigned out[3 * 64];
    for (unsigned t = 0; t < threads; ++t)
        pred[t] = t * 7 % 3 == 0 ? (int)t + 1 : 0;
    pred[40] = pred[41] = 0; /* warp 1: not all */
    int *dp = device_copy(pred, sizeof pred);
    unsigned *dout = device_poisoned(sizeof out);
    CHECK(k_vote(dp, dout, active, threads));
    CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
    for (unsigned t = 0; t < threads; ++t) {
        int lane = (int)(t % 32);
        if (lane >= active)
            continue;
        unsigned ballot = 0, base = t - t % 32;
        for (int l = 0; l < active; ++l)
            if (pred[base + (unsigned)l])
                ballot |= 1u << l;
        unsigned mask = active == 32 ? 0xffffffffu : (1u << active) - 1u;
        cr_assert_eq(out[3 * t], ballot, "ballot, thread %u: got 0x%08x, want 0x%08x", t, out[3 * t], ballot);
        cr_assert_eq(out[3 * t + 1], ballot != 0, "any, thread %u", t);
        cr_assert_eq(out[3 * t + 2], ballot == mask, "all, thread %u", t);
    }
    cudaFree(dp);
    cudaFree(dout);
}

Test(warps, votes_full_warp) { votes_with(32); }
Test(warps, votes_under_a_partial_mask) { votes_with(19); }

// ------------------------------------------------------------ atomics

Test(atomics, across_blocks_on_every_worker)
{
    const unsigned n = 100003, threads = 128;
    int *in = malloc(n * sizeof *in);
    long long sum = 0;
    int max = -1000;
    for (unsigned i = 0; i < n; ++i) {
        in[i] = (int)(i * 37u % 101u) - 50; /* partial float sums stay exact */
        sum += in[i];
        max = in[i] > max ? in[i] : max;
    }
    int init[3] = {0, -1000, 0};
    float fzero = 0.0f, fsum;
    int *din = device_copy(in, n * sizeof *in), *dsum = device_copy(init, sizeof init);
    float *dfsum = device_copy(&fzero, sizeof fzero);
    CHECK(k_atomics(din, dsum, dfsum, n, threads));
    int got[3];
    CHECK(cudaMemcpy(got, dsum, sizeof got, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&fsum, dfsum, sizeof fsum, cudaMemcpyDeviceToHost));
    cr_assert_eq(got[0], sum, "atomicAdd (int): got %d, want %lld", got[0], sum);
    cr_assert_eq(fsum, (float)sum, "atomicAdd (float): got %.1f, want %lld", (double)fsum, sum);
    cr_assert_eq(got[1], max, "atomicMax: got %d, want %d", got[1], max);
    cr_assert_eq(got[2], (int)n, "atomicCAS loop: got %d, want %u", got[2], n);
    cudaFree(din);
    cudaFree(dsum);
    cudaFree(dfsum);
    free(in);
}

// ------------------------------------------------------------ reports

Test(reports, deadlock_names_both_waits, .init = cr_redirect_stderr)
{
    int *dout = device_poisoned(64 * sizeof(int));
    cudaError_t err = k_divergent_barrier(dout, 64);
    cr_assert_eq(err, cudaErrorLaunchFailure, "got %s", cudaGetErrorName(err));
    cr_assert_eq(cudaGetLastError(), cudaErrorLaunchFailure, "the error is sticky");
    char a[64], b[64];
    const char *text = captured_stderr();
    expect_in(text, "DEADLOCK in kernel divergent_barrier_kernel");
    expect_in(text, "63 threads wait at __syncthreads()");
    expect_in(text, line_of("deadlock", a, sizeof a));
    expect_in(text, "1 threads wait in a warp operation");
    expect_in(text, line_of("deadlock-warp", b, sizeof b));
}

Test(reports, out_of_bounds_names_kernel_block_thread_line, .init = cr_redirect_stderr)
{
    const unsigned n = 1024, threads = 96; /* n * 4 bytes: the allocation ends at its guard page */
    int *dout = device_poisoned(n * sizeof(int));
    cudaError_t err = k_past_the_end(dout, n, threads);
    cr_assert_eq(err, cudaErrorIllegalAddress, "got %s", cudaGetErrorName(err));
    char a[64];
    const char *text = captured_stderr();
    expect_in(text, "out-of-bounds global access");
    expect_in(text, "0 bytes past the end of a 4096-byte cudaMalloc allocation");
    expect_in(text, "in kernel past_the_end_kernel");
    expect_in(text, "block (10,0,0), thread (64,0,0)");
    expect_in(text, line_of("oob", a, sizeof a));
}

/* A 16-byte load at a 4-byte offset: a GPU's misaligned address (716),
 * here too, with the address, the type and the line; the same kernel at a
 * 16-byte boundary runs. */
Test(reports, misaligned_vector_access_fails_the_launch, .init = cr_redirect_stderr)
{
    int *din = device_poisoned(64 * sizeof(int)), *dout = device_poisoned(64 * sizeof(int));
    CHECK(k_misaligned(din, dout, 0, 0));
    CHECK(k_misaligned(din, dout, 4, 1));
    cudaError_t err = k_misaligned(din, dout, 1, 0);
    cr_assert_eq(err, cudaErrorMisalignedAddress, "got %s", cudaGetErrorName(err));
    char a[64];
    const char *text = captured_stderr();
    expect_in(text, "misaligned address");
    expect_in(text, "struct int4', which requires 16-byte alignment (4 bytes past a multiple of it");
    expect_in(text, "in kernel misaligned_copy_kernel");
    expect_in(text, line_of("misaligned-int4", a, sizeof a));
    cr_expect_str_eq(cudaGetErrorName(cudaGetLastError()), "cudaErrorMisalignedAddress");
}

Test(reports, misaligned_vector_taken_apart_still_fails, .init = cr_redirect_stderr)
{
    int *din = device_poisoned(64 * sizeof(int)), *dout = device_poisoned(64 * sizeof(int));
    cudaError_t err = k_misaligned(din, dout, 2, 1);
    cr_assert_eq(err, cudaErrorMisalignedAddress, "got %s", cudaGetErrorName(err));
    char a[64];
    const char *text = captured_stderr();
    expect_in(text, "struct float4', which requires 16-byte alignment (8 bytes past a multiple of it");
    expect_in(text, "in kernel misaligned_scale_kernel");
    expect_in(text, line_of("misaligned-float4", a, sizeof a));
}

Test(reports, watchdog_cuts_off_a_spin, .init = cr_redirect_stderr, .timeout = 30)
{
    setenv("CML_CPU_WATCHDOG", "1", 1); /* read when the runtime starts: below */
    int *dout = device_poisoned(2 * sizeof(int));
    cudaError_t err = k_spin(dout);
    cr_assert_eq(err, cudaErrorLaunchTimeout, "got %s", cudaGetErrorName(err));
    char a[64];
    const char *text = captured_stderr();
    expect_in(text, "WATCHDOG: a thread ran 1 s without reaching a barrier");
    expect_in(text, "in kernel spin_kernel");
    expect_in(text, "block (0,0,0), thread (1,0,0)");
    expect_in(text, line_of("spin", a, sizeof a));
}

Test(reports, host_pointer_argument, .init = cr_redirect_stderr)
{
    int host[4];
    cudaError_t err = k_host_pointer(host);
    cr_assert_eq(err, cudaErrorIllegalAddress, "got %s", cudaGetErrorName(err));
    const char *text = captured_stderr();
    expect_in(text, "HOST POINTER passed to kernel host_pointer_kernel");
    expect_in(text, "argument 1 is");
}

// ------------------------------------------------------------ race check

static void run_neighbour(int with_barrier)
{
    const unsigned threads = 64, blocks = 2;
    int in[128], out[128];
    for (unsigned i = 0; i < threads * blocks; ++i)
        in[i] = (int)(i * 31u % 97u);
    int *din = device_copy(in, sizeof in), *dout = device_poisoned(sizeof out);
    CHECK(k_neighbour(din, dout, with_barrier, blocks, threads));
    CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
    cudaFree(din);
    cudaFree(dout);
}

/* The race check's report names both marked lines, the kernel and the memory. */
static void expect_race_report(const char *mark_a, const char *mark_b, const char *kernel_and_space)
{
    char a[64], b[64];
    const char *text = captured_stderr();
    expect_in(text, "cml-cpu racecheck: Race reported between ");
    expect_in(text, line_of(mark_a, a, sizeof a));
    expect_in(text, line_of(mark_b, b, sizeof b));
    expect_in(text, kernel_and_space);
}

Test(race, missing_barrier_is_found, .init = cr_redirect_stderr)
{
    cml_cpu_check_set_mode(CML_CPU_CHECK_RACE);
    run_neighbour(0);
    cr_assert_gt(cml_cpu_race_hazards(), 0, "a read of a neighbour's word without a barrier is a race");
    expect_race_report("race-write", "race-read", "of kernel neighbour_kernel (shared memory)");
    expect_in(captured_stderr(), "by thread (1,0,0)");
}

Test(race, none_with_the_barrier, .init = cr_redirect_stderr)
{
    cml_cpu_check_set_mode(CML_CPU_CHECK_RACE);
    run_neighbour(1);
    cr_assert_eq(cml_cpu_race_hazards(), 0, "the barrier orders every write before the reads");
    cr_assert_str_empty(captured_stderr(), "no hazard, no output");
}

static void run_warp_sum(int with_syncwarp)
{
    int in[32], out, want = 0;
    for (int i = 0; i < 32; ++i) {
        in[i] = (i * 13) % 17 - 8;
        want += in[i];
    }
    int *din = device_copy(in, sizeof in), *dout = device_poisoned(sizeof(int));
    CHECK(k_warp_sum(din, dout, with_syncwarp));
    CHECK(cudaMemcpy(&out, dout, sizeof out, cudaMemcpyDeviceToHost));
    if (with_syncwarp)
        cr_assert_eq(out, want, "the warp's sum: got %d, want %d", out, want);
    cudaFree(din);
    cudaFree(dout);
}

Test(race, lanes_without_syncwarp, .init = cr_redirect_stderr)
{
    cml_cpu_check_set_mode(CML_CPU_CHECK_RACE);
    run_warp_sum(0);
    cr_assert_gt(cml_cpu_race_hazards(), 0, "lanes read words their neighbours overwrite, unordered");
    expect_race_report("warp-read", "warp-write", "of kernel warp_sum_kernel (shared memory)");
}

Test(race, none_with_syncwarp, .init = cr_redirect_stderr)
{
    cml_cpu_check_set_mode(CML_CPU_CHECK_RACE);
    run_warp_sum(1);
    cr_assert_eq(cml_cpu_race_hazards(), 0, "__syncwarp orders the lanes' reads and writes");
    cr_assert_str_empty(captured_stderr(), "no hazard, no output");
}

Test(race, global_word_within_a_block, .init = cr_redirect_stderr)
{
    cml_cpu_check_set_mode(CML_CPU_CHECK_RACE);
    int *dout = device_poisoned(3 * sizeof(int));
    CHECK(k_global_race(dout, 3));
    cr_assert_eq(cml_cpu_race_hazards(), 1, "one pair of source lines (the line with itself)");
    expect_race_report("global-race", "global-race", "of kernel global_race_kernel (global memory)");
    expect_in(captured_stderr(), "Race reported between Write access at ");
    cudaFree(dout);
}

// ------------------------------------------------------------ bank counts

/* A check's report so far (cml_cpu_banks_report, cml_cpu_sectors_report; free it). */
static char *report_text(void (*report)(FILE *))
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    report(f);
    fclose(f);
    return text;
}

/* Conflicts of stride_kernel's loads (2 blocks of `threads`): ld, st. */
static void bank_conflicts(int stride, int active, int wide, unsigned threads, unsigned long long *ld,
                           unsigned long long *st)
{
    cml_cpu_bank_counts_on(); /* the runners' way (a program's: CML_CPU_CHECK=banks) */
    float *dout = device_poisoned(threads * sizeof(float));
    CHECK(k_stride(dout, stride, active, wide, threads));
    cr_assert_eq(cml_cpu_bank_totals("stride_kernel", ld, st), 0, "the kernel ran: its totals exist");
    cudaFree(dout);
}

/* 2 blocks x (threads / 32) warps, one load instruction each. */
static void expect_conflicts(int stride, int active, int wide, unsigned long long per_warp)
{
    unsigned long long ld = 99, st = 99;
    bank_conflicts(stride, active, wide, 64, &ld, &st);
    cr_assert_eq(ld, 4 * per_warp, "%d-byte loads, stride %d, %d lanes: %llu conflicts, want %llu per warp x 4",
                 wide ? 8 : 4, stride, active, ld, per_warp);
    cr_assert_eq(st, 0, "the fill (consecutive words) has no conflict; got %llu", st);
}

Test(banks, stride_1_is_conflict_free) { expect_conflicts(1, 32, 0, 0); }
Test(banks, stride_2_is_two_way) { expect_conflicts(2, 32, 0, 1); }
Test(banks, stride_32_is_31_per_request) { expect_conflicts(32, 32, 0, 31); }
Test(banks, stride_33_is_conflict_free) { expect_conflicts(33, 32, 0, 0); }
Test(banks, broadcast_is_free) { expect_conflicts(0, 32, 0, 0); }
Test(banks, partial_warp_adds_nothing) { expect_conflicts(1, 20, 0, 0); }
Test(banks, partial_warp_stride_32) { expect_conflicts(32, 20, 0, 19); }
Test(banks, wide_stride_1_is_conflict_free) { expect_conflicts(1, 32, 1, 0); }
/* 8-byte elements 16 apart: each half warp puts its 16 lanes' two words in
 * banks 0 and 1, 16 distinct words each: 16 wavefronts per half, 32 in all,
 * 2 of them the ideal. */
Test(banks, wide_stride_16_is_16_way_per_half) { expect_conflicts(16, 32, 1, 30); }

Test(banks, lines_per_kernel_and_source_line)
{
    unsigned long long ld, st;
    bank_conflicts(32, 32, 0, 64, &ld, &st);
    char *text = report_text(cml_cpu_banks_report);
    char a[64], want[200];
    line_of("bank-read", a, sizeof a);
    cr_assert(strstr(text, a) != NULL, "a line for %s; the report reads:\n%s", a, text);
    snprintf(want, sizeof want, "%s ld requests=4 wavefronts=128 conflicts=124\n", a);
    cr_expect(strstr(text, want) != NULL, "\"%s\" in:\n%s", want, text);
    cr_expect(strstr(text, "cml-cpu banks: stride_kernel total ld conflicts=124 st conflicts=0\n") != NULL,
              "the kernel's total in:\n%s", text);
    cr_assert_eq(cml_cpu_bank_totals("no_such_kernel", &ld, &st), -1, "a kernel that never ran has no totals");
    unsigned long long r = 0, w = 0;
    cr_assert_eq(cml_cpu_bank_counts("stride_kernel", 0, &r, &w), 0);
    cr_expect(r == 4 && w == 128, "loads: 4 requests, 128 wavefronts; got %llu, %llu", r, w);
    free(text);
}

/* The grader's technique check (checker.shared_use) reads each launch's
 * shared-memory requests from CML_CPU_BANKS_LOG. With no bank model set
 * (cml_cpu_set_bank_model(NULL)) the requests are counted all the same, and
 * the conflicts, unknown, are left out rather than written as 0. */
Test(banks, requests_are_logged_without_a_bank_model)
{
    char path[] = "/tmp/cml-banks-log-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0, "a temporary file for the log");
    close(fd);
    cr_assert_eq(setenv("CML_CPU_BANKS_LOG", path, 1), 0);
    cml_cpu_set_bank_model(NULL);
    cml_cpu_bank_counts_on();
    float *dout = device_poisoned(64 * sizeof(float));
    CHECK(k_stride(dout, 32, 32, 0, 64));
    unsigned long long r = 9, w = 9;
    cr_expect_eq(cml_cpu_bank_counts("stride_kernel", 0, &r, &w), -1, "no model: no wavefronts to answer with");
    cr_expect_eq(cml_cpu_bank_totals("stride_kernel", &r, &w), -1, "no model: no conflicts to answer with");
    FILE *f = fopen(path, "r");
    cr_assert(f != NULL, "the log %s exists", path);
    char text[512] = "";
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    unlink(path);
    /* 2 blocks x 2 warps, one 4-byte load each: 4 load requests. Stores, per
     * block: the float fill 33 passes x 2 warps; the double fill 17 + 16
     * passes of 2 requests (8-byte): 66 + 66, so 264 for the grid. */
    cr_expect_str_eq(text, "launch stride_kernel ld requests=4 st requests=264 (no bank model: conflicts unknown)\n");
    cudaFree(dout);
}

Test(banks, lanes_that_skip_a_pass_add_nothing)
{
    cml_cpu_check_set_mode(CML_CPU_CHECK_BANKS);
    float *dout = device_poisoned(64 * sizeof(float));
    CHECK(k_skip_pass(dout, 64));
    unsigned long long ld = 99, st = 99;
    cr_assert_eq(cml_cpu_bank_totals("skip_pass_kernel", &ld, &st), 0, "the kernel ran: its totals exist");
    cr_assert_eq(ld, 0, "both passes are conflict-free; lanes 0-3 skip the first: got %llu conflicts", ld);
    char *text = report_text(cml_cpu_banks_report);
    char a[64], want[200];
    snprintf(want, sizeof want, "%s ld requests=4 wavefronts=4 conflicts=0\n", line_of("bank-skip", a, sizeof a));
    cr_expect(strstr(text, want) != NULL, "\"%s\" in:\n%s", want, text);
    free(text);
    cudaFree(dout);
}

// ------------------------------------------------------------ global-memory sector counts

/* A device array of n seeded floats (no two alike), 256-byte aligned. */
static float *device_floats(size_t n)
{
    float *h = malloc(n * sizeof *h);
    cr_assert_not_null(h);
    for (size_t i = 0; i < n; ++i)
        h[i] = (float)(i * 7919 % 1000003) + 0.5f;
    float *d = device_copy(h, n * sizeof *h);
    free(h);
    return d;
}

typedef struct sector_counts {
    unsigned long long requests, sectors, ideal;
} sector_counts;

/* The counts of `kernel`'s loads (store 0) or stores so far; the kernel ran. */
static sector_counts counts_of(const char *kernel, int store)
{
    sector_counts c = {0, 0, 0};
    cr_assert_eq(cml_cpu_sector_counts(kernel, store, &c.requests, &c.sectors, &c.ideal), 0,
                 "%s ran under the sector counts: its counts exist", kernel);
    return c;
}

static void expect_counts(sector_counts got, unsigned long long requests, unsigned long long sectors,
                          unsigned long long ideal, const char *what)
{
    cr_expect(got.requests == requests && got.sectors == sectors && got.ideal == ideal,
              "%s: %llu requests, %llu sectors (ideal %llu); expected %llu, %llu (ideal %llu)", what, got.requests,
              got.sectors, got.ideal, requests, sectors, ideal);
}

/* sector_load_kernel over 4 warps: `bytes`-byte elements at `stride`, lanes
 * below `active`, from element `offset` of the array. */
static void loads(int bytes, int stride, int active, int offset)
{
    cml_cpu_sector_counts_on(); /* the runners' way (a program's: CML_CPU_CHECK=sectors) */
    size_t n = (size_t)4 * 32 * (size_t)stride * (size_t)bytes / 4 + 64;
    float *in = device_floats(n), *out = device_poisoned(4 * 32 * (size_t)bytes);
    CHECK(k_sector_loads((const char *)in + (size_t)offset * (size_t)bytes, out, bytes, stride, active));
    cudaFree(in);
    cudaFree(out);
}

/* The expected counts below are the ones Nsight Compute gives for the same
 * kernels on a GPU (l1tex__t_sectors/requests_pipe_lsu_mem_global_op_ld/st,
 * seen on an H200 with CUDA 13.0).
 *
 * 4 warps of 4-byte loads per stride: one request each, sectors per request
 * as a GPU counts them (32 lanes, 128 bytes at stride 1: 4 sectors). The
 * stores are consecutive: 4 sectors each. */
static void expect_float_loads(int stride, unsigned long long per_request)
{
    loads(4, stride, 32, 0);
    char what[64];
    snprintf(what, sizeof what, "4-byte loads at stride %d", stride);
    expect_counts(counts_of("sector_load_kernel", 0), 4, 4 * per_request, 16, what);
    expect_counts(counts_of("sector_load_kernel", 1), 4, 16, 16, "consecutive 4-byte stores");
}

Test(sectors, stride_1_is_4_sectors_per_request) { expect_float_loads(1, 4); }
Test(sectors, stride_2_is_8_sectors_per_request) { expect_float_loads(2, 8); }
Test(sectors, stride_32_is_a_sector_per_lane) { expect_float_loads(32, 32); }
/* 33 words apart: every lane in a sector of its own, as at stride 32. */
Test(sectors, stride_33_is_a_sector_per_lane) { expect_float_loads(33, 32); }

/* sector_load_kernel's loads (sectors, ideal) and its consecutive stores
 * (sectors, ideal): 4 warps, one request each way. */
static void expect_loads(int bytes, int active, int offset, unsigned long long ld, unsigned long long ld_ideal,
                         unsigned long long st, const char *what)
{
    loads(bytes, 1, active, offset);
    expect_counts(counts_of("sector_load_kernel", 0), 4, ld, ld_ideal, what);
    expect_counts(counts_of("sector_load_kernel", 1), 4, st, st, "the consecutive stores");
}

/* 20 lanes of 4 bytes: 80 bytes from a sector's start, 3 sectors (the
 * idle lanes add nothing), loads and stores alike. */
Test(sectors, partial_warp_counts_its_lanes_only) { expect_loads(4, 20, 0, 12, 12, 12, "20 lanes' loads"); }

/* An int2 and an int4 per lane: one request per warp each (g++ may take the
 * vector apart into 4-byte loads; the counts make it one again, as nvcc's
 * LDG.E.64 and LDG.E.128 are), 256 and 512 bytes: 8 and 16 sectors. */
Test(sectors, eight_byte_elements_are_8_sectors_per_request) { expect_loads(8, 32, 0, 32, 32, 32, "int2 loads"); }
Test(sectors, sixteen_byte_elements_are_16_sectors_per_request) { expect_loads(16, 32, 0, 64, 64, 64, "int4 loads"); }

/* int4 loads from 16 bytes into the array (aligned for an int4, not to a
 * sector): each warp's 512 bytes straddle 17 sectors, 16 of them the ideal.
 * The stores start at a sector: 16. */
Test(sectors, an_int4_array_16_bytes_off_a_sector_is_17_per_request)
{
    expect_loads(16, 32, 1, 68, 64, 64, "int4 loads at a 16-byte offset");
}

/* Stores apart, loads consecutive: each direction counted on its own. */
Test(sectors, strided_stores_are_counted_apart_from_the_loads)
{
    cml_cpu_sector_counts_on();
    float *in = device_floats(4 * 32), *out = device_poisoned(4 * 32 * 32 * sizeof(float));
    CHECK(k_sector_stores(in, out, 32));
    expect_counts(counts_of("sector_store_kernel", 0), 4, 16, 16, "consecutive loads");
    expect_counts(counts_of("sector_store_kernel", 1), 4, 128, 16, "stores 32 words apart");
    cudaFree(in);
    cudaFree(out);
}

/* One load in a loop: 167 = 5 x 32 + 7 elements, 6 passes, the last of 7
 * lanes (28 bytes: 1 sector). */
Test(sectors, a_loop_is_a_request_per_pass_and_a_partial_last_pass)
{
    cml_cpu_sector_counts_on();
    float *in = device_floats(167), *out = device_poisoned(32 * sizeof(float));
    CHECK(k_sector_loop(in, out, 167));
    expect_counts(counts_of("sector_loop_kernel", 0), 6, 21, 21, "167 elements in 6 passes");
    expect_counts(counts_of("sector_loop_kernel", 1), 1, 4, 4, "one store per lane");
    char *text = report_text(cml_cpu_sectors_report);
    char at[80], want[200];
    line_in(CML_CPU_TEST_SECTOR_KERNELS, "sector-loop", at, sizeof at);
    snprintf(want, sizeof want, "%s ld requests=6 sectors=21 ideal=21 sectors/request=3.50 ideal/request=3.50\n", at);
    cr_expect(strstr(text, want) != NULL, "\"%s\" in:\n%s", want, text);
    cr_expect(strstr(text, "cml-cpu sectors: sector_loop_kernel total ld requests=6 sectors=21 ideal=21 st "
                           "requests=1 sectors=4 ideal=4\n") != NULL,
              "the kernel's total in:\n%s", text);
    free(text);
    cudaFree(in);
    cudaFree(out);
}

/* Which lanes share an instruction, as on a GPU: the warp runs a loop's
 * body once per trip with every lane still in it (sector_kernels.cu). */
static void expect_passes(int which, const char *kernel, unsigned long long sectors, unsigned long long ideal,
                          const char *what)
{
    cml_cpu_sector_counts_on();
    float *in = device_floats(64), *out = device_poisoned(32 * sizeof(float));
    CHECK(k_sector_passes(in, out, which));
    expect_counts(counts_of(kernel, 0), 2, sectors, ideal, what);
    cudaFree(in);
    cudaFree(out);
}

Test(sectors, lanes_that_start_a_loop_late_share_its_first_trip)
{
    expect_passes(0, "sector_late_start_kernel", 9, 8, "lanes 0-3 from k = 1: 5 sectors, then 4");
}

Test(sectors, a_load_skipped_by_a_branch_leaves_its_trip_only)
{
    expect_passes(1, "sector_branch_kernel", 8, 8, "lanes 0-3 skip the first trip's load: 4 sectors, then 4");
}

Test(sectors, lanes_that_load_in_different_trips_make_different_requests)
{
    expect_passes(2, "sector_halves_kernel", 4, 4, "lanes 0-15 in the first trip, 16-31 in the second: 2 + 2");
}

/* __constant__, shared and local memory are not global: only the store counts. */
Test(sectors, constant_shared_and_local_memory_are_left_out)
{
    cml_cpu_sector_counts_on();
    float *out = device_poisoned(64 * sizeof(float));
    CHECK(k_sector_not_global(out));
    expect_counts(counts_of("sector_not_global_kernel", 0), 0, 0, 0, "no global load");
    expect_counts(counts_of("sector_not_global_kernel", 1), 2, 8, 8, "64 consecutive stores");
    unsigned long long r = 9;
    cr_expect_eq(cml_cpu_sector_counts("no_such_kernel", 0, &r, NULL, NULL), -1, "a kernel that never ran");
    cr_expect_eq(r, 0, "its counts are 0, got %llu", r);
    cudaFree(out);
}

Test(reports, copy_to_a_host_pointer_as_device_memory, .init = cr_redirect_stderr)
{
    int a[4] = {1, 2, 3, 4}, b[4];
    cudaError_t err = cudaMemcpy(b, a, sizeof a, cudaMemcpyHostToDevice);
    cr_assert_eq(err, cudaErrorInvalidValue, "got %s", cudaGetErrorName(err));
    expect_in(captured_stderr(), "cml-cpu: cudaMemcpy of 16 bytes: the destination");
    expect_in(captured_stderr(), "is not inside one cudaMalloc allocation");
    cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue, "recorded for cudaGetLastError");
    cr_assert_eq(cudaGetLastError(), cudaSuccess, "not sticky: a GPU goes on too");
}

/* A launcher that sizes its grid from the device's limits (honest students
 * read cudaDevAttrMaxGridDimY) gets the same numbers as from
 * cudaGetDeviceProperties; an attribute the CPU path does not know is an
 * error, never a made-up value. */
Test(runtime, device_attributes_agree_with_the_properties)
{
    cudaDeviceProp p;
    cr_assert_eq(cudaGetDeviceProperties(&p, 0), cudaSuccess);
    const struct { cudaDeviceAttr attr; int want; const char *name; } cases[] = {
        {cudaDevAttrMaxBlockDimX, p.maxThreadsDim[0], "MaxBlockDimX"},
        {cudaDevAttrMaxBlockDimY, p.maxThreadsDim[1], "MaxBlockDimY"},
        {cudaDevAttrMaxBlockDimZ, p.maxThreadsDim[2], "MaxBlockDimZ"},
        {cudaDevAttrMaxGridDimX, p.maxGridSize[0], "MaxGridDimX"},
        {cudaDevAttrMaxGridDimY, p.maxGridSize[1], "MaxGridDimY"},
        {cudaDevAttrMaxGridDimZ, p.maxGridSize[2], "MaxGridDimZ"},
        {cudaDevAttrTotalConstantMemory, (int)p.totalConstMem, "TotalConstantMemory"},
        {cudaDevAttrMultiProcessorCount, p.multiProcessorCount, "MultiProcessorCount"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        int v = -12345;
        cr_expect_eq(cudaDeviceGetAttribute(&v, cases[i].attr, 0), cudaSuccess, "cudaDevAttr%s failed", cases[i].name);
        cr_expect_eq(v, cases[i].want, "cudaDevAttr%s: got %d, the properties say %d", cases[i].name, v, cases[i].want);
    }
    cr_expect_eq(cudaGetDeviceProperties(&p, 0), cudaSuccess);
    cr_expect_eq(p.maxGridSize[1], 65535, "grid y limit: got %d", p.maxGridSize[1]);
    int v = 0;
    cr_expect_eq(cudaDeviceGetAttribute(&v, (cudaDeviceAttr)9999, 0), cudaErrorInvalidValue);
    cudaGetLastError();
}
