/* transpose_run: check and time the steps of lab 06 next to the lab's own
 * copy (step 1) and cudaMemcpy device to device, measured in the same run,
 * and read each step's shared-memory bank conflicts with Nsight Compute.
 * Built twice: transpose_run (your labs/06_transpose/transpose.cu) and
 * transpose_run_ref (the reference). `transpose_run --help` tells how to
 * use it; the command line, table and exit codes are the kit's runner
 * library (cml_lab_runner.h). */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_args.h>
#include <cml/cml_check.h>
#include <cml/cml_lab_runner.h>

#include "transpose_host.h"

/* The CPU path emulates every CUDA thread: a ragged 1001 x 777 there
 * (seconds a step), not 8192 x 8192 (many minutes). */
#ifdef CML_CPU_BACKEND
#define DEFAULT_ROWS 1001
#define DEFAULT_COLS 777
#else
#define DEFAULT_ROWS 8192
#define DEFAULT_COLS 8192
#endif
/* Counters are read at this size: 8 x 33 = 264 tiles of 32 x 32, one wave
 * of blocks on a 132-SM H100 (two 1024-thread blocks per SM). With later
 * waves, a block's shared loads overlap the next blocks' global loads, which
 * land in the same SRAM, and ncu counts those stalls as bank conflicts too:
 * a few thousand that would blur the count of the access pattern itself.
 * The count for the plain tile is exact: 264 tiles x 32 warps x 31 extra
 * passes = 261,888. */
#define COUNTER_ROWS 256
#define COUNTER_COLS 1056
#define STR_(x) #x
#define STR(x) STR_(x)
/* The lab's kernels are named transpose_kernel...; the kit's fill kernels
 * and the device probe are left out of the counters. */
#define KERNEL_FILTER "regex:transpose_kernel"

/* Bank conflicts of one step, as ncu counted them. */
typedef struct step_counts {
    int have;
    double ld, st;
    char kernel[64];
} step_counts;

typedef struct lab_data {
    int rows, cols;
    int rows_given, cols_given;
    float *in, *out;          /* seeded in, room for out */
    tr_buffers buf;
    step_counts counts[TRANSPOSE_NUM_STEPS + 1];
    int have_counts;
    char why[300];            /* why not, when !have_counts */
    double copy_rate;         /* step 1's rate, when timed */
} lab_data;

static int option(cml_lab_run *r, const char *a, const char *v)
{
    lab_data *d = r->data;
    int *side = strcmp(a, "--rows") == 0 ? &d->rows : strcmp(a, "--cols") == 0 ? &d->cols : NULL;
    if (side == NULL)
        return 0;
    size_t n = 0;
    if (!cml_parse_count(v, 1, INT_MAX, &n))
        cml_runner_bad_arg(&r->args, a, v, "a count from 1 to 2^31-1, like 8191, 2^13 or 16K");
    *side = (int)n;
    *(side == &d->rows ? &d->rows_given : &d->cols_given) = 1;
    return 2;
}

static void data_alloc(cml_lab_run *r, int rows, int cols)
{
    lab_data *d = r->data;
    size_t n = (size_t)rows * (size_t)cols;
    d->rows = rows;
    d->cols = cols;
    d->in = malloc(n * sizeof *d->in);
    d->out = malloc(n * sizeof *d->out);
    if (d->in == NULL || d->out == NULL) {
        cml_lab_say(r, "out of host memory for two %d x %d matrices", rows, cols);
        exit(CML_EXIT_FAIL);
    }
    tr_make_data(d->in, n, r->seed, 0);
    CML_CHECK(tr_buffers_alloc(&d->buf, rows, cols));
    CML_CHECK(tr_upload(&d->buf, d->in));
    r->ninputs = 0;
    cml_lab_watch_input(r, &d->buf.in, d->in, "in");
}

static void release(cml_lab_run *r)
{
    lab_data *d = r->data;
    free(d->in);
    free(d->out);
    d->in = d->out = NULL;
    tr_buffers_free(&d->buf);
}

static double work(const cml_lab_run *r, int step)
{
    const lab_data *d = r->data;
    (void)step;
    return 2.0 * sizeof(float) * (double)d->rows * (double)d->cols;  /* read once, written once */
}

static size_t ceiling_bytes(const cml_lab_run *r)
{
    return (size_t)(work(r, 0) / 2);
}

/* --sweep: a square matrix, read once and written once. */
static int sweep_size(cml_lab_run *r, int step, double bytes)
{
    (void)step;
    lab_data *d = r->data;
    d->rows = d->cols = (int)sqrt(bytes / (2.0 * sizeof(float)));
    return d->rows >= 1;
}

