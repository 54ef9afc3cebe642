/* Host code may not touch device memory on the CPU path (as on a GPU): a
 * host read or write of a cudaMalloc pointer ends the process with one
 * line on stderr and exit status 87, before any launch, after one and
 * between two; kernels (dynamic shared memory, pointers inside a struct,
 * several worker threads, the race and bank checks; a launch that faults,
 * deadlocks, is cut off by the watchdog or is refused), cudaMemcpy in every
 * direction, cudaMemset and the cuBLAS and CUB stand-ins still work, and
 * leave the memory closed behind them.
 *
 * Each case runs in a child process (forked before anything of the runtime
 * starts in this test's process): the child does the work, checks its
 * results (a wrong one: "WRONG ..." and exit status 3), says which address
 * it is about to touch ("probe ..."), touches it, and must not live on. The
 * parent reads the child's stderr and its exit status. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <cublas_v2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../src/cml_cpu_internal.h"
#include "device_vars.h"
#include "host_access.h"
#include "kernels.h"

/* The status the runtime ends the process with after a host access. */
#define HOST_ACCESS_STATUS 87

// ------------------------------------------------------------ in the child

static void wrong(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "WRONG ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    _exit(3);
}

#define MUST(call)                                                                       \
    do {                                                                                 \
        cudaError_t must_err = (call);                                                   \
        if (must_err != cudaSuccess)                                                     \
            wrong("%s: %s", #call, cudaGetErrorString(must_err));                        \
    } while (0)

static void *dev_alloc(size_t bytes)
{
    void *d = NULL;
    MUST(cudaMalloc(&d, bytes));
    return d;
}

/* Reads (write 0) or writes (write 1) byte `offset` of the allocation at
 * base, of `bytes` bytes, from host code, after saying so on stderr. */
static void touch(void *base, size_t bytes, long offset, int write)
{
    volatile unsigned char *p = (volatile unsigned char *)base + offset;
    fprintf(stderr, "probe %s %p in %zu at %p\n", write ? "write" : "read", (void *)p, bytes, base);
    if (write)
        *p = 0x5a;
    else
        (void)*p;
}

/* n floats with no simple pattern, none zero, none all-ones. */
static void fill_floats(float *x, unsigned n, unsigned salt)
{
    for (unsigned i = 0; i < n; ++i)
        x[i] = (float)((i * 2654435761u + salt) % 2001u) - 1000.5f;
}

// ------------------------------------------------------------ the cases

enum { N = 1000, THREADS = 96 }; /* 1000 is not a multiple of 96 */

/* Launches scale_kernel on N floats and checks the answer (the kernel
 * read and wrote the memory). */
static float *scaled_on_device(void)
{
    float h[N], back[N];
    fill_floats(h, N, 17);
    float *d = dev_alloc(N * sizeof(float));
    MUST(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
    MUST(ha_scale(d, N, 2.0f, THREADS));
    MUST(cudaMemcpy(back, d, sizeof back, cudaMemcpyDeviceToHost));
    /* x * 2 + i: every term a small integer or half-integer, exact in float */
    for (unsigned i = 0; i < N; ++i)
        if (back[i] != h[i] * 2.0f + (float)i)
            wrong("scale: element %u is %g, want %g", i, back[i], h[i] * 2.0f + (float)i);
    return d;
}

static void read_before_any_launch(void)
{
    void *d = dev_alloc(4000);
    touch(d, 4000, 0, 0);
}

static void read_after_a_launch(void)
{
    float *d = scaled_on_device();
    touch(d, N * sizeof(float), (long)((N - 1) * sizeof(float)), 0);
}

static void write_after_a_launch(void)
{
    float *d = scaled_on_device();
    touch(d, N * sizeof(float), 12, 1);
}

/* The host "sums on the host" between two launches: it dies before the second. */
static void read_between_launches(void)
{
    float *d = scaled_on_device();
    touch(d, N * sizeof(float), 4 * 517, 0);
    MUST(ha_scale(d, N, 2.0f, THREADS));
    wrong("the second launch ran");
}

static void write_between_launches(void)
{
    float *d = scaled_on_device();
    touch(d, N * sizeof(float), 4 * 3, 1);
    MUST(ha_scale(d, N, 2.0f, THREADS));
    wrong("the second launch ran");
}

/* One byte past the payload and one before it: still device memory. */
static void read_past_the_end(void)
{
    float *d = scaled_on_device();
    touch(d, N * sizeof(float), (long)(N * sizeof(float)) + 5, 0);
}

static void write_before_the_start(void)
{
    float *d = scaled_on_device();
    touch(d, N * sizeof(float), -3, 1);
}

/* Every direction of cudaMemcpy, cudaMemset, then a host read. */
static void copies_and_sets(void)
{
    enum { M = 777 };
    int h[M], back[M];
    for (int i = 0; i < M; ++i)
        h[i] = (int)((unsigned)i * 40503u % 9973u) - 4986;
    int *a = dev_alloc(sizeof h), *b = dev_alloc(sizeof h);
    MUST(cudaMemcpy(a, h, sizeof h, cudaMemcpyHostToDevice));
    MUST(cudaMemcpy(b, a, sizeof h, cudaMemcpyDeviceToDevice));
    MUST(cudaMemcpy(back, b, sizeof back, cudaMemcpyDeviceToHost));
    for (int i = 0; i < M; ++i)
        if (back[i] != h[i])
            wrong("memcpy H2D, D2D, D2H: element %d is %d, want %d", i, back[i], h[i]);
    /* cudaMemcpyDefault, within one allocation (overlapping) and out */
    MUST(cudaMemcpy(b + 1, b, (M - 1) * sizeof(int), cudaMemcpyDefault));
    MUST(cudaMemcpyAsync(back, b, sizeof back, cudaMemcpyDefault, 0));
    for (int i = 1; i < M; ++i)
        if (back[i] != h[i - 1])
            wrong("memcpy default, overlapping: element %d is %d, want %d", i, back[i], h[i - 1]);
    /* part of a, from byte 5 to 3 bytes before the end */
    MUST(cudaMemset((char *)a + 5, 0xc3, sizeof h - 8));
    MUST(cudaMemsetAsync(a, 0x3c, 2, 0));
    unsigned char bytes[sizeof h], want[sizeof h];
    memcpy(want, h, sizeof h);
    memset(want + 5, 0xc3, sizeof h - 8);
    memset(want, 0x3c, 2);
    MUST(cudaMemcpy(bytes, a, sizeof bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < sizeof h; ++i)
        if (bytes[i] != want[i])
            wrong("memset: byte %zu is 0x%02x, want 0x%02x", i, bytes[i], want[i]);
    touch(a, sizeof h, 100, 0);
}

/* C = A * B (column-major) through the cuBLAS stand-in. Small integers:
 * every product and sum is exact in float and double, so the answer is
 * compared exactly. */
static void cublas_then_read(void)
{
    enum { m = 5, n = 3, k = 7 };
    float A[m * k], B[k * n], C[m * n];
    for (int i = 0; i < m * k; ++i)
        A[i] = (float)(i % 7 - 3);
    for (int i = 0; i < k * n; ++i)
        B[i] = (float)(i % 5 - 2);
    float *dA = dev_alloc(sizeof A), *dB = dev_alloc(sizeof B), *dC = dev_alloc(sizeof C);
    MUST(cudaMemcpy(dA, A, sizeof A, cudaMemcpyHostToDevice));
    MUST(cudaMemcpy(dB, B, sizeof B, cudaMemcpyHostToDevice));
    MUST(cudaMemset(dC, 0, sizeof C));
    cublasHandle_t handle;
    if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS)
        wrong("cublasCreate");
    const float alpha = 1.0f, beta = 0.0f;
    if (cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &alpha, dA, m, dB, k, &beta, dC, m) !=
        CUBLAS_STATUS_SUCCESS)
        wrong("cublasSgemm failed");
    if (cublasDestroy(handle) != CUBLAS_STATUS_SUCCESS)
        wrong("cublasDestroy");
    MUST(cudaMemcpy(C, dC, sizeof C, cudaMemcpyDeviceToHost));
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
            float s = 0.0f;
            for (int p = 0; p < k; ++p)
                s += A[p * m + i] * B[j * k + p];
            if (C[j * m + i] != s)
                wrong("sgemm: C(%d,%d) is %g, want %g", i, j, C[j * m + i], s);
        }
    touch(dC, sizeof C, 8, 0);
}

