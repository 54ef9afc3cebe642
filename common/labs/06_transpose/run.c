/* transpose_run: check and time the steps of lab 06 next to the lab's own
 * copy (step 1) and cudaMemcpy device to device, measured in the same run,
 * and read each step's shared-memory bank conflicts with Nsight Compute.
 * Built twice: transpose_run (your labs/06_transpose/transpose.cu) and
 * transpose_run_ref (the reference). `transpose_run --help` tells how to
 * use it. */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_args.h>
#include <cml/cml_ceiling.h>
#include <cml/cml_check.h>
#include <cml/cml_device.h>
#include <cml/cml_ncu.h>
#include <cml/cml_report.h>
#include <cml/cml_rng.h>
#include <cml/cml_runner.h>
#include <cml/cml_timing.h>

#include "transpose_host.h"

#define DEFAULT_SIDE 8192
/* Counters are read at this size: 8 x 33 = 264 tiles of 32 x 32, one wave
 * of blocks on a 132-SM H100 (two 1024-thread blocks per SM). With later
 * waves, a block's shared loads overlap the next blocks' global loads, which
 * land in the same SRAM, and ncu counts those stalls as bank conflicts too:
 * a few thousand that would blur the count of the access pattern itself.
 * The count for the plain tile is exact: 264 tiles x 32 warps x 31 extra
 * passes = 261,888. */
#define COUNTER_ROWS 256
#define COUNTER_COLS 1056
/* The lab's kernels are named transpose_kernel...; the kit's fill kernels
 * and the device probe are left out of the counters. */
#define KERNEL_FILTER "regex:transpose_kernel"

static const char *prog = "transpose_run";

#define STEP_NAME(num, ident, file, what) #ident,
#define STEP_WHAT(num, ident, file, what) what,
static const char *step_names[] = {TRANSPOSE_STEPS(STEP_NAME)};
static const char *step_whats[] = {TRANSPOSE_STEPS(STEP_WHAT)};

typedef struct options {
    cml_runner_args run;  /* --step, --repeat, --json, --markdown, --check-only */
    int rows, cols;
    int rows_given, cols_given;
    int counters;     /* --counters: check, then print only the counter lines */
    int no_counters;  /* --no-counters: leave them out of the table */
} options;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: %s [--step N|all|LIST] [--rows R] [--cols C] [--repeat N] [--json]\n"
            "       [--markdown FILE] [--check-only] [--no-counters]\n"
            "       | --counters [--step ...] [--rows R] [--cols C] | --list | --probe | --help\n",
            prog);
}

static void help(void)
{
    usage(stdout);
    printf("\nChecks each step's output bit for bit against the CPU, then times it (median\n"
           "of N runs after a warm-up) next to the lab's copy (step 1) and cudaMemcpy\n"
           "device to device, all measured in this run, and reads each step's\n"
           "shared-memory bank conflicts with Nsight Compute (ncu) at %d x %d.\n\n"
           "  --step S        steps to run: all (default), 3, 1,4,6 or 2-5\n"
           "  --rows R        rows of in (default %d); out has C rows of R\n"
           "  --cols C        columns of in (default %d); try 8191 x 12289 too\n"
           "  --repeat N      timed runs per kernel (default 50)\n"
           "  --json          print the results as JSON instead of the table\n"
           "  --markdown FILE write the results as Markdown: a page, or the marked\n"
           "                  region of a handout (repeat for up to 4 files)\n"
           "  --check-only    check each step once: no timing, no copy, no counters\n"
           "                  (for compute-sanitizer and ncu)\n"
           "  --counters      check the steps, then print one line of bank conflicts per\n"
           "                  step (at %d x %d unless --rows/--cols say otherwise)\n"
           "  --no-counters   leave the counters out of the table (no ncu run)\n"
           "  --list          list the steps\n"
           "  --probe         exit 0 when a usable GPU is present, 77 otherwise\n\n"
           "GB/s counts the bytes read plus the bytes written: 2 * 4 * rows * cols.\n"
           "ncu is $CML_NCU when set, else ncu on the PATH. Data are seeded: set\n"
           "CML_SEED to change them. Exit status: 0 all checked steps correct, 1 a\n"
           "wrong result or CUDA error, 2 bad arguments, 77 no GPU.\n\nSteps:\n",
           COUNTER_ROWS, COUNTER_COLS, DEFAULT_SIDE, DEFAULT_SIDE, COUNTER_ROWS, COUNTER_COLS);
    for (int s = 1; s <= TRANSPOSE_NUM_STEPS; ++s)
        printf("  %d  %-16s %s\n", s, step_names[s - 1], step_whats[s - 1]);
}