static int prepare(cml_lab_run *r)
{
    lab_data *d = r->data;
    data_alloc(r, d->rows, d->cols);
    int gib = work(r, 0) >= (double)(1 << 30);  /* MiB below one: --sweep's small sizes */
    snprintf(r->rep.params, sizeof r->rep.params, "%d x %d floats (%.2f %s read + written)",
             d->rows, d->cols, work(r, 0) / (gib ? 1 << 30 : 1 << 20), gib ? "GiB" : "MiB");
    return CML_EXIT_OK;
}

static cudaError_t poison(cml_lab_run *r, int step)
{
    (void)step;
    return tr_poison(&((lab_data *)r->data)->buf);
}

/* After poison and a launch: out and the guards checked (tr_verify: the
 * tests' tr_run_guarded and tr_compare). The whole story goes to
 * stderr; the note has the start. */
static int verify(cml_lab_run *r, int step, cml_row *row)
{
    lab_data *d = r->data;
    tr_result res;
    int ok = tr_verify(&d->buf, step, d->in, d->out, &res);
    if (res.err != cudaSuccess) {
        cml_lab_row_error(row, "CUDA error", res.err);
        return 0;
    }
    row->status = ok ? CML_ROW_OK : CML_ROW_WRONG;
    if (!res.guards_intact) {
        snprintf(row->note, sizeof row->note, "%s", res.guard_msg);
        cml_lab_say(r, "step %d %s: %s", step, cml_lab_ident(r, step), res.guard_msg);
    }
    if (res.check.wrong > 0) {
        char msg[1400];
        tr_describe(&res.check, msg, sizeof msg);
        cml_lab_say(r, "step %d %s: %s", step, cml_lab_ident(r, step), msg);
        if (res.guards_intact)
            snprintf(row->note, sizeof row->note, "%.*s", (int)sizeof row->note - 1, msg);
    }
    return ok;
}

static cudaError_t launch(cml_lab_run *r, int step)
{
    return tr_run_step(&((lab_data *)r->data)->buf, step);
}

/* Runs this program under ncu (--check-only, each step in `steps`
 * launching its one kernel) at rows x cols and fills d->counts. */
static int read_counters(cml_lab_run *r, unsigned steps, int rows, int cols)
{
    static cml_ncu_counts c;
    lab_data *d = r->data;
    char rs[16], cs[16];
    int nsteps = 0;
    memset(d->counts, 0, sizeof d->counts);
    for (int s = 1; s <= TRANSPOSE_NUM_STEPS; ++s)
        nsteps += (steps >> (s - 1)) & 1u;
    snprintf(rs, sizeof rs, "%d", rows);
    snprintf(cs, sizeof cs, "%d", cols);
    const char *args[] = {"--rows", rs, "--cols", cs, NULL};
    const char *metrics[] = {CML_NCU_SHARED_LD_CONFLICTS, CML_NCU_SHARED_ST_CONFLICTS};
    if (!cml_lab_ncu(r, steps, args, metrics, 2, KERNEL_FILTER, nsteps, &c, d->why, sizeof d->why))
        return d->have_counts = 0;
    int n = 0, valued = 0;
    for (int s = 1; s <= TRANSPOSE_NUM_STEPS; ++s) {
        if (!(steps & (1u << (s - 1))))
            continue;
        step_counts *k = &d->counts[s];
        k->ld = c.value[n][0];
        k->st = c.value[n][1];
        k->have = k->ld >= 0.0 && k->st >= 0.0;
        snprintf(k->kernel, sizeof k->kernel, "%s", c.kernel[n]);
        valued += k->have;
        ++n;
    }
    if (valued == 0)
        snprintf(d->why, sizeof d->why, "ncu gave no value for the shared-memory bank-conflict metrics");
    return d->have_counts = valued > 0;
}