static void cub_then_write(void)
{
    enum { M = 1234 };
    int h[M];
    long long want = 0;
    for (int i = 0; i < M; ++i) {
        h[i] = (int)((unsigned)i * 7919u % 2003u) - 1000;
        want += h[i];
    }
    int *in = dev_alloc(sizeof h), *out = dev_alloc(sizeof(int));
    MUST(cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice));
    MUST(ha_cub_sum(in, out, M));
    int got = 0;
    MUST(cudaMemcpy(&got, out, sizeof got, cudaMemcpyDeviceToHost));
    if (got != want)
        wrong("cub sum is %d, want %lld", got, want);
    touch(in, sizeof h, 4 * 1000, 1);
}

/* The sort stand-ins (lab 09's CUB anchor): keys with duplicates and the
 * largest key, both sorts right, and device memory closed again after. */
static void cub_sorts_then_read(void)
{
    enum { M = 3001 };
    unsigned h[M], got[M], got2[M], count[64] = {0};
    for (int i = 0; i < M; ++i) {
        h[i] = i % 97 == 0 ? 0xffffffffu : (unsigned)i * 2654435761u % 61u; /* 0..60 many times, and UINT_MAX */
        ++count[h[i] == 0xffffffffu ? 63 : h[i]];
    }
    unsigned *in = dev_alloc(sizeof h), *out = dev_alloc(sizeof h), *out2 = dev_alloc(sizeof h);
    MUST(cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice));
    MUST(ha_cub_sorts(in, out, out2, M));
    MUST(cudaMemcpy(got, out, sizeof got, cudaMemcpyDeviceToHost));
    MUST(cudaMemcpy(got2, out2, sizeof got2, cudaMemcpyDeviceToHost));
    int at = 0;
    for (unsigned key = 0; key < 64; ++key) /* the sorted keys, from the counts */
        for (unsigned c = 0; c < count[key]; ++c, ++at) {
            unsigned want = key == 63 ? 0xffffffffu : key;
            if (got[at] != want)
                wrong("radix sort: out[%d] is %u, want %u", at, got[at], want);
            if (got2[at] != want)
                wrong("merge sort: out[%d] is %u, want %u", at, got2[at], want);
        }
    touch(out2, sizeof h, 4 * 1000, 0);
}

