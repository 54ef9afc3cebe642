/* matmul_run: check and time the steps of lab 03 against cuBLAS SGEMM in
 * FP32 (TF32 off), measured in the same run on the same data. Built twice:
 * matmul_run (your labs/03_tiled_matmul/matmul.cu) and matmul_run_ref (the
 * reference). `matmul_run --help` tells how to use it; the command line,
 * table and exit codes are the kit's runner library (cml_lab_runner.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_args.h>
#include <cml/cml_check.h>
#include <cml/cml_lab_runner.h>
#include <cml/cml_timing.h>

#include "cublas_anchor.h"
#include "matmul_host.h"

#define STR_(x) #x
#define STR(x) STR_(x)

#ifdef CML_CPU_BACKEND
/* Without a GPU every thread is emulated: a product of 4096^3 would take
 * hours, so the CPU path checks and times a small, ragged one by default
 * (every step in well under a second on 2 cores). */
#define DEFAULT_M 129
#define DEFAULT_N 97
#define DEFAULT_K 67
#define ON_PATH " on the CPU path"
#define TRY_SIZES "--m 1 --n 33 --k 5"
#else
#define DEFAULT_M 4096
#define DEFAULT_N 4096
#define DEFAULT_K 4096
#define ON_PATH ""
#define TRY_SIZES "--m 4097 --n 3001 --k 2049"
#endif

#define ANCHOR_NAME "cuBLAS SGEMM, FP32 (TF32 off)"

typedef struct lab_data {
    int M, N, K;
    float *A, *B, *C;          /* seeded inputs, room for C */
    mm_buffers buf;
    mm_reference ref;
    double anchor_rate;        /* GFLOP/s of cuBLAS, when timed */
} lab_data;

static int option(cml_lab_run *r, const char *a, const char *v)
{
    lab_data *d = r->data;
    int *side = strcmp(a, "--m") == 0 ? &d->M : strcmp(a, "--n") == 0 ? &d->N : strcmp(a, "--k") == 0 ? &d->K : NULL;
    if (side == NULL)
        return 0;
    size_t n = 0;
    if (!cml_parse_count(v, 1, MATMUL_MAX_SIDE, &n))
        cml_runner_bad_arg(&r->args, a, v, "a count from 1 to 2^18, like 4096, 4097 or 2^12+1");
    *side = (int)n;
    return 2;
}

static void validate(cml_lab_run *r)
{
    lab_data *d = r->data;
    const long long lim = 1LL << 31;
    if ((long long)d->M * d->K >= lim || (long long)d->K * d->N >= lim || (long long)d->M * d->N >= lim) {
        cml_lab_say(r, "%d x %d x %d: each of M*K, K*N and M*N must stay below 2^31", d->M, d->N, d->K);
        exit(CML_EXIT_USAGE);
    }
}

static double work(const cml_lab_run *r, int step)
{
    const lab_data *d = r->data;
    (void)step;
    return 2.0 * d->M * (double)d->N * d->K;  /* a multiply and an add per term: GFLOP/s = work / ms / 1e6 */
}

/* The copy ceiling the library measures is no limit for a product that
 * reuses each element hundreds of times: a small one (finish drops its rows). */
static size_t ceiling_bytes(const cml_lab_run *r)
{
    (void)r;
    return (size_t)16 << 20;
}

static int prepare(cml_lab_run *r)
{
    lab_data *d = r->data;
    size_t na = (size_t)d->M * d->K, nb = (size_t)d->K * d->N, nc = (size_t)d->M * d->N;
    d->A = malloc(na * sizeof *d->A);
    d->B = malloc(nb * sizeof *d->B);
    d->C = malloc(nc * sizeof *d->C);
    if (d->A == NULL || d->B == NULL || d->C == NULL) {
        cml_lab_say(r, "out of host memory for a %d x %d x %d product", d->M, d->N, d->K);
        return CML_EXIT_FAIL;
    }
    mm_make_data(d->A, na, r->seed, 0);
    mm_make_data(d->B, nb, r->seed, 1);
    if (mm_reference_init(&d->ref, d->A, d->B, d->M, d->N, d->K, MM_FULL_CHECK_WORK, r->seed) != 0) {
        cml_lab_say(r, "out of host memory for the CPU reference");
        return CML_EXIT_FAIL;
    }
    CML_CHECK(mm_buffers_alloc(&d->buf, d->M, d->N, d->K));
    CML_CHECK(mm_upload(&d->buf, d->A, d->B));
    cml_lab_watch_input(r, &d->buf.a, d->A, "A");
    cml_lab_watch_input(r, &d->buf.b, d->B, "B");
    /* GFLOP for a GPU's sizes, MFLOP below one (the CPU path's: "0.0 GFLOP" said nothing) */
    int giga = work(r, 0) >= 1e9;
    snprintf(r->rep.params, sizeof r->rep.params,
             "C = A * B, M x N x K = %d x %d x %d floats (%.1f %s), checked: %s", d->M, d->N,
             d->K, work(r, 0) / (giga ? 1e9 : 1e6), giga ? "GFLOP" : "MFLOP",
             d->ref.full ? "every element" : "whole rows and columns");
    return CML_EXIT_OK;
}

