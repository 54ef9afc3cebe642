/* reduction_run: check and time the steps of lab 04 against the device-copy
 * bandwidth and CUB, measured in the same run. Built twice: reduction_run
 * (your labs/04_reduction/reduction.cu) and reduction_run_ref (the reference).
 * `reduction_run --help` tells how to use it. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_args.h>
#include <cml/cml_ceiling.h>
#include <cml/cml_check.h>
#include <cml/cml_compare.h>
#include <cml/cml_device.h>
#include <cml/cml_report.h>
#include <cml/cml_rng.h>
#include <cml/cml_runner.h>
#include <cml/cml_timing.h>

#include "cub_anchor.h"
#include "reduction_host.h"

#define DEFAULT_N ((size_t)1 << 28)

static const char *prog = "reduction_run";

#define STEP_NAME(num, ident, file, what) #ident,
#define STEP_WHAT(num, ident, file, what) what,
static const char *step_names[] = {REDUCTION_STEPS(STEP_NAME)};
static const char *step_whats[] = {REDUCTION_STEPS(STEP_WHAT)};

typedef struct options {
    cml_runner_args run;  /* --step, --repeat, --json, --markdown, --check-only */
    size_t n;
    int n_given;
    red_type type;
} options;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: %s [--step N|all|LIST] [--n COUNT] [--type int|float] [--repeat R]\n"
            "       [--json] [--markdown FILE] [--check-only] | --list | --probe | --help\n",
            prog);
}

static void help(void)
{
    usage(stdout);
    printf("\nChecks each step's sum against a CPU reference, then times it (median of R\n"
           "runs after a warm-up) next to the device-copy bandwidth and CUB's\n"
           "DeviceReduce::Sum on the same data, all measured in this run.\n\n"
           "  --step S        steps to run: all (default), 3, 1,4,7 or 2-5\n"
           "  --n COUNT       elements (default 2^28 = 1 GiB of ints, reduced to fit\n"
           "                  the GPU); e.g. 1000003, 2^28+1, 64M\n"
           "  --type T        int (default; exact) or float (within a bound from n)\n"
           "  --repeat R      timed runs per kernel (default 50)\n"
           "  --json          print the results as JSON instead of the table\n"
           "  --markdown FILE write the results as Markdown: a page, or the marked\n"
           "                  region of a handout (repeat for up to 4 files)\n"
           "  --check-only    check correctness only: no timing, no CUB, no copy\n"
           "                  (for compute-sanitizer)\n"
           "  --list          list the steps\n"
           "  --probe         exit 0 when a usable GPU is present, 77 otherwise\n\n"
           "Data are seeded: set CML_SEED to change them. Exit status: 0 all checked\n"
           "steps correct, 1 a wrong result or CUDA error, 2 bad arguments, 77 no GPU.\n\nSteps:\n");
    for (int s = 1; s <= REDUCTION_NUM_STEPS; ++s)
        printf("  %d  %-16s %s\n", s, step_names[s - 1], step_whats[s - 1]);
}

static void parse(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    cml_runner_init(&o->run, argc > 0 ? argv[0] : NULL, prog, REDUCTION_NUM_STEPS, 50, usage);
    prog = o->run.prog;
    o->n = DEFAULT_N;
    o->type = RED_INT;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (cml_runner_arg(&o->run, argc, argv, &i))
            continue;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            help();
            exit(CML_EXIT_OK);
        } else if (strcmp(a, "--list") == 0) {
            for (int s = 1; s <= REDUCTION_NUM_STEPS; ++s)
                printf("%d\t%s\t%s\n", s, step_names[s - 1], step_whats[s - 1]);
            exit(CML_EXIT_OK);
        } else if (strcmp(a, "--n") == 0) {
            if (!cml_parse_count(v, 1, (size_t)1 << 34, &o->n))
                cml_runner_bad_arg(&o->run, a, v, "a count from 1 to 2^34, like 1000003, 2^28+1 or 64M");
            o->n_given = 1;
            ++i;
        } else if (strcmp(a, "--type") == 0) {
            if (v && strcmp(v, "int") == 0)
                o->type = RED_INT;
            else if (v && strcmp(v, "float") == 0)
                o->type = RED_FLOAT;
            else
                cml_runner_bad_arg(&o->run, a, v, "int or float");
            ++i;
        } else {
            cml_runner_unknown(&o->run, a);
        }
    }
}