/* Dynamic shared memory, pointers inside a struct, several worker threads
 * (CML_CPU_THREADS=3, set before the runtime starts) and many blocks. */
static void struct_pointers_on_workers(void)
{
    enum { M = 5003, T = 64 };
    static int h[M], back[M];
    for (int i = 0; i < M; ++i)
        h[i] = (int)((unsigned)i * 48271u % 30011u) - 15000;
    int *in = dev_alloc(sizeof h), *out = dev_alloc(sizeof h);
    MUST(cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice));
    MUST(cudaMemset(out, 0xa5, sizeof h));
    MUST(ha_through_struct(in, out, M, T));
    MUST(cudaMemcpy(back, out, sizeof back, cudaMemcpyDeviceToHost));
    for (int i = 0; i < M; ++i) {
        int block = i / T * T, j = block + (i - block + T - 1) % T;
        int v = j < M ? h[j] : 0;
        if (back[i] != 3 * v + 1)
            wrong("struct kernel: element %d is %d, want %d", i, back[i], 3 * v + 1);
    }
    touch(out, sizeof h, 4 * 4999, 0);
}

/* A launch that faults (out of bounds: element M of M, M * 4 a multiple of
 * 256, so on the guard page) comes back through the fault's escape: memory
 * closed again. */
static void after_a_faulting_launch(void)
{
    enum { M = 192 };
    int *d = dev_alloc(M * sizeof(int));
    cudaError_t err = k_past_the_end(d, M, 32);
    if (err != cudaErrorIllegalAddress)
        wrong("k_past_the_end returned %s, want cudaErrorIllegalAddress", cudaGetErrorName(err));
    touch(d, M * sizeof(int), 4, 0);
}

/* A launch that deadlocks (the scheduler gives up on the block). */
static void after_a_deadlock(void)
{
    int *d = dev_alloc(64 * sizeof(int));
    cudaError_t err = k_divergent_barrier(d, 2);
    if (err != cudaErrorLaunchFailure)
        wrong("k_divergent_barrier returned %s, want cudaErrorLaunchFailure", cudaGetErrorName(err));
    touch(d, 64 * sizeof(int), 0, 1);
}

/* A launch the watchdog cuts off (a spin that never ends; CML_CPU_WATCHDOG
 * set to half a second before the runtime starts). */
