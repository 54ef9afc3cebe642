/* shared_sort_run: check and time the steps of lab 09 next to a device copy
 * of the keys and CUB's radix and merge sorts, all measured in the same
 * run, and read steps 1 and 2's shared-memory bank conflicts with Nsight
 * Compute (--counters). Built twice: shared_sort_run (your
 * labs/09_shared_sort/shared_sort.cu) and shared_sort_run_ref (the
 * reference). `shared_sort_run --help` tells how to use it; the command
 * line, table and exit codes are the kit's runner library
 * (cml_lab_runner.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_args.h>
#include <cml/cml_check.h>
#include <cml/cml_lab_runner.h>
#include <cml/cml_timing.h>

#include "cub_anchor.h"
#include "shared_sort_host.h"

/* The CPU path emulates every CUDA thread: 20 tiles there (about a second
 * for step 2), 2^26 keys (256 MiB, far past L2) on a GPU. */
#ifdef CML_CPU_BACKEND
#define DEFAULT_N ((size_t)20 * SHARED_SORT_TILE + 77)
#define DEFAULT_N_TEXT "20557"
#else
#define DEFAULT_N ((size_t)1 << 26)
#define DEFAULT_N_TEXT "2^26"
#endif
#define DEFAULT_WIDTH ((size_t)4096)
/* Counters are read on 132 whole tiles: one wave of blocks on a 132-SM
 * H100 (as the spec's bank_conflict_counters case). */
#define COUNTER_N ((size_t)132 * SHARED_SORT_TILE)
#define KERNEL_FILTER "regex:sort_kernel"

typedef struct lab_data {
    size_t n, width;
    int n_given, few_keys;
    uint32_t *keys, *runs, *out;   /* host: the sort steps' keys, step 3's sorted runs, room for out */
    ss_buffers sort, merge;        /* device: one set for the sort steps, one for step 3 */
    char why[300];
} lab_data;

static int option(cml_lab_run *r, const char *opt, const char *value)
{
    lab_data *d = r->data;
    if (strcmp(opt, "--n") == 0) {
        if (!cml_parse_count(value, 1, (size_t)1 << 30, &d->n))
            cml_runner_bad_arg(&r->args, opt, value, "a count from 1 to 2^30, like 1000003, 2^26 or 64M");
        d->n_given = 1;
        return 2;
    }
    if (strcmp(opt, "--width") == 0) {
        if (!cml_parse_count(value, 1, (size_t)1 << 40, &d->width))
            cml_runner_bad_arg(&r->args, opt, value, "a run width from 1, like 4096 or 1M");
        return 2;
    }
    if (strcmp(opt, "--keys") == 0) {
        if (value && strcmp(value, "few") == 0)
            d->few_keys = 1;
        else if (value && strcmp(value, "full") == 0)
            d->few_keys = 0;
        else
            cml_runner_bad_arg(&r->args, opt, value, "full or few");
        return 2;
    }
    return 0;
}

static void release(cml_lab_run *r)
{
    lab_data *d = r->data;
    free(d->keys);
    free(d->runs);
    free(d->out);
    d->keys = d->runs = d->out = NULL;
    ss_buffers_free(&d->sort);
    ss_buffers_free(&d->merge);
}

static void data_alloc(cml_lab_run *r, size_t n)
{
    lab_data *d = r->data;
    d->n = n;
    d->keys = malloc(n * sizeof *d->keys);
    d->runs = malloc(n * sizeof *d->runs);
    d->out = malloc(n * sizeof *d->out);
    if (!d->keys || !d->runs || !d->out) {
        cml_lab_say(r, "out of host memory for three arrays of %zu keys", n);
        exit(CML_EXIT_FAIL);
    }
    ss_keys kind = d->few_keys ? SS_FEW_KEYS : SS_FULL_RANGE;
    ss_make_keys(d->keys, n, kind, r->seed, 0);
    ss_make_keys(d->runs, n, kind, r->seed, 1);
    ss_sort_runs(d->runs, n, d->width);
    CML_CHECK(ss_buffers_alloc(&d->sort, n, d->width, d->keys));
    CML_CHECK(ss_buffers_alloc(&d->merge, n, d->width, d->runs));
    r->ninputs = 0;
    cml_lab_watch_input(r, &d->sort.in, d->keys, "in");
    cml_lab_watch_input(r, &d->merge.in, d->runs, "in (step 3's runs)");
}

static ss_buffers *buffers_of(lab_data *d, int step)
{
    return step == SS_MERGE_STEP ? &d->merge : &d->sort;
}

static int prepare(cml_lab_run *r)
{
    lab_data *d = r->data;
    data_alloc(r, d->n);
    snprintf(r->rep.params, sizeof r->rep.params, "n = %zu %s keys, step 3 merges runs of %zu",
             d->n, d->few_keys ? "few (0..15)" : "full-range", d->width);
    return CML_EXIT_OK;
}