/* One reduction to time: a step of the lab, or CUB. */
typedef struct job {
    red_buffers *buf;
    int step;          /* 0: CUB */
    void *cub_temp;
    size_t cub_bytes;
} job;

static cudaError_t run_job(void *ctx)
{
    job *j = (job *)ctx;
    red_buffers *b = j->buf;
    if (j->step > 0)
        return red_run_step(b, j->step);
    if (b->type == RED_INT)
        return red_cub_sum_int(j->cub_temp, &j->cub_bytes, (const int *)b->in.ptr, b->n, (int *)b->out.ptr);
    return red_cub_sum_float(j->cub_temp, &j->cub_bytes, (const float *)b->in.ptr, b->n, (float *)b->out.ptr);
}

typedef struct reference {
    int64_t isum;
    double fsum, tol;
} reference;

/* Runs the job once on poisoned outputs and checks the result and the guard
 * zones. Fills row->status and row->note; returns 1 when correct. */
static int check_job(job *j, const reference *ref, cml_row *row)
{
    red_buffers *b = j->buf;
    cudaError_t err = red_poison(b);
    if (err == cudaSuccess)
        err = run_job(j);
    union { int i; float f; } got;
    if (err == cudaSuccess)
        err = red_fetch(b, &got);
    char guard_msg[200];
    if (err == cudaSuccess && !red_guards_intact(b, guard_msg, sizeof guard_msg, &err) && err == cudaSuccess) {
        row->status = CML_ROW_WRONG;
        snprintf(row->note, sizeof row->note, "%s", guard_msg);
        return 0;
    }
    if (err != cudaSuccess) {
        row->status = CML_ROW_ERROR;
        snprintf(row->note, sizeof row->note, "CUDA error: %s: %s", cudaGetErrorName(err), cudaGetErrorString(err));
        return 0;
    }
    int ok;
    if (b->type == RED_INT) {
        ok = (int64_t)got.i == ref->isum;
        if (!ok)
            snprintf(row->note, sizeof row->note, "expected %lld, got %d: %s", (long long)ref->isum, got.i,
                     red_diagnose_int(got.i, ref->isum));
    } else {
        ok = cml_close(got.f, ref->fsum, ref->tol, 0.0);
        if (!ok)
            snprintf(row->note, sizeof row->note, "expected %.9g, got %.9g (bound %.3g): %s", ref->fsum,
                     (double)got.f, ref->tol, red_diagnose_float(got.f, ref->fsum, ref->tol));
    }
    row->status = ok ? CML_ROW_OK : CML_ROW_WRONG;
    return ok;
}