static void after_the_watchdog(void)
{
    int *d = dev_alloc(2 * sizeof(int));
    cudaError_t err = k_spin(d);
    if (err != cudaErrorLaunchTimeout)
        wrong("k_spin returned %s, want cudaErrorLaunchTimeout", cudaGetErrorName(err));
    touch(d, 2 * sizeof(int), 4, 1);
}

/* A launch refused before it runs (2000 threads a block, over the limit;
 * a grid of 0 blocks): nothing opened, nothing left open. */
static void after_a_refused_launch(void)
{
    float *d = scaled_on_device();
    /* a refused launch is not sticky: the synchronize after it succeeds */
    MUST(ha_scale(d, N, 1.0f, 2000));
    cudaError_t err = cudaGetLastError();
    if (err != cudaErrorInvalidConfiguration)
        wrong("a 2000-thread launch gave %s, want cudaErrorInvalidConfiguration", cudaGetErrorName(err));
    /* 0 elements: (0 + THREADS - 1) / THREADS = 0 blocks, refused as CUDA 13 does */
    MUST(ha_scale(d, 0, 1.0f, THREADS));
    err = cudaGetLastError();
    if (err != cudaErrorInvalidValue)
        wrong("a launch of 0 blocks gave %s, want cudaErrorInvalidValue", cudaGetErrorName(err));
    touch(d, N * sizeof(float), 40, 0);
}

/* Under the race check and the bank counts (the kernels' accesses go
 * through the checks' callbacks), with the right answers. */
static void under_the_checks(void)
{
    enum { B = 3, T = 100 };
    int h[B * T], back[B * T];
    for (int i = 0; i < B * T; ++i)
        h[i] = (int)((unsigned)i * 69069u % 1999u) - 999;
    int *in = dev_alloc(sizeof h), *out = dev_alloc(sizeof h);
    MUST(cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice));
    cml_cpu_check_set_mode(CML_CPU_CHECK_RACE | CML_CPU_CHECK_BANKS);
    MUST(k_neighbour(in, out, 1, B, T));
    MUST(cudaMemcpy(back, out, sizeof back, cudaMemcpyDeviceToHost));
    for (int b = 0; b < B; ++b)
        for (int t = 0; t < T; ++t)
            if (back[b * T + t] != h[b * T + t] + h[b * T + (t + 1) % T])
                wrong("neighbour under the checks: element %d", b * T + t);
    if (cml_cpu_race_hazards() != 0)
        wrong("the race-free neighbour kernel reported a hazard");
    touch(out, sizeof h, 4 * 250, 1);
}

// ------------------------------------------------------------ __device__ and __constant__ variables

/* A kernel writes a __device__ array (from a __constant__ array's
 * initializer and a __device__ function too); cudaMemcpyFromSymbol reads
 * it back. */
static void device_array_written_and_read_back(void)
{
    float *in = dev_alloc(DV_N * sizeof(float)), h[DV_N], back[DV_N];
    fill_floats(h, DV_N, 29);
    MUST(cudaMemcpy(in, h, sizeof h, cudaMemcpyHostToDevice));
    MUST(dv_fill(in, DV_N, THREADS));
    MUST(dv_read_back(back, DV_N));
    /* 2x is an integer, the taps multiples of 1/8: every sum exact */
    for (unsigned i = 0; i < DV_N; ++i)
        if (back[i] != 2.0f * h[i] + dv_coef_host((int)(i % 7)))
            wrong("dv_data[%u] is %g, want %g", i, back[i], 2.0f * h[i] + dv_coef_host((int)(i % 7)));
    dv_host_touch(DV_READ_DATA);
}

/* cudaMemcpyToSymbol with an offset (77 ints in, 123 of them), then a
 * kernel reads the whole array: the window where it was put, zeros around. */
static void symbol_copy_at_an_offset(void)
{
    enum { FIRST = 77, COUNT = 123 };
    int h[COUNT], back[DV_WINDOW];
    for (int i = 0; i < COUNT; ++i)
        h[i] = (int)((unsigned)i * 2246822519u % 4099u) - 2049;
    int *out = dev_alloc(sizeof back);
    MUST(dv_window_upload(h, COUNT, FIRST, out, DV_WINDOW));
    MUST(cudaMemcpy(back, out, sizeof back, cudaMemcpyDeviceToHost));
    for (int i = 0; i < DV_WINDOW; ++i) {
        int v = i >= FIRST && i < FIRST + COUNT ? h[i - FIRST] : 0;
        if (back[i] != 5 * v + 3)
            wrong("window[%d] gave %d, want %d", i, back[i], 5 * v + 3);
    }
    if (dv_window_upload_past_the_end(h) != cudaErrorInvalidValue)
        wrong("a symbol copy past the variable's end was not refused");
    dv_host_touch(DV_WRITE_COEF);
}

