/* The CPU path runs what CUDA C students write (issue 22): cooperative
 * groups, cuda::std, warp operations under a tail's partial mask, every
 * atomic, device lambdas and templates deduced from a launch, and reports
 * a static __shared__ array indexed past its end with the kernel, block,
 * thread and line. Kernels in student_kernels.cu; data seeded (CML_TEST_SEED). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "student_kernels.h"

#define CHECK(call)                                                                                  \
    do {                                                                                             \
        cudaError_t err_ = (call);                                                                   \
        cr_assert_eq(err_, cudaSuccess, "%s failed: %s", #call, cudaGetErrorString(err_));          \
    } while (0)

static const unsigned sizes[] = {1, 31, 33, 1000003};

static uint64_t seed(void)
{
    const char *env = getenv("CML_TEST_SEED");
    return env != NULL ? strtoull(env, NULL, 0) : 0x22c0ffeeULL;
}

/* n values in [lo, hi], from a seeded xorshift. */
static int *random_ints(unsigned n, int lo, int hi, uint64_t salt)
{
    int *v = malloc((n ? n : 1) * sizeof *v);
    cr_assert_not_null(v);
    uint64_t x = seed() ^ (salt * 0x9E3779B97F4A7C15ULL) ^ n;
    for (unsigned i = 0; i < n; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v[i] = lo + (int)(x % (uint64_t)(hi - lo + 1));
    }
    return v;
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

/* "student_kernels.cu:N" for the line of student_kernels.cu that carries "mark:NAME". */
static const char *line_of(const char *name, char *buf, size_t len)
{
    FILE *f = fopen(CML_CPU_TEST_STUDENT_KERNELS, "r");
    cr_assert_not_null(f, "cannot read %s", CML_CPU_TEST_STUDENT_KERNELS);
    char text[400], want[64];
    snprintf(want, sizeof want, "mark:%s", name);
    int n = 0, found = 0;
    while (!found && fgets(text, sizeof text, f) != NULL) {
        ++n;
        const char *m = strstr(text, want);
        found = m != NULL && (m[strlen(want)] == '\n' || m[strlen(want)] == '\0' || m[strlen(want)] == ' ');
    }
    fclose(f);
    cr_assert(found, "no line marked %s in student_kernels.cu", want);
    snprintf(buf, len, "student_kernels.cu:%d", n);
    return buf;
}

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

// ------------------------------------------------------------ cooperative groups

Test(cooperative_groups, block_reduce_sums_every_size, .timeout = 120)
{
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; ++s) {
        unsigned n = sizes[s];
        int *in = random_ints(n, -1000, 1000, 1);
        long long want = 0;
        for (unsigned i = 0; i < n; ++i)
            want += in[i];
        unsigned long long zero = 0, got;
        int *din = device_copy(in, n * sizeof *in);
        unsigned long long *dsum = device_copy(&zero, sizeof zero);
        CHECK(k_cg_block_sum(din, dsum, n, 256));
        CHECK(cudaMemcpy(&got, dsum, sizeof got, cudaMemcpyDeviceToHost));
        cr_expect_eq((long long)got, want, "n = %u (seed 0x%llx): cg::reduce block sum %lld, want %lld", n,
                     (unsigned long long)seed(), (long long)got, want);
        cudaFree(din);
        cudaFree(dsum);
        free(in);
    }
}