static int time_job(job *j, int repeat, size_t bytes, cml_row *row)
{
    cml_timing t;
    cudaError_t err = cml_time_median(run_job, j, 3, repeat, &t);
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

int main(int argc, char **argv)
{
    options o;
    parse(argc, argv, &o);

    cml_device_info dev;
    char why[256];
    if (!cml_device_probe(&dev, why, sizeof why)) {
        fprintf(stderr, "%s: %s\n", prog, why);
        fprintf(stderr, "%s: nothing to run without a GPU; the host tests still work: ctest --preset host\n", prog);
        return CML_EXIT_NO_GPU;
    }
    uint64_t seed = 0;
    char err_text[200];
    if (!cml_seed(&seed, err_text, sizeof err_text)) {
        fprintf(stderr, "%s: %s\n", prog, err_text);
        return CML_EXIT_USAGE;
    }

    size_t elem = o.type == RED_INT ? sizeof(int) : sizeof(float);
    size_t n = fit_n(o.n, elem, o.n_given);
    if (n != o.n)
        fprintf(stderr, "%s: using n = %zu so that the data fit in this GPU's free memory\n", prog, n);
    size_t bytes = n * elem;

    /* Data and the CPU reference. */
    void *host = malloc(bytes);
    if (host == NULL) {
        fprintf(stderr, "%s: out of host memory for %zu bytes\n", prog, bytes);
        return CML_EXIT_FAIL;
    }
    reference ref = {0, 0.0, 0.0};
    if (o.type == RED_INT) {
        red_make_ints((int *)host, n, seed, 0);
        ref.isum = red_cpu_sum_int((const int *)host, n);
    } else {
        double abs_sum = 0.0;
        red_make_floats((float *)host, n, RED_REALS, seed, 0);
        ref.fsum = red_cpu_sum_float((const float *)host, n, &abs_sum);
        ref.tol = red_float_tolerance(n, abs_sum);
    }
    red_buffers buf;
    CML_CHECK(red_buffers_alloc(&buf, o.type, n));
    CML_CHECK(red_upload(&buf, host));
    free(host);

    cml_report rep;
    cml_report_init(&rep, "04_reduction", "parallel reduction, the sum of n elements", "GB/s");
    rep.device = dev;
    rep.seed = seed;
    snprintf(rep.params, sizeof rep.params, "n = %zu %s (%.2f GiB read), median of %d runs", n,
             o.type == RED_INT ? "int" : "float", (double)bytes / (1 << 30), o.run.check_only ? 0 : o.run.repeat);

    int wrong = 0;
    double first_ms = 0.0, last_ms = 0.0;
    for (int s = 1; s <= REDUCTION_NUM_STEPS; ++s) {
        if (!(o.run.steps & (1u << (s - 1))))
            continue;
        cml_row *row = cml_report_add(&rep, CML_ROW_STEP, s, step_names[s - 1]);
        job j = {&buf, s, NULL, 0};
        if (!check_job(&j, &ref, row)) {
            ++wrong;  /* a wrong step is never timed as if it worked */
            if (row->status == CML_ROW_ERROR) {
                fprintf(stderr, "%s: step %d: %s\n", prog, s, row->note);
                break;  /* a sticky error poisons every later call */
            }
            continue;
        }
        if (!o.run.check_only && time_job(&j, o.run.repeat, bytes, row)) {
            if (first_ms == 0.0)
                first_ms = row->ms;
            last_ms = row->ms;
        }
    }

    if (!o.run.check_only) {
        /* The library anchor: CUB on the same data, checked like a step. */
        cml_row *row = cml_report_add(&rep, CML_ROW_ANCHOR, 0, "CUB DeviceReduce::Sum");
        job j = {&buf, 0, NULL, 0};
        CML_CHECK(run_job(&j));  /* with temp NULL: asks for the size */
        CML_CHECK(cudaMalloc(&j.cub_temp, j.cub_bytes ? j.cub_bytes : 1));
        if (check_job(&j, &ref, row))
            time_job(&j, o.run.repeat, bytes, row);
        cudaFree(j.cub_temp);

        /* The ceiling: the same number of bytes copied device to device. */
        red_buffers_free(&buf);
        cml_copy_ceiling c;
        CML_CHECK(cml_measure_copy_ceiling(bytes, o.run.repeat, &c));
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
    } else {
        red_buffers_free(&buf);
    }

    if (o.run.json) {
        cml_report_print_json(&rep, stdout);
    } else if (!o.run.check_only) {
        cml_report_print_table(&rep, stdout);
        printf("GB/s counts bytes read for the reductions and bytes read + written for the copies.\n");
        if (first_ms > 0.0 && last_ms > 0.0)
            printf("Speed-up from the first to the last step timed: %.1fx\n", first_ms / last_ms);
    } else {
        for (int i = 0; i < rep.nrows; ++i)
            printf("step %d %-16s %s%s%s\n", rep.rows[i].step, rep.rows[i].name,
                   rep.rows[i].status == CML_ROW_OK ? "ok" : "WRONG", rep.rows[i].note[0] ? ": " : "",
                   rep.rows[i].note);
    }
    if (cml_runner_write_markdown(&o.run, &rep) != CML_EXIT_OK)
        return CML_EXIT_FAIL;
    return wrong ? CML_EXIT_FAIL : CML_EXIT_OK;
}