/* Initialisers: a __constant__ array, doubles in an anonymous namespace, a
 * static int, a __device__ __constant__ long long in a namespace, a null
 * pointer; all seen by a template kernel. */
static void initial_values_in_a_kernel(void)
{
    float *out = dev_alloc(32 * sizeof(float)), back[32];
    MUST(dv_initial(out));
    MUST(cudaMemcpy(back, out, sizeof back, cudaMemcpyDeviceToHost));
    const float want[13] = {dv_coef_host(0), dv_coef_host(1), dv_coef_host(2), dv_coef_host(3), dv_coef_host(4),
                            dv_coef_host(5), dv_coef_host(6), 0.5f, -1.25f, 2.0f, 41.0f, -7000.0f, 1.0f};
    for (int i = 0; i < 13; ++i)
        if (back[i] != want[i])
            wrong("initial value %d is %g, want %g", i, back[i], want[i]);
    dv_host_touch(DV_READ_NS);
}

/* atomicInc on a __device__ unsigned from every thread of 7 blocks. */
static void tickets_from_every_thread(void)
{
    unsigned last = 0, count = 0;
    MUST(dv_tickets(7, THREADS, &last, &count));
    if (last != 7 * THREADS || count != 7 * THREADS)
        wrong("tickets: the last taker saw %u, the variable holds %u, want %u", last, count, 7 * THREADS);
    dv_host_touch(DV_READ_TICKET);
}

/* cudaGetSymbolAddress: the address to a kernel, to a D2D cudaMemcpy and
 * cudaMemset; host code then reads through such an address. */
static void through_the_symbol_address(void)
{
    enum { M = DV_PAIRS - 3 };
    struct {
        int a;
        float b;
    } back[M];
    float b[M];
    for (int i = 0; i < M; ++i)
        b[i] = (float)((i * 7 + 3) % 41) - 20.0f;
    void *out = dev_alloc(sizeof back);
    MUST(dv_pairs_by_address(b, out, M));
    MUST(cudaMemcpy(back, out, sizeof back, cudaMemcpyDeviceToHost));
    for (int i = 0; i < M; ++i)
        if (back[i].a != i * 37 - 50 || back[i].b != b[i] * 0.5f + (float)i)
            wrong("pair %d is {%d, %g}, want {%d, %g}", i, back[i].a, back[i].b, i * 37 - 50, b[i] * 0.5f + (float)i);
    float cleared[2 * M];
    MUST(dv_pairs_read(cleared, M));
    for (int i = 0; i < 2 * M; ++i)
        if (cleared[i] != 0.0f)
            wrong("cudaMemset left word %d of the pairs at %g", i, cleared[i]);
    dv_host_touch(DV_READ_DEVICE_ADDRESS);
}

static void read_past_a_variable(void)
{
    MUST(dv_initial(dev_alloc(32 * sizeof(float))));
    dv_host_touch(DV_READ_PAST_DATA);
}

/* Before any CUDA call: the variables are closed from the program's start. */
static void write_before_any_call(void) { dv_host_touch(DV_WRITE_ANON); }

/* What a GPU refuses stays refused: cudaMemcpy to the variable's name (not
 * a device pointer) and the name as a kernel's pointer argument. */
static void the_name_is_no_device_pointer(void)
{
    float one = 1.0f;
    cudaError_t err = dv_memcpy_to_the_name(&one);
    if (err != cudaErrorInvalidValue)
        wrong("cudaMemcpy to a variable's name gave %s, want cudaErrorInvalidValue", cudaGetErrorName(err));
    err = dv_name_as_kernel_argument();
    if (err != cudaErrorIllegalAddress)
        wrong("a variable's name as a kernel argument gave %s, want cudaErrorIllegalAddress", cudaGetErrorName(err));
    dv_host_touch(DV_READ_DATA);
}

// ------------------------------------------------------------ in the parent