Test(cooperative_groups, tiles_of_16_sum_with_shfl_down_and_know_their_meta_rank, .timeout = 120)
{
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; ++s) {
        unsigned n = sizes[s], threads = 128, tiles = (n + threads - 1) / threads * threads / 16;
        int *in = random_ints(n, -5000, 5000, 2);
        int *dsums = device_poisoned(tiles * sizeof(int)), *dmeta = device_poisoned(tiles * sizeof(int));
        int *din = device_copy(in, n * sizeof *in);
        CHECK(k_cg_tile16(din, dsums, dmeta, n, threads));
        int *sums = malloc(tiles * sizeof *sums), *meta = malloc(tiles * sizeof *meta);
        CHECK(cudaMemcpy(sums, dsums, tiles * sizeof *sums, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(meta, dmeta, tiles * sizeof *meta, cudaMemcpyDeviceToHost));
        int bad = 0;
        for (unsigned t = 0; t < tiles && bad < 5; ++t) {
            int want = 0;
            for (unsigned i = 16 * t; i < 16 * t + 16 && i < n; ++i)
                want += in[i];
            if (sums[t] != want || meta[t] != (int)(t % 2)) {
                ++bad;
                cr_expect_eq(sums[t], want, "n = %u, tile %u: sum %d, want %d", n, t, sums[t], want);
                cr_expect_eq(meta[t], (int)(t % 2), "n = %u, tile %u: meta_group_rank %d, want %u", n, t, meta[t],
                             t % 2);
            }
        }
        cudaFree(din);
        cudaFree(dsums);
        cudaFree(dmeta);
        free(in);
        free(sums);
        free(meta);
    }
}

// ------------------------------------------------------------ cuda::std

Test(cuda_std, types_in_a_kernel_find_min_and_max)
{
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; ++s) {
        unsigned n = sizes[s];
        int *in = random_ints(n, -2000000000, 2000000000, 3);
        int lo = in[0], hi = in[0];
        for (unsigned i = 1; i < n; ++i) {
            lo = in[i] < lo ? in[i] : lo;
            hi = in[i] > hi ? in[i] : hi;
        }
        int init[2] = {2147483647, -2147483647 - 1}, got[2];
        int *din = device_copy(in, n * sizeof *in), *dout = device_copy(init, sizeof init);
        CHECK(k_cuda_std(din, dout, n));
        CHECK(cudaMemcpy(got, dout, sizeof got, cudaMemcpyDeviceToHost));
        cr_expect_eq(got[0], lo, "n = %u: min %d, want %d", n, got[0], lo);
        cr_expect_eq(got[1], hi, "n = %u: max %d, want %d", n, got[1], hi);
        cudaFree(din);
        cudaFree(dout);
        free(in);
    }
}

// ------------------------------------------------------------ warps in a tail

Test(warps, shuffles_and_votes_under_a_tail_mask)
{
    const unsigned counts[] = {1, 31, 33, 77, 200};
    for (size_t s = 0; s < sizeof counts / sizeof *counts; ++s) {
        unsigned n = counts[s], threads = 64;
        int *in = random_ints(n, -9, 9, 4);
        int *dout = device_poisoned(4 * n * sizeof(int)), *din = device_copy(in, n * sizeof *in);
        CHECK(k_tail_warp(din, dout, n, threads));
        int *out = malloc(4 * n * sizeof *out);
        CHECK(cudaMemcpy(out, dout, 4 * n * sizeof *out, cudaMemcpyDeviceToHost));
        int bad = 0;
        for (unsigned i = 0; i < n && bad < 5; ++i) {
            unsigned w0 = i / 32 * 32, lanes = n - w0 < 32 ? n - w0 : 32, ballot = 0;
            for (unsigned l = 0; l < lanes; ++l)
                ballot |= (in[w0 + l] > 0 ? 1u : 0u) << l;
            unsigned full = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1u;
            int want[4] = {in[w0], in[i % 32 == 0 ? i : i - 1], (int)ballot,
                           (ballot != 0) | (ballot == full) << 1};
            for (int k = 0; k < 4; ++k)
                if (out[4 * i + k] != want[k]) {
                    ++bad;
                    cr_expect_eq(out[4 * i + k], want[k], "n = %u, thread %u, result %d (shfl, shfl_up, ballot, "
                                 "any|all<<1): got %d, want %d", n, i, k, out[4 * i + k], want[k]);
                }
        }
        cudaFree(din);
        cudaFree(dout);
        free(in);
        free(out);
    }
}

// ------------------------------------------------------------ atomics