static cudaError_t poison(cml_lab_run *r, int step)
{
    return ss_poison(buffers_of(r->data, step));
}

static cudaError_t launch(cml_lab_run *r, int step)
{
    return ss_run_step(buffers_of(r->data, step), step);
}

/* After poison and a launch: out and the guards checked (ss_verify, as the
 * tests). The whole story goes to stderr; the note has its start. */
static int verify(cml_lab_run *r, int step, cml_row *row)
{
    lab_data *d = r->data;
    ss_result res;
    int ok = ss_verify(buffers_of(d, step), step, step == SS_MERGE_STEP ? d->runs : d->keys, d->out, &res);
    if (res.err != cudaSuccess) {
        cml_lab_row_error(row, "CUDA error", res.err);
        return 0;
    }
    row->status = ok ? CML_ROW_OK : CML_ROW_WRONG;
    char msg[1000];
    if (!res.guards_intact)
        snprintf(msg, sizeof msg, "%s", res.guard_msg);
    else if (res.check.wrong > 0)
        ss_describe(&res.check, msg, sizeof msg);
    if (!ok) {
        snprintf(row->note, sizeof row->note, "%.*s", (int)sizeof row->note - 1, msg);
        cml_lab_say(r, "step %d %s: %s", step, cml_lab_ident(r, step), msg);
    }
    return ok;
}

/* Every step reads its n keys and writes n: 8n bytes, the least any sort
 * moves (step 4 moves that once a merge pass, and once more for its tiles). */
static double work(const cml_lab_run *r, int step)
{
    (void)step;
    return 2.0 * sizeof(uint32_t) * (double)((const lab_data *)r->data)->n;
}

static size_t ceiling_bytes(const cml_lab_run *r)
{
    return ((const lab_data *)r->data)->n * sizeof(uint32_t);
}

/* The library anchors: CUB's two sorts on the sort steps' keys, checked as
 * step 4 is and timed like a step. */
typedef struct cub_job {
    ss_buffers *buf;
    int merge;
    void *temp;
    size_t temp_bytes;
} cub_job;

static cudaError_t run_cub(void *ctx)
{
    cub_job *j = ctx;
    const unsigned *in = (const unsigned *)j->buf->in.ptr;
    unsigned *out = (unsigned *)j->buf->out.ptr;
    return j->merge ? ss_cub_merge_sort(j->temp, &j->temp_bytes, in, out, j->buf->n)
                    : ss_cub_radix_sort(j->temp, &j->temp_bytes, in, out, j->buf->n);
}

static void cub_row(cml_lab_run *r, int merge)
{
    lab_data *d = r->data;
    cml_row *row = cml_report_add(&r->rep, CML_ROW_ANCHOR, 0,
                                  merge ? "CUB DeviceMergeSort::SortKeys" : "CUB DeviceRadixSort::SortKeys");
    cub_job j = {&d->sort, merge, NULL, 0};
    CML_CHECK(run_cub(&j)); /* with temp NULL: asks for the size */
    CML_CHECK(cudaMalloc(&j.temp, j.temp_bytes ? j.temp_bytes : 1));
    ss_result res;
    cudaError_t err = ss_poison(&d->sort);
    if (err == cudaSuccess)
        err = run_cub(&j);
    int ok = 0;
    if (err != cudaSuccess) {
        cml_lab_row_error(row, "CUDA error", err);
    } else {
        ok = ss_verify(&d->sort, 4, d->keys, d->out, &res);
        if (res.err != cudaSuccess)
            cml_lab_row_error(row, "CUDA error", res.err);
        else
            row->status = ok ? CML_ROW_OK : CML_ROW_WRONG;
    }
    if (ok) {
        cml_timing t;
        err = cml_time_median(run_cub, &j, 3, r->args.repeat, &t);
        if (err != cudaSuccess) {
            cml_lab_row_error(row, "CUDA error while timing", err);
        } else {
            row->timed = 1;
            row->ms = t.median_ms;
            row->rate = work(r, 4) / (t.median_ms * 1e6);
        }
    }
    cudaFree(j.temp);
}

static int anchors(cml_lab_run *r)
{
    cub_row(r, 0);
    cub_row(r, 1);
    return 0; /* the anchors are not the student's steps: they never fail the run */
}

/* --counters: check steps 1 and 2 on COUNTER_N keys (unless --n), then
 * read their shared-memory bank conflicts, a line each. */
