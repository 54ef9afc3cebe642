/* reduction_run: check and time the steps of lab 04 against the device-copy
 * bandwidth and CUB, measured in the same run. Built twice: reduction_run
 * (your labs/04_reduction/reduction.cu) and reduction_run_ref (the reference).
 * `reduction_run --help` tells how to use it; the command line, table and
 * exit codes are the kit's runner library (cml_lab_runner.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_args.h>
#include <cml/cml_check.h>
#include <cml/cml_lab_runner.h>
#include <cml/cml_rng.h>
#include <cml/cml_timing.h>

#include "cub_anchor.h"
#include "reduction_host.h"

/* The CPU path emulates every CUDA thread: about a million elements there
 * (seconds a step), not a GPU's 2^28 (hours). */
#ifdef CML_CPU_BACKEND
#define DEFAULT_N ((size_t)1000003)
#define DEFAULT_N_HELP "elements (default 1000003 on the CPU path); e.g. 33,\n2^20+1 or 4M"
#else
#define DEFAULT_N ((size_t)1 << 28)
#define DEFAULT_N_HELP "elements (default 2^28 = 1 GiB of ints, reduced to fit\nthe GPU); e.g. 1000003, 2^28+1, 64M"
#endif

typedef struct lab_data {
    size_t n;          /* --n, then what fits */
    int n_given;
    red_type type;
    red_buffers buf;
    red_reference ref;
    double first_ms, last_ms;  /* the first and last step timed */
} lab_data;

static int option(cml_lab_run *r, const char *a, const char *v)
{
    lab_data *d = r->data;
    if (strcmp(a, "--n") == 0) {
        if (!cml_parse_count(v, 1, (size_t)1 << 34, &d->n))
            cml_runner_bad_arg(&r->args, a, v, "a count from 1 to 2^34, like 1000003, 2^28+1 or 64M");
        d->n_given = 1;
        return 2;
    }
    if (strcmp(a, "--type") == 0) {
        if (v && strcmp(v, "int") == 0)
            d->type = RED_INT;
        else if (v && strcmp(v, "float") == 0)
            d->type = RED_FLOAT;
        else
            cml_runner_bad_arg(&r->args, a, v, "int or float");
        return 2;
    }
    return 0;
}

static size_t elem_size(const lab_data *d)
{
    return d->type == RED_INT ? sizeof(int) : sizeof(float);
}

/* n that fits: input plus a copy-ceiling pair of the same size, with room. */
static size_t fit_n(size_t n, size_t elem, int given)
{
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess || given)
        return n;
    while (n > ((size_t)1 << 20) && 3 * n * elem + ((size_t)512 << 20) > free_b)
        n /= 2;
    return n;
}

static int prepare(cml_lab_run *r)
{
    lab_data *d = r->data;
    size_t n = fit_n(d->n, elem_size(d), d->n_given);
    if (n != d->n)
        cml_lab_say(r, "using n = %zu so that the data fit in this GPU's free memory", n);
    d->n = n;
    size_t bytes = n * elem_size(d);
    void *host = malloc(bytes);
    if (host == NULL) {
        cml_lab_say(r, "out of host memory for %zu bytes", bytes);
        return CML_EXIT_FAIL;
    }
    if (d->type == RED_INT)
        red_make_ints((int *)host, n, r->seed, 0);
    else
        red_make_floats((float *)host, n, RED_REALS, r->seed, 0);
    red_reference_of(host, d->type, RED_REALS, n, &d->ref);
    CML_CHECK(red_buffers_alloc(&d->buf, d->type, n));
    CML_CHECK(red_upload(&d->buf, host));
    cml_lab_watch_input(r, &d->buf.in, host, "in");
    free(host);
    /* GiB for a GPU's sizes, MiB below one (the CPU path's million: "0.00 GiB" said nothing) */
    int gib = bytes >= ((size_t)1 << 30);
    snprintf(r->rep.params, sizeof r->rep.params, "n = %zu %s (%.2f %s read)", n,
             d->type == RED_INT ? "int" : "float", (double)bytes / (gib ? 1 << 30 : 1 << 20), gib ? "GiB" : "MiB");
    return CML_EXIT_OK;
}

/* Fills row from one checked run (red_verify after red_poison and a
 * launch: the shape red_run_checked gives the tests); returns 1 when
 * correct. */
static int fill_row(const red_result *res, cml_row *row)
{
    if (res->err != cudaSuccess) {
        cml_lab_row_error(row, "CUDA error", res->err);
        return 0;
    }
    row->status = res->ok ? CML_ROW_OK : CML_ROW_WRONG;
    if (!res->ok)
        snprintf(row->note, sizeof row->note, "%s", res->msg);
    return res->ok;
}

static cudaError_t poison(cml_lab_run *r, int step)
{
    (void)step;
    return red_poison(&((lab_data *)r->data)->buf);
}

static int verify(cml_lab_run *r, int step, cml_row *row)
{
    lab_data *d = r->data;
    red_result res;
    (void)step;
    red_verify(&d->buf, &d->ref, &res);
    return fill_row(&res, row);
}

