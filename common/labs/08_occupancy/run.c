/* occupancy_run: check and time the steps of lab 08 next to the device
 * copy ceiling measured in the same run, then each step's registers, local
 * memory and occupancy (the occupancy API) and its place on the roofline:
 * FLOP/byte against the copy bandwidth and the FP32 peak of the kit's FMA
 * kernel, both measured in this run. Built twice: occupancy_run (your
 * files) and occupancy_run_ref (the reference). `occupancy_run --help`
 * tells how to use it; the command line, table and exit codes are the
 * kit's runner library (cml_lab_runner.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_args.h>
#include <cml/cml_check.h>
#include <cml/cml_lab_runner.h>

#include "occupancy_host.h"

#define DEFAULT_N ((size_t)1 << 27)
#define DEFAULT_DEGREE 8

typedef struct lab_data {
    size_t n;
    int degree;                      /* steps 1 and 4 (--degree) */
    float *x, *y, *coef_low, *coef_table;
    occupancy_buffers low, table;    /* the same x, at --degree and at the table's degree */
} lab_data;

static int option(cml_lab_run *r, const char *opt, const char *value)
{
    lab_data *d = r->data;
    size_t v;
    if (strcmp(opt, "--n") == 0) {
        if (!cml_parse_count(value, 1, ((size_t)1 << 31) - 1, &d->n))
            cml_runner_bad_arg(&r->args, opt, value, "a count from 1 to 2^31 - 1, like 1000003, 2^27 or 16M");
        return 2;
    }
    if (strcmp(opt, "--degree") == 0) {
        if (!cml_parse_count(value, 0, OCC_MAX_DEGREE, &v))
            cml_runner_bad_arg(&r->args, opt, value, "a degree from 0 to 64");
        d->degree = (int)v;
        return 2;
    }
    return 0;
}

static occupancy_buffers *buffers(lab_data *d, int step)
{
    return step == 2 || step == 3 ? &d->table : &d->low;
}

static int prepare(cml_lab_run *r)
{
    lab_data *d = r->data;
    d->x = malloc(d->n * sizeof *d->x);
    d->y = malloc(d->n * sizeof *d->y);
    d->coef_low = malloc((OCC_MAX_DEGREE + 1) * sizeof(float));
    d->coef_table = malloc((OCC_MAX_DEGREE + 1) * sizeof(float));
    if (!d->x || !d->y || !d->coef_low || !d->coef_table) {
        cml_lab_say(r, "out of host memory for two arrays of %zu floats", d->n);
        return CML_EXIT_FAIL;
    }
    occupancy_make_data(d->x, d->n, d->coef_low, d->degree, r->seed, 0);
    occupancy_make_data(d->x, d->n, d->coef_table, OCC_TABLE_DEGREE, r->seed, 0);  /* the same x */
    CML_CHECK(occupancy_buffers_alloc(&d->low, d->n, d->degree, d->x, d->coef_low));
    CML_CHECK(occupancy_buffers_alloc(&d->table, d->n, OCC_TABLE_DEGREE, d->x, d->coef_table));
    cml_lab_watch_input(r, &d->low.x, d->x, "x");
    snprintf(r->rep.params, sizeof r->rep.params, "n = %zu floats, degree %d (steps 2-3: %d)",
             d->n, d->degree, OCC_TABLE_DEGREE);
    return CML_EXIT_OK;
}

static cudaError_t poison(cml_lab_run *r, int step)
{
    return occupancy_poison(buffers(r->data, step));
}

static cudaError_t launch(cml_lab_run *r, int step)
{
    return occupancy_run_step(buffers(r->data, step), step);
}

static int verify(cml_lab_run *r, int step, cml_row *row)
{
    lab_data *d = r->data;
    occupancy_buffers *b = buffers(d, step);
    occupancy_result res;
    int ok = occupancy_verify(b, d->x, b == &d->low ? d->coef_low : d->coef_table, d->y, &res);
    if (res.err != cudaSuccess) {
        cml_lab_row_error(row, "CUDA error", res.err);
        return 0;
    }
    row->status = ok ? CML_ROW_OK : CML_ROW_WRONG;
    char msg[500] = "";
    if (!res.guards_intact)
        snprintf(msg, sizeof msg, "%s", res.guard_msg);
    else if (res.check.wrong > 0)
        occupancy_describe(&res.check, step, msg, sizeof msg);
    if (!ok) {
        snprintf(row->note, sizeof row->note, "%.*s", (int)sizeof row->note - 1, msg);
        cml_lab_say(r, "step %d %s: %s", step, cml_lab_ident(r, step), msg);
    }
    return ok;
}

static double work(const cml_lab_run *r, int step)
{
    (void)step;
    return 2.0 * sizeof(float) * (double)((const lab_data *)r->data)->n; /* x read once, y written once */
}

static double flops_per_element(const lab_data *d, int step)
{
    return 2.0 * occupancy_step_degree(step, d->degree); /* one FMA per degree */
}

static size_t ceiling_bytes(const cml_lab_run *r)
{
    return ((const lab_data *)r->data)->n * sizeof(float);
}

/* Each step's resources and its place on the roofline: under the table on
 * a GPU (after_table), above it on the CPU path (before_table), where the
 * runner library prints no comparison with a ceiling. */