typedef struct outcome {
    int exited, status, signal;
    char err[8192];
} outcome;

/* Runs fn in a child with stderr captured (env: NAME=VALUE or NULL). */
static outcome run_child(void (*fn)(void), const char *env)
{
    outcome o;
    memset(&o, 0, sizeof o);
    int fds[2];
    cr_assert_eq(pipe(fds), 0, "pipe");
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_neq(pid, -1, "fork");
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        close(fds[1]);
        if (env != NULL)
            putenv((char *)env);
        fn();
        fprintf(stderr, "SURVIVED\n");
        _exit(0);
    }
    close(fds[1]);
    size_t have = 0;
    ssize_t got;
    while ((got = read(fds[0], o.err + have, sizeof o.err - 1 - have)) > 0)
        have += (size_t)got;
    o.err[have] = '\0';
    close(fds[0]);
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid, "waitpid");
    o.exited = WIFEXITED(st);
    o.status = o.exited ? WEXITSTATUS(st) : -1;
    o.signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
    return o;
}

/* The child must have died of its probe with the one-line report, the
 * address and the allocation of the probe, and `place` ("inside a ...",
 * "... bytes past the end of a ..."); decl: the __device__ or __constant__
 * variable the probe touches, NULL for cudaMalloc memory. */
static void expect_death_in(void (*fn)(void), const char *env, const char *place_fmt, long place_bytes,
                            const char *decl)
{
    outcome o = run_child(fn, env);
    cr_assert(strstr(o.err, "WRONG ") == NULL, "the work before the probe went wrong:\n%s", o.err);
    const char *probe = strstr(o.err, "probe ");
    cr_assert_not_null(probe, "the child never reached its probe (status %d, signal %d):\n%s", o.status, o.signal,
                       o.err);
    char how[8];
    void *at = NULL, *base = NULL;
    size_t bytes = 0;
    cr_assert_eq(sscanf(probe, "probe %7s %p in %zu at %p", how, &at, &bytes, &base), 4, "%s", probe);
    int write = strcmp(how, "write") == 0;
    cr_assert(o.exited && o.status == HOST_ACCESS_STATUS,
              "the host %s should end the process with status %d; it %s %d:\n%s", how, HOST_ACCESS_STATUS,
              o.exited ? "exited with" : "was killed by signal", o.exited ? o.status : o.signal, o.err);
    char place[200], what[300], want[700];
    snprintf(place, sizeof place, place_fmt, place_bytes);
    if (decl != NULL)
        snprintf(what, sizeof what, "%s (%zu bytes)", decl, bytes);
    else
        snprintf(what, sizeof what, "a %zu-byte cudaMalloc allocation", bytes);
    snprintf(want, sizeof want, "cml-cpu: host code %s device memory at %p (%s %s at %p)", write ? "wrote to" : "read",
             at, place, what, base);
    const char *line = strstr(o.err, "cml-cpu: host code");
    cr_assert_not_null(line, "no report:\n%s", o.err);
    cr_assert(strncmp(line, want, strlen(want)) == 0, "the report should start\n  %s\nit reads:\n%s", want, o.err);
    char tail[300];
    if (decl != NULL)
        snprintf(tail, sizeof tail,
                 ": a GPU's __device__ and __constant__ variables are not %s from the host; copy with "
                 "cudaMemcpyToSymbol or cudaMemcpyFromSymbol, or do the work in a kernel\n",
                 write ? "writable" : "readable");
    else
        snprintf(tail, sizeof tail,
                 ": a GPU's memory is not %s from the host; copy it with cudaMemcpy, or do the work in a kernel\n",
                 write ? "writable" : "readable");
    const char *end = strchr(line, '\n');
    cr_assert(end != NULL && (size_t)(end + 1 - line) >= strlen(tail) &&
                  strncmp(end + 1 - strlen(tail), tail, strlen(tail)) == 0,
              "the report should be one line ending \"%s\"; it reads:\n%s", tail, o.err);
    cr_assert(strstr(end, "cml-cpu: host code") == NULL && strstr(o.err, "SURVIVED") == NULL,
              "one report, and nothing after it:\n%s", o.err);
}

static void expect_death(void (*fn)(void), const char *env, const char *place_fmt, long place_bytes)
{
    expect_death_in(fn, env, place_fmt, place_bytes, NULL);
}

#define INSIDE "inside"