/* --counters: check the steps at the counter size, then a line each. */
static int counters(cml_lab_run *r, cml_lab_counters *out)
{
    lab_data *d = r->data;
    int rows = d->rows_given ? d->rows : COUNTER_ROWS, cols = d->cols_given ? d->cols : COUNTER_COLS;
    data_alloc(r, rows, cols);
    int wrong = 0;
    for (int s = 1; s <= TRANSPOSE_NUM_STEPS; ++s) {
        if (!cml_lab_selected(r, s))
            continue;
        cml_row row;
        memset(&row, 0, sizeof row);
        if (!cml_lab_check(r, s, &row)) {  /* says what is wrong on stderr */
            ++wrong;
            if (row.status == CML_ROW_ERROR) {
                cml_lab_say(r, "step %d: %s", s, row.note);
                return CML_EXIT_FAIL;  /* a sticky error: nothing more can run */
            }
        }
    }
    release(r);

    out->available = read_counters(r, r->args.steps, rows, cols);
    snprintf(out->reason, sizeof out->reason, "%s", d->why);
    for (int s = 1; s <= TRANSPOSE_NUM_STEPS && out->available; ++s) {
        if (!cml_lab_selected(r, s))
            continue;
        const step_counts *k = &d->counts[s];
        cml_lab_counters_add(out, r, s, k->kernel, k->have ? k->ld : -1.0);
        if (r->args.json)
            continue;
        if (k->have)
            printf("step %d %s: shared-load bank conflicts %.0f, shared-store bank conflicts %.0f\n", s,
                   cml_lab_ident(r, s), k->ld, k->st);
        else
            printf("step %d %s: counters not available: ncu gave no value\n", s, cml_lab_ident(r, s));
    }
    return wrong ? CML_EXIT_FAIL : CML_EXIT_OK;
}

/* The notes: each timed step against step 1 and cudaMemcpy, and its bank
 * conflicts; what they mean under the Markdown table, and the counts as
 * numbers in the JSON. */
static void finish(cml_lab_run *r)
{
    lab_data *d = r->data;
    unsigned timed_steps = 0;
    for (int i = 0; i < r->rep.nrows; ++i)
        if (r->rep.rows[i].kind == CML_ROW_STEP && r->rep.rows[i].timed)
            timed_steps |= 1u << (r->rep.rows[i].step - 1);
    if (r->no_counters)
        snprintf(d->why, sizeof d->why, "left out (--no-counters)");
    else
        read_counters(r, timed_steps, COUNTER_ROWS, COUNTER_COLS);
    d->copy_rate = (timed_steps & 1u) ? r->rep.rows[0].rate : 0.0;

    static char extra_md[512], extra_json[2048];
    size_t jused = (size_t)snprintf(extra_json, sizeof extra_json,
                                    "{\"counter_rows\": %d, \"counter_cols\": %d, \"counters_available\": %s, "
                                    "\"bank_conflicts\": [",
                                    COUNTER_ROWS, COUNTER_COLS, d->have_counts ? "true" : "false");
    int listed = 0;
    for (int i = 0; i < r->rep.nrows; ++i) {
        cml_row *row = &r->rep.rows[i];
        if (row->kind != CML_ROW_STEP || !row->timed)
            continue;
        size_t used = 0;
        const step_counts *k = &d->counts[row->step];
        if (d->copy_rate > 0.0)
            used += (size_t)snprintf(row->note, sizeof row->note, "%.2fx copy kernel, ", row->rate / d->copy_rate);
        used += (size_t)snprintf(row->note + used, sizeof row->note - used, "%.2fx cudaMemcpy",
                                 row->rate / r->ceiling.memcpy_gbs);
        if (d->have_counts && k->have && used < sizeof row->note) {
            char ld[32], st[32];
            snprintf(row->note + used, sizeof row->note - used, "; ld conflicts %s, st conflicts %s",
                     cml_with_commas(k->ld, ld, sizeof ld), cml_with_commas(k->st, st, sizeof st));
            if (jused < sizeof extra_json)
                jused += (size_t)snprintf(extra_json + jused, sizeof extra_json - jused,
                                          "%s{\"step\": %d, \"shared_load\": %.0f, \"shared_store\": %.0f}",
                                          listed++ ? ", " : "", row->step, k->ld, k->st);
        }
    }
    if (jused < sizeof extra_json)
        snprintf(extra_json + jused, sizeof extra_json - jused, "]}");
    r->rep.extra_json = jused < sizeof extra_json ? extra_json : NULL;
    if (d->have_counts)
        snprintf(extra_md, sizeof extra_md,
                 "Notes: GB/s as a fraction of the copy kernel (step 1) and of cudaMemcpy, both measured in "
                 "this run; shared-memory bank conflicts of loads (ld) and stores (st), counted by Nsight "
                 "Compute at %d x %d.\n",
                 COUNTER_ROWS, COUNTER_COLS);
    else
        snprintf(extra_md, sizeof extra_md,
                 "Notes: GB/s as a fraction of the copy kernel (step 1) and of cudaMemcpy, both measured in "
                 "this run. Bank-conflict counters not available: %.300s.\n",
                 d->why);
    r->rep.extra_markdown = extra_md;
    if (r->args.json && !d->have_counts)
        cml_lab_say(r, "counters not available: %s", d->why);
}

