/* The CPU path's own tests: barriers, warp operations, atomics, the reports
 * (deadlock, out-of-bounds, watchdog, host pointer), the race check and the
 * bank counts, on the kernels in kernels.cu. Reports are checked by their
 * text, including the source line (found by its "mark:" comment). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../src/cml_cpu_internal.h"
#include "kernels.h"

#define CHECK(call) cr_assert_eq((call), cudaSuccess, "%s failed: %s", #call, cudaGetErrorString(call))

/* "kernels.cu:N" for the line of kernels.cu that carries "mark:NAME". */
static const char *line_of(const char *name, char *buf, size_t len)
{
    FILE *f = fopen(CML_CPU_TEST_KERNELS, "r");
    cr_assert_not_null(f, "cannot read %s", CML_CPU_TEST_KERNELS);
    char text[400], want[64];
    snprintf(want, sizeof want, "mark:%s", name);
    int n = 0, found = 0;
    while (!found && fgets(text, sizeof text, f) != NULL) {
        ++n;
        const char *m = strstr(text, want);
        found = m != NULL && (m[strlen(want)] == '\n' || m[strlen(want)] == '\0' || m[strlen(want)] == ' ');
    }
    fclose(f);
    cr_assert(found, "no line marked %s in kernels.cu", want);
    snprintf(buf, len, "kernels.cu:%d", n);
    return buf;
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

/* The bank counts' report so far (free it). */
static char *banks_report_text(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_not_null(f);
    cml_cpu_banks_report(f);
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
    char *text = banks_report_text();
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
    char *text = banks_report_text();
    char a[64], want[200];
    snprintf(want, sizeof want, "%s ld requests=4 wavefronts=4 conflicts=0\n", line_of("bank-skip", a, sizeof a));
    cr_expect(strstr(text, want) != NULL, "\"%s\" in:\n%s", want, text);
    free(text);
    cudaFree(dout);
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