static int parse_side(const options *o, const char *opt, const char *v)
{
    size_t n = 0;
    if (!cml_parse_count(v, 1, INT_MAX, &n))
        cml_runner_bad_arg(&o->run, opt, v, "a count from 1 to 2^31-1, like 8191, 2^13 or 16K");
    return (int)n;
}

static void parse(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    cml_runner_init(&o->run, argc > 0 ? argv[0] : NULL, prog, TRANSPOSE_NUM_STEPS, 50, usage);
    prog = o->run.prog;
    o->rows = o->cols = DEFAULT_SIDE;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (cml_runner_arg(&o->run, argc, argv, &i))
            continue;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            help();
            exit(CML_EXIT_OK);
        } else if (strcmp(a, "--list") == 0) {
            for (int s = 1; s <= TRANSPOSE_NUM_STEPS; ++s)
                printf("%d\t%s\t%s\n", s, step_names[s - 1], step_whats[s - 1]);
            exit(CML_EXIT_OK);
        } else if (strcmp(a, "--rows") == 0) {
            o->rows = parse_side(o, a, v);
            o->rows_given = 1;
            ++i;
        } else if (strcmp(a, "--cols") == 0) {
            o->cols = parse_side(o, a, v);
            o->cols_given = 1;
            ++i;
        } else if (strcmp(a, "--counters") == 0) {
            o->counters = 1;
        } else if (strcmp(a, "--no-counters") == 0) {
            o->no_counters = 1;
        } else {
            cml_runner_unknown(&o->run, a);
        }
    }
    if (o->counters && (o->run.check_only || o->run.json || o->run.nmarkdown > 0)) {
        fprintf(stderr, "%s: --counters goes alone (with --step, --rows and --cols)\n", prog);
        usage(stderr);
        exit(CML_EXIT_USAGE);
    }
}

/* The data of one run: seeded in, room for out, and the device buffers. */
typedef struct run_data {
    int rows, cols;
    float *in, *out;
    tr_buffers buf;
} run_data;

static void run_data_init(run_data *d, int rows, int cols, uint64_t seed)
{
    size_t n = (size_t)rows * (size_t)cols;
    d->rows = rows;
    d->cols = cols;
    d->in = malloc(n * sizeof *d->in);
    d->out = malloc(n * sizeof *d->out);
    if (d->in == NULL || d->out == NULL) {
        fprintf(stderr, "%s: out of host memory for two %d x %d matrices\n", prog, rows, cols);
        exit(CML_EXIT_FAIL);
    }
    tr_make_data(d->in, n, seed, 0);
    CML_CHECK(tr_buffers_alloc(&d->buf, rows, cols));
    CML_CHECK(tr_upload(&d->buf, d->in));
}

static void run_data_free(run_data *d)
{
    free(d->in);
    free(d->out);
    d->in = d->out = NULL;
    tr_buffers_free(&d->buf);
}

/* Runs the step once on poisoned out and checks it. Fills row->status and
 * row->note; returns 1 when correct. */