/* The lines under the table: each step against step 1 and cudaMemcpy, and
 * its bank conflicts. */
static void after_table(cml_lab_run *r)
{
    const lab_data *d = r->data;
    if (r->args.check_only)
        return;
    printf("Each step against the copy of step 1 and cudaMemcpy (%.1f GB/s), and its\n"
           "shared-memory bank conflicts at %d x %d (Nsight Compute):\n\n",
           r->ceiling.memcpy_gbs, COUNTER_ROWS, COUNTER_COLS);
    printf("step  %-16s %9s %12s %16s %16s\n", "kernel", "x step 1", "x cudaMemcpy", "load conflicts",
           "store conflicts");
    for (int i = 0; i < r->rep.nrows; ++i) {
        const cml_row *row = &r->rep.rows[i];
        if (row->kind != CML_ROW_STEP || !row->timed)
            continue;
        const step_counts *k = &d->counts[row->step];
        char vs_copy[16] = "-", ld[32] = "-", st[32] = "-";
        if (d->copy_rate > 0.0)
            snprintf(vs_copy, sizeof vs_copy, "%.2f", row->rate / d->copy_rate);
        if (d->have_counts && k->have) {
            cml_with_commas(k->ld, ld, sizeof ld);
            cml_with_commas(k->st, st, sizeof st);
        }
        printf("%4d  %-16s %9s %12.2f %16s %16s\n", row->step, row->name, vs_copy,
               row->rate / r->ceiling.memcpy_gbs, ld, st);
    }
    if (d->copy_rate <= 0.0)
        printf("(x step 1 needs step 1 in the same run: --step 1,6 for example)\n");
    if (!d->have_counts)
        printf("counters not available: %s\n", d->why);
    putchar('\n');
}

CML_LAB_STEP_TABLE(TRANSPOSE);

static const cml_lab_option options[] = {
    {"--rows R", "rows of in (default " STR(DEFAULT_ROWS) "); out has C rows of R"},
    {"--cols C", "columns of in (default " STR(DEFAULT_COLS) "); try 8191 x 12289 too"},
};

static const cml_lab lab = {
    CML_LAB_IDENTITY(TRANSPOSE, "06_transpose", "transpose"),
    .title = "matrix transpose, out = in^T",
    .usage = "[--step N|all|LIST] [--rows R] [--cols C] [--repeat N] [--json]\n"
             "       [--markdown FILE] [--check-only] [--no-counters] [--sweep [--sweep-max BYTES]]\n"
             "       | --counters [--json] [--step ...] [--rows R] [--cols C] | --list | --probe | --help",
    .about = "Checks each step's output bit for bit against the CPU, then times it (median\n"
             "of N runs after a warm-up) next to the lab's copy (step 1) and cudaMemcpy\n"
             "device to device, all measured in this run, and reads each step's\n"
             "shared-memory bank conflicts with Nsight Compute (ncu) at " STR(COUNTER_ROWS) " x " STR(
                 COUNTER_COLS) ".",
    .step_help = "steps to run: all (default), 3, 1,4,6 or 2-5",
    CML_LAB_LIST(options, options),
    .check_only_help = "check each step once: no timing, no copy, no counters\n(for compute-sanitizer and ncu)",
    .counters_help = "check the steps, then print one line of bank conflicts per\nstep (at " STR(
        COUNTER_ROWS) " x " STR(COUNTER_COLS) " unless --rows/--cols say otherwise;\nwith --json: as JSON)",
    .no_counters_help = "leave the counters out of the table (no ncu run)",
    .notes = "GB/s counts the bytes read plus the bytes written: 2 * 4 * rows * cols.\n"
             "ncu is $CML_NCU when set, else ncu on the PATH. Data are seeded: set\n"
             "CML_SEED to change them.",
    .option = option,
    CML_LAB_GPU_PART,
    .finish = finish,
    .after_table = after_table,
    .sweep_size = sweep_size,
    .counters = counters,
    .counters_metric = CML_NCU_SHARED_LD_CONFLICTS,
};

int main(int argc, char **argv)
{
    static lab_data d = {.rows = DEFAULT_ROWS, .cols = DEFAULT_COLS};
    return cml_lab_main(&lab, &d, sizeof d, argc, argv);
}