Test(atomics, every_type_and_operation_across_blocks, .timeout = 120)
{
    const unsigned n = 100003;
    int *in = random_ints(n, -3000, 3000, 5);
    atomic_results init = {0}, want, got;
    init.max_i = -2147483647 - 1;
    init.min_i = 2147483647;
    init.min_u = 0xffffffffu;
    init.min_ull = ~0ull;
    init.and_u = 0xffffffffu;
    init.and_i = -1;
    init.and_ull = ~0ull;
    init.exch_i = init.exch_u = 1;
    init.exch_ull = 1;
    init.exch_f = 1.0f;
    init.cas_i = 100;
    want = init;
    for (unsigned i = 0; i < n; ++i) {
        int v = in[i];
        unsigned u = (unsigned)v * 2654435761u;
        unsigned long long w = (unsigned long long)u << 20 | i;
        want.add_i += v;
        want.add_u += u;
        want.add_ull += w;
        want.add_f += (float)v;
        want.add_d += (double)v * 0.5;
        want.sub_i -= v;
        want.max_i = v > want.max_i ? v : want.max_i;
        want.min_i = v < want.min_i ? v : want.min_i;
        want.max_u = u > want.max_u ? u : want.max_u;
        want.min_u = u < want.min_u ? u : want.min_u;
        want.max_ull = w > want.max_ull ? w : want.max_ull;
        want.min_ull = w < want.min_ull ? w : want.min_ull;
        want.and_u &= u | 0x00ff00ffu;
        want.or_u |= u & 0x0f0f0f0fu;
        want.xor_u ^= u;
        want.and_i &= v | 0x7ff0;
        want.or_i |= v & 0x3c;
        want.xor_i ^= v;
        want.and_ull &= w | 0xffffffff000ull;
        want.or_ull |= w & 0xf0f0f0f0f0ull;
        want.xor_ull ^= w;
        want.cas_i += 1;
        want.cas_u += 3u;
        want.cas_ull += 5ull;
        want.add_block_i += 1;
        want.add_system_i += 2;
    }
    want.exch_i = 7;
    want.exch_u = 9u;
    want.exch_ull = 11ull;
    want.exch_f = 2.5f;
    want.inc_u = n % 7u; /* atomicInc(p, 6) counts 0..6 and wraps */
    int *din = device_copy(in, n * sizeof *in);
    atomic_results *dr = device_copy(&init, sizeof init);
    CHECK(k_atomics_all(din, dr, n, 128));
    CHECK(cudaMemcpy(&got, dr, sizeof got, cudaMemcpyDeviceToHost));
#define SAME(field, fmt) cr_expect(got.field == want.field, #field ": got " fmt ", want " fmt, got.field, want.field)
    SAME(add_i, "%d");
    SAME(sub_i, "%d");
    SAME(max_i, "%d");
    SAME(min_i, "%d");
    SAME(and_i, "%d");
    SAME(or_i, "%d");
    SAME(xor_i, "%d");
    SAME(exch_i, "%d");
    SAME(cas_i, "%d");
    SAME(add_block_i, "%d");
    SAME(add_system_i, "%d");
    SAME(add_u, "%u");
    SAME(max_u, "%u");
    SAME(min_u, "%u");
    SAME(and_u, "%u");
    SAME(or_u, "%u");
    SAME(xor_u, "%u");
    SAME(exch_u, "%u");
    SAME(cas_u, "%u");
    SAME(inc_u, "%u");
    SAME(add_ull, "%llu");
    SAME(max_ull, "%llu");
    SAME(min_ull, "%llu");
    SAME(and_ull, "%llu");
    SAME(or_ull, "%llu");
    SAME(xor_ull, "%llu");
    SAME(exch_ull, "%llu");
    SAME(cas_ull, "%llu");
    /* integer-valued sums below 2^24 (float) and 2^53 (double): exact in any order */
    SAME(add_f, "%g");
    SAME(exch_f, "%g");
    SAME(add_d, "%g");
#undef SAME
    cudaFree(din);
    cudaFree(dr);
    free(in);
}

// ------------------------------------------------------------ lambdas and templates