static int check_step(run_data *d, int step, cml_row *row)
{
    tr_result res;
    int ok = tr_run_checked(&d->buf, step, d->in, d->out, &res);
    if (res.err != cudaSuccess) {
        row->status = CML_ROW_ERROR;
        snprintf(row->note, sizeof row->note, "CUDA error: %s: %s", cudaGetErrorName(res.err),
                 cudaGetErrorString(res.err));
        return 0;
    }
    row->status = ok ? CML_ROW_OK : CML_ROW_WRONG;
    if (!res.guards_intact) {
        snprintf(row->note, sizeof row->note, "%s", res.guard_msg);
        fprintf(stderr, "%s: step %d %s: %s\n", prog, step, step_names[step - 1], res.guard_msg);
    }
    if (res.check.wrong > 0) {
        /* The whole story on stderr; the table's note has room for the start. */
        char msg[1400];
        tr_describe(&res.check, msg, sizeof msg);
        fprintf(stderr, "%s: step %d %s: %s\n", prog, step, step_names[step - 1], msg);
        if (res.guards_intact)
            snprintf(row->note, sizeof row->note, "%.*s", (int)sizeof row->note - 1, msg);
    }
    return ok;
}

typedef struct job {
    tr_buffers *buf;
    int step;
} job;

static cudaError_t run_job(void *ctx)
{
    job *j = (job *)ctx;
    return tr_run_step(j->buf, j->step);
}

static int time_step(run_data *d, int step, int repeat, size_t bytes, cml_row *row)
{
    job j = {&d->buf, step};
    cml_timing t;
    cudaError_t err = cml_time_median(run_job, &j, 3, repeat, &t);
    if (err != cudaSuccess) {
        row->status = CML_ROW_ERROR;
        snprintf(row->note, sizeof row->note, "CUDA error while timing: %s", cudaGetErrorString(err));
        return 0;
    }
    row->timed = 1;
    row->ms = t.median_ms;
    row->rate = (double)bytes / (t.median_ms * 1e6);
    return 1;
}

/* Bank conflicts of one step, as ncu counted them (-1: no value). */
typedef struct step_counts {
    int have;
    double ld, st;
} step_counts;

/* Runs this program under ncu (--check-only, each step in `steps` launching
 * its one kernel) at rows x cols, and fills counts[step]. Returns 1 when
 * the counters are available; else writes the reason into why. */
static int read_counters(unsigned steps, int rows, int cols, step_counts counts[TRANSPOSE_NUM_STEPS + 1],
                         char *why, size_t len)
{
    static cml_ncu_counts c;
    char self[4096], list[64] = "", r[16], k[16];
    int nsteps = 0;
    memset(counts, 0, (TRANSPOSE_NUM_STEPS + 1) * sizeof *counts);
    for (int s = 1; s <= TRANSPOSE_NUM_STEPS; ++s)
        if (steps & (1u << (s - 1)))
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", nsteps++ ? "," : "", s);
    if (nsteps == 0) {
        snprintf(why, len, "no step passed its check, so none was measured");
        return 0;
    }
    if (!cml_self_exe(self, sizeof self)) {
        snprintf(why, len, "cannot find this program's own path to run it under ncu");
        return 0;
    }
    snprintf(r, sizeof r, "%d", rows);
    snprintf(k, sizeof k, "%d", cols);
    const char *args[] = {"--check-only", "--step", list, "--rows", r, "--cols", k, NULL};
    const char *metrics[] = {CML_NCU_SHARED_LD_CONFLICTS, CML_NCU_SHARED_ST_CONFLICTS};
    if (!cml_ncu_collect(self, args, metrics, 2, KERNEL_FILTER, &c)) {
        snprintf(why, len, "%s", c.reason);
        return 0;
    }
    if (c.nkernels != nsteps) {
        snprintf(why, len,
                 "ncu measured %d launches of kernels named transpose_kernel... for %d steps (one each expected)",
                 c.nkernels, nsteps);
        return 0;
    }
    int n = 0, valued = 0;
    for (int s = 1; s <= TRANSPOSE_NUM_STEPS; ++s) {
        if (!(steps & (1u << (s - 1))))
            continue;
        counts[s].ld = c.value[n][0];
        counts[s].st = c.value[n][1];
        counts[s].have = counts[s].ld >= 0.0 && counts[s].st >= 0.0;
        valued += counts[s].have;
        ++n;
    }
    if (valued == 0) {
        snprintf(why, len, "ncu gave no value for the shared-memory bank-conflict metrics");
        return 0;
    }
    return 1;
}