static void resources_table(cml_lab_run *r)
{
    lab_data *d = r->data;
    double peak = 0.0;
    int emulated = r->rep.emulated;
    if (r->args.json || r->args.check_only)
        return; /* stdout is the JSON document; a check has no table */
    if (!emulated && occupancy_fp32_peak(10, &peak) != cudaSuccess)
        peak = 0.0;
    double bw = r->have_ceiling && !emulated ? r->ceiling.best_gbs * 1e9 : 0.0;
    printf("\nRegisters, local memory and occupancy (the occupancy API), and the roofline:\n");
    if (emulated)
        printf("  (the CPU path: registers, local memory and occupancy are not measured on the CPU path,\n"
               "   nor FP32 peak; read them from the compiled object: README.md, \"Reading the compiled code\")\n");
    else
        printf("  FP32 peak (the kit's FMA kernel): %.1f TFLOP/s; copy ceiling %.0f GB/s; ridge %.1f FLOP/byte\n",
               peak / 1e12, bw / 1e9, bw > 0 ? peak / bw : 0.0);
    printf("  %-4s %-9s %5s %8s %6s %9s %10s %8s %14s %14s\n", "step", "name", "regs", "local B", "block",
           "blocks/SM", "occupancy", "FLOP/B", "roof GFLOP/s", "got GFLOP/s");
    for (int i = 0; i < r->rep.nrows; ++i) {
        const cml_row *row = &r->rep.rows[i];
        if (row->kind != CML_ROW_STEP)
            continue;
        int s = row->step;
        occupancy_resources res;
        cudaError_t err = occupancy_step_resources(s, &res);
        double ai = flops_per_element(d, s) / 8.0;
        char regs[16] = "-", local[16] = "-", occ[16] = "-", roof[24] = "-", got[24] = "-";
        if (err == cudaSuccess && res.regs > 0) {
            snprintf(regs, sizeof regs, "%d", res.regs);
            snprintf(local, sizeof local, "%zu", res.local_bytes);
            snprintf(occ, sizeof occ, "%.0f%%", 100.0 * res.occupancy);
        } else if (err != cudaSuccess) {
            snprintf(regs, sizeof regs, "error");
        }
        if (peak > 0 && bw > 0) {
            double bound = ai * bw < peak ? ai * bw : peak;
            snprintf(roof, sizeof roof, "%.0f (%s)", bound / 1e9, ai * bw < peak ? "mem" : "FP32");
        }
        if (row->timed && row->ms > 0 && !emulated)
            snprintf(got, sizeof got, "%.0f", flops_per_element(d, s) * (double)d->n / (row->ms * 1e-3) / 1e9);
        printf("  %-4d %-9s %5s %8s %6d %9d %10s %8.2f %14s %14s\n", s, cml_lab_ident(r, s), regs, local, res.block,
               res.blocks_per_sm, occ, ai, roof, got);
    }
    if (emulated)
        printf("  (\"-\": not measured on the CPU path; blocks/SM is the CPU path's one block per worker)\n");
}

static void before_table(cml_lab_run *r)
{
    if (r->rep.emulated)
        resources_table(r);
}

static void release(cml_lab_run *r)
{
    lab_data *d = r->data;
    free(d->x);
    free(d->y);
    free(d->coef_low);
    free(d->coef_table);
    d->x = d->y = d->coef_low = d->coef_table = NULL;
    occupancy_buffers_free(&d->low);
    occupancy_buffers_free(&d->table);
}

CML_LAB_STEP_TABLE(OCCUPANCY);

static const cml_lab_option options[] = {
    {"--n N", "elements (default 2^27)"},
    {"--degree D", "the polynomial's degree for steps 1 and 4, 0..64 (default 8); steps 2-3: 31"},
};

static const cml_lab lab = {
    CML_LAB_IDENTITY(OCCUPANCY, "08_occupancy", "occupancy"),
    .title = "Registers, local memory and occupancy",
    .usage = "[--step N|all|LIST] [--n N] [--degree D] [--repeat N] [--json] [--markdown FILE]\n"
             "       [--check-only] | --list | --probe | --help",
    .about = "Checks each step's output against the CPU (within the float error bound of\n"
             "its polynomial), then times it (median of N runs after a warm-up) next to a\n"
             "device copy of the same bytes, measured in this run; then prints each step's\n"
             "registers, local memory, occupancy and roofline bound (FP32 peak measured by\n"
             "the kit's FMA kernel in this run).",
    .step_help = "steps to run: all (default), 3 or 1,4",
    CML_LAB_LIST(options, options),
    .check_only_help = "check each step once: no timing, no ceiling (for compute-sanitizer)",
    .notes = "GB/s counts the bytes read plus the bytes written: 2 * 4 * n.\n"
             "FLOP/byte: 2 * degree / 8. Data are seeded: set CML_SEED to change them.",
    .option = option,
    CML_LAB_GPU_PART,
    .before_table = before_table,
    .after_table = resources_table,
};

int main(int argc, char **argv)
{
    static lab_data d = {.n = DEFAULT_N, .degree = DEFAULT_DEGREE};
    return cml_lab_main(&lab, &d, sizeof d, argc, argv);
}