/* Fills row from one checked run; returns 1 when correct. */
static int fill_row(cml_lab_run *r, const char *name, const mm_result *res, cml_row *row)
{
    if (res->err != cudaSuccess) {
        cml_lab_row_error(row, "CUDA error", res->err);
        cml_lab_say(r, "%s: %s. Likely cause: %s", name, cudaGetErrorString(res->err), mm_error_hint());
        return 0;
    }
    int ok = res->guards_intact && res->check.wrong == 0;
    row->status = ok ? CML_ROW_OK : CML_ROW_WRONG;
    if (!res->guards_intact) {
        snprintf(row->note, sizeof row->note, "%s", res->guard_msg);
        cml_lab_say(r, "%s: %s", name, res->guard_msg);
    }
    if (res->check.wrong > 0) {
        char msg[1400];
        mm_describe(&res->check, msg, sizeof msg);
        cml_lab_say(r, "%s: %s", name, msg);
        if (res->guards_intact)
            snprintf(row->note, sizeof row->note, "%.*s", (int)sizeof row->note - 1, msg);
    }
    return ok;
}

static cudaError_t poison(cml_lab_run *r, int step)
{
    (void)step;
    return mm_poison(&((lab_data *)r->data)->buf);
}

static int verify(cml_lab_run *r, int step, cml_row *row)
{
    lab_data *d = r->data;
    mm_result res;
    char name[64];
    mm_verify(&d->buf, &d->ref, d->C, &res);
    snprintf(name, sizeof name, "step %d %s", step, cml_lab_ident(r, step));
    return fill_row(r, name, &res, row);
}

static cudaError_t launch(cml_lab_run *r, int step)
{
    return mm_run_step(&((lab_data *)r->data)->buf, step);
}

/* The anchor: cuBLAS on the same buffers, checked and timed like a step. */
typedef struct anchor_job {
    mm_cublas *h;
    mm_buffers *buf;
} anchor_job;

static cudaError_t run_cublas(void *ctx)
{
    anchor_job *j = ctx;
    mm_buffers *b = j->buf;
    return mm_cublas_sgemm(j->h, (const float *)b->a.ptr, (const float *)b->b.ptr, (float *)b->c.ptr, b->M, b->N,
                           b->K);
}

static int anchors(cml_lab_run *r)
{
    lab_data *d = r->data;
    cml_row *row = cml_report_add(&r->rep, CML_ROW_ANCHOR, 0, ANCHOR_NAME);
    char why[160];
    anchor_job j = {mm_cublas_create(why, sizeof why), &d->buf};
    if (j.h == NULL) {
        snprintf(row->note, sizeof row->note, "not measured: %s", why);
        cml_lab_say(r, "%s not measured: %s", ANCHOR_NAME, why);
        return 0;
    }
    mm_result res;
    cudaError_t err = mm_poison(&d->buf);
    if (err == cudaSuccess)
        err = run_cublas(&j);
    if (err != cudaSuccess) {
        memset(&res, 0, sizeof res);
        res.err = err;
    } else {
        mm_verify(&d->buf, &d->ref, d->C, &res);
    }
    if (fill_row(r, ANCHOR_NAME, &res, row)) {
        cml_timing t;
        err = cml_time_median(run_cublas, &j, 3, r->args.repeat, &t);
        if (err != cudaSuccess) {
            cml_lab_row_error(row, "CUDA error while timing", err);
        } else {
            row->timed = 1;
            row->ms = t.median_ms;
            row->rate = work(r, 0) / (t.median_ms * 1e6);
            d->anchor_rate = row->rate;
        }
    }
    mm_cublas_destroy(j.h);
    return 0;  /* the anchor is not the student's step: it never fails the run */
}

static void release(cml_lab_run *r)
{
    lab_data *d = r->data;
    mm_buffers_free(&d->buf);
    mm_reference_free(&d->ref);
    free(d->A);
    free(d->B);
    free(d->C);
    d->A = d->B = d->C = NULL;
}

/* 100% is cuBLAS: the device-copy rows (GB/s, no limit for a product)
 * leave the table, and each timed step's note gives its ratio to cuBLAS
 * and to the step before it. */