/* 4063232 -> "4,063,232". */
static const char *with_commas(double v, char *buf, size_t len)
{
    char digits[32];
    snprintf(digits, sizeof digits, "%.0f", v);
    size_t n = strlen(digits), o = 0;
    for (size_t i = 0; i < n && o + 2 < len; ++i) {
        if (i > 0 && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

/* --counters: check the steps at the counter size, then one line each. */
static int counters_only(const options *o, uint64_t seed)
{
    int rows = o->rows_given ? o->rows : COUNTER_ROWS, cols = o->cols_given ? o->cols : COUNTER_COLS;
    run_data d;
    run_data_init(&d, rows, cols, seed);
    int wrong = 0;
    for (int s = 1; s <= TRANSPOSE_NUM_STEPS; ++s) {
        if (!(o->run.steps & (1u << (s - 1))))
            continue;
        cml_row row;
        memset(&row, 0, sizeof row);
        if (!check_step(&d, s, &row)) {  /* says what is wrong on stderr */
            ++wrong;
            if (row.status == CML_ROW_ERROR) {
                fprintf(stderr, "%s: step %d: %s\n", prog, s, row.note);
                return CML_EXIT_FAIL;  /* a sticky error: nothing more can run */
            }
        }
    }
    run_data_free(&d);

    step_counts counts[TRANSPOSE_NUM_STEPS + 1];
    char why[300];
    if (!read_counters(o->run.steps, rows, cols, counts, why, sizeof why)) {
        printf("counters not available: %s\n", why);
    } else {
        for (int s = 1; s <= TRANSPOSE_NUM_STEPS; ++s) {
            if (!(o->run.steps & (1u << (s - 1))))
                continue;
            if (counts[s].have)
                printf("step %d %s: shared-load bank conflicts %.0f, shared-store bank conflicts %.0f\n", s,
                       step_names[s - 1], counts[s].ld, counts[s].st);
            else
                printf("step %d %s: counters not available: ncu gave no value\n", s, step_names[s - 1]);
        }
    }
    return wrong ? CML_EXIT_FAIL : CML_EXIT_OK;
}

/* The lines under the table: each step against step 1 and cudaMemcpy, and
 * its bank conflicts. */
static void print_comparison(const cml_report *rep, const cml_copy_ceiling *c, double copy_rate, int have_counts,
                             const step_counts *counts, const char *why)
{
    printf("Each step against the copy of step 1 and cudaMemcpy (%.1f GB/s), and its\n"
           "shared-memory bank conflicts at %d x %d (Nsight Compute):\n\n",
           c->memcpy_gbs, COUNTER_ROWS, COUNTER_COLS);
    printf("step  %-16s %9s %12s %16s %16s\n", "kernel", "x step 1", "x cudaMemcpy", "load conflicts",
           "store conflicts");
    for (int i = 0; i < rep->nrows; ++i) {
        const cml_row *row = &rep->rows[i];
        if (row->kind != CML_ROW_STEP || !row->timed)
            continue;
        char vs_copy[16] = "-", ld[32] = "-", st[32] = "-";
        if (copy_rate > 0.0)
            snprintf(vs_copy, sizeof vs_copy, "%.2f", row->rate / copy_rate);
        if (have_counts && counts[row->step].have) {
            with_commas(counts[row->step].ld, ld, sizeof ld);
            with_commas(counts[row->step].st, st, sizeof st);
        }
        printf("%4d  %-16s %9s %12.2f %16s %16s\n", row->step, row->name, vs_copy, row->rate / c->memcpy_gbs, ld,
               st);
    }
    if (copy_rate <= 0.0)
        printf("(x step 1 needs step 1 in the same run: --step 1,6 for example)\n");
    if (!have_counts)
        printf("counters not available: %s\n", why);
    putchar('\n');
}

int main(int argc, char **argv)
{
    options o;
    parse(argc, argv, &o);

    cml_device_info dev;
    char why[300];
    if (!cml_device_probe(&dev, why, sizeof why)) {
        fprintf(stderr, "%s: %s\n", prog, why);
        fprintf(stderr, "%s: nothing to run without a GPU; the host tests still work: ctest --preset host\n", prog);
        return CML_EXIT_NO_GPU;
    }
    uint64_t seed = 0;
    if (!cml_seed(&seed, why, sizeof why)) {
        fprintf(stderr, "%s: %s\n", prog, why);
        return CML_EXIT_USAGE;
    }
    if (o.counters)
        return counters_only(&o, seed);

    size_t bytes = 2 * sizeof(float) * (size_t)o.rows * (size_t)o.cols;  /* read once, written once */
    run_data d;
    run_data_init(&d, o.rows, o.cols, seed);

    cml_report rep;
    cml_report_init(&rep, "06_transpose", "matrix transpose, out = in^T", "GB/s");
    rep.device = dev;
    rep.seed = seed;
    snprintf(rep.params, sizeof rep.params, "%d x %d floats (%.2f GiB read + written), median of %d runs", o.rows,
             o.cols, (double)bytes / (1 << 30), o.run.check_only ? 0 : o.run.repeat);

    int wrong = 0;
    unsigned timed_steps = 0;
    for (int s = 1; s <= TRANSPOSE_NUM_STEPS; ++s) {
        if (!(o.run.steps & (1u << (s - 1))))
            continue;
        cml_row *row = cml_report_add(&rep, CML_ROW_STEP, s, step_names[s - 1]);
        if (!check_step(&d, s, row)) {
            ++wrong;  /* a wrong step is never timed as if it worked */
            if (row->status == CML_ROW_ERROR) {
                fprintf(stderr, "%s: step %d: %s\n", prog, s, row->note);
                break;  /* a sticky error poisons every later call */
            }
            continue;
        }
        if (!o.run.check_only && time_step(&d, s, o.run.repeat, bytes, row))
            timed_steps |= 1u << (s - 1);
    }
    run_data_free(&d);

    if (o.run.check_only) {
        for (int i = 0; i < rep.nrows; ++i)
            printf("step %d %-16s %s%s%s\n", rep.rows[i].step, rep.rows[i].name,
                   rep.rows[i].status == CML_ROW_OK ? "ok" : "WRONG", rep.rows[i].note[0] ? ": " : "",
                   rep.rows[i].note);
        return wrong ? CML_EXIT_FAIL : CML_EXIT_OK;
    }

    /* The speed limit: the same bytes copied device to device. */
    cml_copy_ceiling c;
    CML_CHECK(cml_measure_copy_ceiling(bytes / 2, o.run.repeat, &c));
    rep.ceiling_rate = c.best_gbs;
    snprintf(rep.ceiling_name, sizeof rep.ceiling_name, "device copy (read + write)");
    const char *names[2] = {"cudaMemcpy device to device", "copy kernel, 16 B per thread"};
    double rates[2] = {c.memcpy_gbs, c.kernel_gbs};
    for (int k = 0; k < 2; ++k) {
        cml_row *r = cml_report_add(&rep, CML_ROW_CEILING, 0, names[k]);
        r->status = CML_ROW_OK;
        r->timed = 1;
        r->rate = rates[k];
        r->ms = 2.0 * (double)c.bytes / (rates[k] * 1e6);
    }

    /* Bank conflicts of the steps that passed, read by ncu on one wave of tiles. */
    step_counts counts[TRANSPOSE_NUM_STEPS + 1];
    int have_counts = 0;
    if (o.no_counters)
        snprintf(why, sizeof why, "left out (--no-counters)");
    else
        have_counts = read_counters(timed_steps, COUNTER_ROWS, COUNTER_COLS, counts, why, sizeof why);

    /* The notes: each timed step against step 1 and cudaMemcpy, and its
     * bank conflicts; what they mean under the Markdown table, and the
     * counts as numbers in the JSON. */
    double copy_rate = (timed_steps & 1u) ? rep.rows[0].rate : 0.0;
    static char extra_md[512], extra_json[2048];
    size_t jused = (size_t)snprintf(extra_json, sizeof extra_json,
                                    "{\"counter_rows\": %d, \"counter_cols\": %d, \"counters_available\": %s, "
                                    "\"bank_conflicts\": [",
                                    COUNTER_ROWS, COUNTER_COLS, have_counts ? "true" : "false");
    int listed = 0;
    for (int i = 0; i < rep.nrows; ++i) {
        cml_row *row = &rep.rows[i];
        if (row->kind != CML_ROW_STEP || !row->timed)
            continue;
        size_t used = 0;
        if (copy_rate > 0.0)
            used += (size_t)snprintf(row->note, sizeof row->note, "%.2fx copy kernel, ", row->rate / copy_rate);
        used += (size_t)snprintf(row->note + used, sizeof row->note - used, "%.2fx cudaMemcpy",
                                 row->rate / c.memcpy_gbs);
        if (have_counts && counts[row->step].have && used < sizeof row->note) {
            char ld[32], st[32];
            snprintf(row->note + used, sizeof row->note - used, "; ld conflicts %s, st conflicts %s",
                     with_commas(counts[row->step].ld, ld, sizeof ld),
                     with_commas(counts[row->step].st, st, sizeof st));
            if (jused < sizeof extra_json)
                jused += (size_t)snprintf(extra_json + jused, sizeof extra_json - jused,
                                          "%s{\"step\": %d, \"shared_load\": %.0f, \"shared_store\": %.0f}",
                                          listed++ ? ", " : "", row->step, counts[row->step].ld,
                                          counts[row->step].st);
        }
    }
    if (jused < sizeof extra_json)
        snprintf(extra_json + jused, sizeof extra_json - jused, "]}");
    rep.extra_json = jused < sizeof extra_json ? extra_json : NULL;
    if (have_counts)
        snprintf(extra_md, sizeof extra_md,
                 "Notes: GB/s as a fraction of the copy kernel (step 1) and of cudaMemcpy, both measured in "
                 "this run; shared-memory bank conflicts of loads (ld) and stores (st), counted by Nsight "
                 "Compute at %d x %d.\n",
                 COUNTER_ROWS, COUNTER_COLS);
    else
        snprintf(extra_md, sizeof extra_md,
                 "Notes: GB/s as a fraction of the copy kernel (step 1) and of cudaMemcpy, both measured in "
                 "this run. Bank-conflict counters not available: %.300s.\n",
                 why);
    rep.extra_markdown = extra_md;

    if (o.run.json) {
        cml_report_print_json(&rep, stdout);
        if (!have_counts)
            fprintf(stderr, "%s: counters not available: %s\n", prog, why);
    } else {
        cml_report_print_table(&rep, stdout);
        print_comparison(&rep, &c, copy_rate, have_counts, counts, why);
    }
    if (cml_runner_write_markdown(&o.run, &rep) != CML_EXIT_OK)
        return CML_EXIT_FAIL;
    return wrong ? CML_EXIT_FAIL : CML_EXIT_OK;
}