Test(host_access, read_before_any_launch_dies) { expect_death(read_before_any_launch, NULL, INSIDE, 0); }
Test(host_access, read_after_a_launch_dies) { expect_death(read_after_a_launch, NULL, INSIDE, 0); }
Test(host_access, write_after_a_launch_dies) { expect_death(write_after_a_launch, NULL, INSIDE, 0); }
Test(host_access, read_between_launches_dies) { expect_death(read_between_launches, NULL, INSIDE, 0); }
Test(host_access, write_between_launches_dies) { expect_death(write_between_launches, NULL, INSIDE, 0); }
Test(host_access, read_past_the_end_dies)
{
    /* payload ends at 4000; byte 4005 is 5 past its end */
    expect_death(read_past_the_end, NULL, "%ld bytes past the end of", 5);
}
Test(host_access, write_before_the_start_dies)
{
    expect_death(write_before_the_start, NULL, "%ld bytes before", 3);
}
Test(host_access, memcpy_in_every_direction_and_memset_work_and_close_again)
{
    expect_death(copies_and_sets, NULL, INSIDE, 0);
}
Test(host_access, the_cublas_stand_in_works_and_closes_again) { expect_death(cublas_then_read, NULL, INSIDE, 0); }
Test(host_access, the_cub_stand_in_works_and_closes_again) { expect_death(cub_then_write, NULL, INSIDE, 0); }
Test(host_access, the_cub_sort_stand_ins_sort_and_close_again) { expect_death(cub_sorts_then_read, NULL, INSIDE, 0); }
Test(host_access, kernels_reach_pointers_in_structs_on_every_worker)
{
    expect_death(struct_pointers_on_workers, "CML_CPU_THREADS=3", INSIDE, 0);
}
Test(host_access, a_faulting_launch_closes_again) { expect_death(after_a_faulting_launch, NULL, INSIDE, 0); }
Test(host_access, a_deadlocked_launch_closes_again) { expect_death(after_a_deadlock, NULL, INSIDE, 0); }
Test(host_access, a_launch_cut_off_by_the_watchdog_closes_again)
{
    expect_death(after_the_watchdog, "CML_CPU_WATCHDOG=0.5", INSIDE, 0);
}
Test(host_access, a_refused_launch_leaves_memory_closed) { expect_death(after_a_refused_launch, NULL, INSIDE, 0); }
Test(host_access, launches_under_the_race_and_bank_checks_work_and_close_again)
{
    expect_death(under_the_checks, NULL, INSIDE, 0);
}

Test(device_vars, a_kernel_writes_a_device_array_and_cudaMemcpyFromSymbol_reads_it)
{
    expect_death_in(device_array_written_and_read_back, "CML_CPU_THREADS=3", INSIDE, 0,
                    "__device__ float dv_data[DV_N]");
}
Test(device_vars, cudaMemcpyToSymbol_at_an_offset_reaches_the_kernel)
{
    expect_death_in(symbol_copy_at_an_offset, NULL, INSIDE, 0, "__constant__ float dv_coef[DV_TAPS]");
}
Test(device_vars, initialised_variables_have_their_values_in_kernels)
{
    expect_death_in(initial_values_in_a_kernel, NULL, INSIDE, 0, "__constant__ long long dv_ns");
}
Test(device_vars, atomicInc_on_a_device_scalar_counts_every_thread)
{
    expect_death_in(tickets_from_every_thread, "CML_CPU_THREADS=3", INSIDE, 0, "__device__ unsigned int dv_ticket");
}
Test(device_vars, the_symbol_address_works_in_kernels_memcpy_and_memset)
{
    expect_death_in(through_the_symbol_address, NULL, INSIDE, 0, "__device__ float dv_data[DV_N]");
}
Test(device_vars, a_host_read_past_a_variable_dies)
{
    expect_death_in(read_past_a_variable, NULL, "%ld bytes past the end of", 8, "__device__ float dv_data[DV_N]");
}
Test(device_vars, a_host_write_before_any_cuda_call_dies)
{
    expect_death_in(write_before_any_call, NULL, INSIDE, 0, "__device__ double dv_anon[3]");
}
Test(device_vars, the_name_is_no_device_pointer_as_on_a_gpu)
{
    expect_death_in(the_name_is_no_device_pointer, NULL, INSIDE, 0, "__device__ float dv_data[DV_N]");
}