static int counters(cml_lab_run *r, cml_lab_counters *out)
{
    static cml_ncu_counts c;
    lab_data *d = r->data;
    size_t n = d->n_given ? d->n : COUNTER_N;
    data_alloc(r, n);
    int wrong = 0, nsteps = 0;
    for (int s = 1; s <= SHARED_SORT_NUM_STEPS; ++s) {
        if (!cml_lab_selected(r, s))
            continue;
        ++nsteps;
        cml_row row;
        memset(&row, 0, sizeof row);
        if (!cml_lab_check(r, s, &row)) { /* says what is wrong on stderr */
            ++wrong;
            if (row.status == CML_ROW_ERROR)
                return CML_EXIT_FAIL; /* a sticky error: nothing more can run */
        }
    }
    release(r);
    char ns[32], ws[32];
    snprintf(ns, sizeof ns, "%zu", n);
    snprintf(ws, sizeof ws, "%zu", d->width);
    const char *args[] = {"--n", ns, "--width", ws, NULL};
    const char *metrics[] = {CML_NCU_SHARED_LD_CONFLICTS, CML_NCU_SHARED_ST_CONFLICTS};
    /* every selected step launches sort kernels except step 3 (no shared memory, filtered out) */
    int expected = nsteps - (cml_lab_selected(r, SS_MERGE_STEP) ? 1 : 0);
    out->available = expected > 0 && cml_lab_ncu(r, r->args.steps, args, metrics, 2, KERNEL_FILTER, expected, &c,
                                                 d->why, sizeof d->why);
    if (expected == 0)
        snprintf(d->why, sizeof d->why, "step 3 launches no sort kernel (it merges in global memory)");
    snprintf(out->reason, sizeof out->reason, "%s", d->why);
    int k = 0;
    for (int s = 1; s <= SHARED_SORT_NUM_STEPS && out->available; ++s) {
        if (!cml_lab_selected(r, s) || s == SS_MERGE_STEP)
            continue;
        double ld = c.value[k][0], st = c.value[k][1];
        cml_lab_counters_add(out, r, s, c.kernel[k], ld >= 0.0 ? ld : -1.0);
        ++k;
        if (r->args.json)
            continue;
        if (ld >= 0.0 && st >= 0.0)
            printf("step %d %s: shared-load bank conflicts %.0f, shared-store bank conflicts %.0f\n", s,
                   cml_lab_ident(r, s), ld, st);
        else
            printf("step %d %s: counters not available: ncu gave no value\n", s, cml_lab_ident(r, s));
    }
    return wrong ? CML_EXIT_FAIL : CML_EXIT_OK;
}

CML_LAB_STEP_TABLE(SHARED_SORT);

static const cml_lab_option options[] = {
    {"--n N", "keys (default " DEFAULT_N_TEXT ")"},
    {"--width W", "step 3's sorted runs (default 4096)"},
    {"--keys K", "full (default: 0..2^32-2, few repeats) or few (0..15)"},
};

static const cml_lab lab = {
    CML_LAB_IDENTITY(SHARED_SORT, "09_shared_sort", "shared_sort"),
    .title = "Sorting in shared memory",
    .usage = "[--step N|all|LIST] [--n N] [--width W] [--keys full|few] [--repeat N]\n"
             "       [--json] [--markdown FILE] [--check-only]\n"
             "       | --counters [--json] [--step ...] [--n N] | --list | --probe | --help",
    .about = "Checks each step's keys exactly against the CPU's sort, then times it (median\n"
             "of N runs after a warm-up) next to a device copy of the keys and CUB's\n"
             "DeviceRadixSort and DeviceMergeSort on the same keys, all measured in this\n"
             "run. --counters reads steps 1 and 2's shared-memory bank conflicts with\n"
             "Nsight Compute (on the CPU path: the emulator's bank counts).",
    .step_help = "steps to run: all (default), 2 or 1,4",
    CML_LAB_LIST(options, options),
    .check_only_help = "check each step once: no timing, no copy, no CUB (for compute-sanitizer and ncu)",
    .counters_help = "check the steps, then print one line of bank conflicts per\nsort step (on 135168 keys "
                     "unless --n says otherwise; with --json: as JSON)",
    .notes = "GB/s counts one read and one write of the keys, 2 * 4 * n bytes: the least\n"
             "any sort moves (a merge pass moves that much again). The CUB merge sort's\n"
             "time includes a copy of the keys into out (it sorts in place).\n"
             "Data are seeded: set CML_SEED to change them.",
    .option = option,
    CML_LAB_GPU_PART,
    .anchors = anchors,
    .counters = counters,
    .counters_metric = CML_NCU_SHARED_LD_CONFLICTS,
};

int main(int argc, char **argv)
{
    static lab_data d = {.n = DEFAULT_N, .width = DEFAULT_WIDTH};
    return cml_lab_main(&lab, &d, sizeof d, argc, argv);
}