static cudaError_t launch(cml_lab_run *r, int step)
{
    return red_run_step(&((lab_data *)r->data)->buf, step);
}

static double work(const cml_lab_run *r, int step)
{
    const lab_data *d = r->data;
    (void)step;
    return (double)(d->n * elem_size(d));
}

/* The library anchor: CUB on the same data, checked and timed like a step. */
typedef struct cub_job {
    red_buffers *buf;
    void *temp;
    size_t temp_bytes;
} cub_job;

static cudaError_t run_cub(void *ctx)
{
    cub_job *j = ctx;
    red_buffers *b = j->buf;
    if (b->type == RED_INT)
        return red_cub_sum_int(j->temp, &j->temp_bytes, (const int *)b->in.ptr, b->n, (int *)b->out.ptr);
    return red_cub_sum_float(j->temp, &j->temp_bytes, (const float *)b->in.ptr, b->n, (float *)b->out.ptr);
}

static int anchors(cml_lab_run *r)
{
    lab_data *d = r->data;
    cml_row *row = cml_report_add(&r->rep, CML_ROW_ANCHOR, 0, "CUB DeviceReduce::Sum");
    cub_job j = {&d->buf, NULL, 0};
    CML_CHECK(run_cub(&j));  /* with temp NULL: asks for the size */
    CML_CHECK(cudaMalloc(&j.temp, j.temp_bytes ? j.temp_bytes : 1));
    red_result res;
    red_run_checked_with(&d->buf, run_cub, &j, &d->ref, &res);
    int ok = fill_row(&res, row);
    if (ok) {
        cml_timing t;
        cudaError_t err = cml_time_median(run_cub, &j, 3, r->args.repeat, &t);
        if (err != cudaSuccess) {
            cml_lab_row_error(row, "CUDA error while timing", err);
        } else {
            row->timed = 1;
            row->ms = t.median_ms;
            row->rate = work(r, 0) / (t.median_ms * 1e6);
        }
    }
    cudaFree(j.temp);
    return 0;  /* the anchor is not the student's step: it never fails the run */
}

static void release(cml_lab_run *r)
{
    red_buffers_free(&((lab_data *)r->data)->buf);
}

static size_t ceiling_bytes(const cml_lab_run *r)
{
    return (size_t)work(r, 0);
}

/* --sweep: n elements read, bytes / element size. */
static int sweep_size(cml_lab_run *r, int step, double bytes)
{
    (void)step;
    lab_data *d = r->data;
    d->n = (size_t)(bytes / (double)elem_size(d));
    d->n_given = 1;
    return d->n >= 1;
}

static void after_table(cml_lab_run *r)
{
    double first = 0.0, last = 0.0;
    for (int i = 0; i < r->rep.nrows; ++i) {
        const cml_row *row = &r->rep.rows[i];
        if (row->kind == CML_ROW_STEP && row->timed) {
            if (first == 0.0)
                first = row->ms;
            last = row->ms;
        }
    }
    if (!r->args.check_only && first > 0.0 && last > 0.0)
        printf("Speed-up from the first to the last step timed: %.1fx\n", first / last);
}

CML_LAB_STEP_TABLE(REDUCTION);

static const cml_lab_option options[] = {
    {"--n COUNT", DEFAULT_N_HELP},
    {"--type T", "int (default; exact) or float (within a bound from n)"},
};

static const cml_lab lab = {
    CML_LAB_IDENTITY(REDUCTION, "04_reduction", "reduction"),
    .title = "parallel reduction, the sum of n elements",
    .usage = "[--step N|all|LIST] [--n COUNT] [--type int|float] [--repeat N]\n"
             "       [--json] [--markdown FILE] [--check-only] [--sweep [--sweep-max BYTES]]\n"
             "       | --list | --probe | --help",
    .about = "Checks each step's sum against a CPU reference, then times it (median of N\n"
             "runs after a warm-up) next to the device-copy bandwidth and CUB's\n"
             "DeviceReduce::Sum on the same data, all measured in this run.",
    .step_help = "steps to run: all (default), 3, 1,4,7 or 2-5",
    CML_LAB_LIST(options, options),
    .check_only_help = "check correctness only: no timing, no CUB, no copy\n(for compute-sanitizer)",
    .option = option,
    CML_LAB_GPU_PART,
    .anchors = anchors,
    .sweep_size = sweep_size,
#ifdef CML_CPU_BACKEND
    .table_note = "GB/s counts bytes read for the reductions and bytes read + written for the copies. The CUB\n"
                  "row is the CPU path's serial stand-in for CUB (it checks the anchor's wiring): its time says\n"
                  "nothing about CUB, and no step is compared with it here.",
#else
    .table_note = "GB/s counts bytes read for the reductions and bytes read + written for the copies.",
#endif
    .after_table = after_table,
};

int main(int argc, char **argv)
{
    static lab_data d = {.n = DEFAULT_N, .type = RED_INT};
    return cml_lab_main(&lab, &d, sizeof d, argc, argv);
}