static void finish(cml_lab_run *r)
{
    lab_data *d = r->data;
    int kept = 0;
    for (int i = 0; i < r->rep.nrows; ++i)
        if (r->rep.rows[i].kind != CML_ROW_CEILING)
            r->rep.rows[kept++] = r->rep.rows[i];
    r->rep.nrows = kept;
    r->have_ceiling = 0;
    r->rep.ceiling_rate = d->anchor_rate;
    snprintf(r->rep.ceiling_name, sizeof r->rep.ceiling_name, "%s", ANCHOR_NAME);
    double prev = 0.0;
    for (int i = 0; i < r->rep.nrows; ++i) {
        cml_row *row = &r->rep.rows[i];
        if (row->kind != CML_ROW_STEP || !row->timed)
            continue;
        size_t used = 0;
        if (d->anchor_rate > 0.0)
            used += (size_t)snprintf(row->note, sizeof row->note, "%.2fx cuBLAS", row->rate / d->anchor_rate);
        if (prev > 0.0 && used < sizeof row->note)
            snprintf(row->note + used, sizeof row->note - used, "%s%.2fx the step before", used ? ", " : "",
                     row->rate / prev);
        prev = row->rate;
    }
    static char extra_md[400], extra_json[200];
    if (d->anchor_rate > 0.0)
        snprintf(extra_md, sizeof extra_md,
                 "Notes: GFLOP/s counts 2 * M * N * K. 100%% is cuBLAS SGEMM with FP32 math "
                 "(CUBLAS_PEDANTIC_MATH: no TF32), measured in this run on the same data; each step's note "
                 "gives its ratio to cuBLAS and to the step timed before it.\n");
    else
        snprintf(extra_md, sizeof extra_md,
                 "Notes: GFLOP/s counts 2 * M * N * K. cuBLAS was not measured in this run, so the %% column "
                 "is empty.\n");
    r->rep.extra_markdown = extra_md;
    snprintf(extra_json, sizeof extra_json, "{\"m\": %d, \"n\": %d, \"k\": %d, \"cublas_gflops\": %.1f}", d->M,
             d->N, d->K, d->anchor_rate);
    r->rep.extra_json = extra_json;
}

/* Under the table: each step against cuBLAS and the step before. */
static void after_table(cml_lab_run *r)
{
    const lab_data *d = r->data;
    if (r->args.check_only || d->anchor_rate <= 0.0)
        return;
    printf("Each step against %s (%.0f GFLOP/s in this run):\n\n", ANCHOR_NAME, d->anchor_rate);
    printf("step  %-16s %10s %9s %12s\n", "kernel", "GFLOP/s", "x cuBLAS", "x step before");
    double prev = 0.0;
    for (int i = 0; i < r->rep.nrows; ++i) {
        const cml_row *row = &r->rep.rows[i];
        if (row->kind != CML_ROW_STEP || !row->timed)
            continue;
        char before[16] = "-";
        if (prev > 0.0)
            snprintf(before, sizeof before, "%.2f", row->rate / prev);
        printf("%4d  %-16s %10.0f %9.3f %12s\n", row->step, row->name, row->rate, row->rate / d->anchor_rate,
               before);
        prev = row->rate;
    }
    putchar('\n');
}

CML_LAB_STEP_TABLE(MATMUL);

static const cml_lab_option options[] = {
    {"--m M", "rows of A and C (default " STR(DEFAULT_M) ON_PATH ")"},
    {"--n N", "columns of B and C (default " STR(DEFAULT_N) ON_PATH ")"},
    {"--k K", "columns of A, rows of B (default " STR(DEFAULT_K) ON_PATH "); try\n" TRY_SIZES " too"},
};

static const cml_lab lab = {
    CML_LAB_IDENTITY(MATMUL, "03_tiled_matmul", "matmul"),
    .title = "tiled matrix multiply, C = A * B in FP32",
    .unit = "GFLOP/s",
    .usage = "[--step N|all|LIST] [--m M] [--n N] [--k K] [--repeat N] [--json]\n"
             "       [--markdown FILE] [--check-only] | --list | --probe | --help",
    .about = "Checks each step's C against a CPU reference in double, element by element\n"
             "within a bound that grows with K (every element up to 2^30 multiply-adds,\n"
             "else " STR(MM_SAMPLE_LINES) " whole rows and " STR(MM_SAMPLE_LINES) " whole columns), then times it (median of N\n"
             "runs after a warm-up) next to cuBLAS SGEMM in FP32 (TF32 off) on the same\n"
             "data, measured in this run. On the CPU path (no GPU) the times are emulated\n"
             "and no step is compared with cuBLAS.",
    .step_help = "steps to run: all (default), 3, 1,4,9 or 5-9",
    CML_LAB_LIST(options, options),
    .check_only_help = "check each step once: no timing, no cuBLAS\n(for compute-sanitizer)",
    .notes = "GFLOP/s counts 2 * M * N * K floating-point operations per product. cuBLAS\n"
             "runs with CUBLAS_PEDANTIC_MATH: FP32 on the CUDA cores, never TF32 tensor\n"
             "cores. Data are seeded, uniform in [-1, 1): set CML_SEED to change them.",
    .option = option,
    .validate = validate,
    CML_LAB_GPU_PART,
    .anchors = anchors,
    .finish = finish,
    .after_table = after_table,
#ifdef CML_CPU_BACKEND
    .table_note = "GFLOP/s counts 2 * M * N * K. The cuBLAS row is the CPU path's serial stand-in for cuBLAS\n"
                  "(it checks the anchor's wiring): its time says nothing about cuBLAS, and no step is\n"
                  "compared with it here.",
#endif
};

int main(int argc, char **argv)
{
    static lab_data d = {.M = DEFAULT_M, .N = DEFAULT_N, .K = DEFAULT_K};
    return cml_lab_main(&lab, &d, sizeof d, argc, argv);
}