Test(lambdas, device_lambdas_and_deduced_template_kernels)
{
    const unsigned n = 1000;
    int *x = random_ints(n, -100000, 100000, 6);
    int *dx = device_copy(x, n * sizeof *x), *dy = device_poisoned(n * sizeof(int)),
        *dz = device_poisoned(n * sizeof(int));
    CHECK(k_lambdas(dx, dy, dz, n));
    int *y = malloc(n * sizeof *y), *z = malloc(n * sizeof *z);
    CHECK(cudaMemcpy(y, dy, n * sizeof *y, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(z, dz, n * sizeof *z, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (unsigned i = 0; i < n && bad < 5; ++i) {
        int wy = (3 * x[i] + 1) * 2, wz = x[i] - (int)i + 5;
        if (y[i] != wy || z[i] != wz) {
            ++bad;
            cr_expect_eq(y[i], wy, "map_kernel<lambda, 2>: y[%u] = %d, want %d", i, y[i], wy);
            cr_expect_eq(z[i], wz, "apply_kernel (deduced): z[%u] = %d, want %d", i, z[i], wz);
        }
    }
    cudaFree(dx);
    cudaFree(dy);
    cudaFree(dz);
    free(x);
    free(y);
    free(z);
}

// ------------------------------------------------------------ static __shared__ bounds

Test(shared_bounds, a_2d_tile_in_bounds_runs_clean, .init = cr_redirect_stderr)
{
    float *dout = device_poisoned(8 * 32 * sizeof(float)), out[8 * 32];
    CHECK(k_tile_rows(dout, 0, 1));
    CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
    for (unsigned i = 0; i < 8 * 32; ++i)
        cr_assert_eq(out[i], (float)(i % 32 + 33 * (i / 32)), "out[%u] = %g", i, (double)out[i]);
    cr_expect(strstr(captured_stderr(), "cml-cpu") == NULL, "no report: %s", captured_stderr());
}

/* The report of tile_rows_kernel<8>'s access one row past its tile, at the
 * marked line, by a thread of the last row (y = 7). */
static void expect_tile_report(const char *mark, const char *byte, const char *thread)
{
    char at[64];
    const char *text = captured_stderr();
    expect_in(text, "cml-cpu: out-of-bounds access to shared memory (__shared__ float tile[Rows][33], 1056 bytes): ");
    expect_in(text, byte);
    expect_in(text, "in kernel tile_rows_kernel<8>");
    expect_in(text, thread);
    expect_in(text, line_of(mark, at, sizeof at));
}

Test(shared_bounds, a_write_one_row_past_a_2d_tile_is_reported, .init = cr_redirect_stderr)
{
    float *dout = device_poisoned(8 * 32 * sizeof(float));
    cudaError_t err = k_tile_rows(dout, 1, 1);
    cr_assert_eq(err, cudaErrorIllegalAddress, "got %s", cudaGetErrorName(err));
    expect_tile_report("tile-write", "byte 0 past its end", "thread (0,7,0)");
}

Test(shared_bounds, a_read_one_row_past_a_2d_tile_is_reported, .init = cr_redirect_stderr)
{
    float *dout = device_poisoned(8 * 32 * sizeof(float));
    cudaError_t err = k_tile_rows(dout, 1, 0);
    cr_assert_eq(err, cudaErrorIllegalAddress, "got %s", cudaGetErrorName(err));
    /* after the barrier the last thread to arrive runs first: (31,7,0) reads
     * the last word of the row past the tile */
    expect_tile_report("tile-read", "past its end", ",7,0)");
}

Test(shared_bounds, a_3d_tile_one_plane_too_small_is_reported, .init = cr_redirect_stderr)
{
    int *dout = device_poisoned(64 * sizeof(int)), out[64];
    CHECK(k_tile_planes(dout, 3)); /* the three planes it has: clean */
    CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 64; ++i)
        cr_assert_eq(out[i], i < 48 ? i : -1, "out[%d] = %d", i, out[i]);
    cudaError_t err = k_tile_planes(dout, 4);
    cr_assert_eq(err, cudaErrorIllegalAddress, "got %s", cudaGetErrorName(err));
    char at[64];
    const char *text = captured_stderr();
    expect_in(text, "out-of-bounds access to shared memory (__shared__ int cube[3][4][4], 192 bytes): byte 0 past its end");
    expect_in(text, "in kernel tile_planes_kernel");
    expect_in(text, "thread (0,0,3)");
    expect_in(text, line_of("plane-write", at, sizeof at));
}
