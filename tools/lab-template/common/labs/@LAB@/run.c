/* @STEM@_run: check and time the steps of lab @LAB@ next to the device copy
 * ceiling measured in the same run. Built twice: @STEM@_run (your
 * labs/@LAB@/@STEM@.cu) and @STEM@_run_ref (the reference).
 * `@STEM@_run --help` tells how to use it; the command line, table and exit
 * codes are the kit's runner library (cml_lab_runner.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_args.h>
#include <cml/cml_check.h>
#include <cml/cml_lab_runner.h>

#include "@STEM@_host.h"

#define DEFAULT_N ((size_t)1 << 28)

typedef struct lab_data {
    size_t n;
    float a;
    float *in, *out;
    @STEM@_buffers buf;
} lab_data;

static int option(cml_lab_run *r, const char *opt, const char *value)
{
    lab_data *d = r->data;
    if (strcmp(opt, "--n") != 0)
        return 0;
    if (!cml_parse_count(value, 1, (size_t)1 << 32, &d->n))
        cml_runner_bad_arg(&r->args, opt, value, "a count from 1 to 2^32, like 1000003, 2^28 or 16M");
    return 2;
}

static int prepare(cml_lab_run *r)
{
    lab_data *d = r->data;
    d->in = malloc(d->n * sizeof *d->in);
    d->out = malloc(d->n * sizeof *d->out);
    if (d->in == NULL || d->out == NULL) {
        cml_lab_say(r, "out of host memory for two arrays of %zu floats", d->n);
        return CML_EXIT_FAIL;
    }
    @STEM@_make_data(d->in, d->n, &d->a, r->seed, 0);
    CML_CHECK(@STEM@_buffers_alloc(&d->buf, d->n, d->a, d->in));
    cml_lab_watch_input(r, &d->buf.in, d->in, "in");
    snprintf(r->rep.params, sizeof r->rep.params, "n = %zu floats", d->n);
    return CML_EXIT_OK;
}

static cudaError_t poison(cml_lab_run *r, int step)
{
    (void)step;
    return @STEM@_poison(&((lab_data *)r->data)->buf);
}

static cudaError_t launch(cml_lab_run *r, int step)
{
    return @STEM@_run_step(&((lab_data *)r->data)->buf, step);
}

static int verify(cml_lab_run *r, int step, cml_row *row)
{
    lab_data *d = r->data;
    @STEM@_result res;
    int ok = @STEM@_verify(&d->buf, d->in, d->out, &res);
    if (res.err != cudaSuccess) {
        cml_lab_row_error(row, "CUDA error", res.err);
        return 0;
    }
    row->status = ok ? CML_ROW_OK : CML_ROW_WRONG;
    char msg[400];
    if (!res.guards_intact)
        snprintf(msg, sizeof msg, "%s", res.guard_msg);
    else if (res.check.wrong > 0)
        @STEM@_describe(&res.check, msg, sizeof msg);
    if (!ok) {
        snprintf(row->note, sizeof row->note, "%.*s", (int)sizeof row->note - 1, msg);
        cml_lab_say(r, "step %d %s: %s", step, cml_lab_ident(r, step), msg);
    }
    return ok;
}

static double work(const cml_lab_run *r, int step)
{
    (void)step;
    return 2.0 * sizeof(float) * (double)((const lab_data *)r->data)->n;  /* read once, written once */
}

static size_t ceiling_bytes(const cml_lab_run *r)
{
    return ((const lab_data *)r->data)->n * sizeof(float);
}

static void release(cml_lab_run *r)
{
    lab_data *d = r->data;
    free(d->in);
    free(d->out);
    d->in = d->out = NULL;
    @STEM@_buffers_free(&d->buf);
}

CML_LAB_STEP_TABLE(@STEM_UPPER@);

static const cml_lab_option options[] = {
    {"--n N", "elements (default 2^28)"},
};

static const cml_lab lab = {
    CML_LAB_IDENTITY(@STEM_UPPER@, "@LAB@", "@STEM@"),
    .title = "@TITLE@",
    .usage = "[--step N|all|LIST] [--n N] [--repeat N] [--json] [--markdown FILE]\n"
             "       [--check-only] | --list | --probe | --help",
    .about = "Checks each step's output bit for bit against the CPU, then times it (median\n"
             "of N runs after a warm-up) next to a device copy of the same bytes, measured\n"
             "in this run.",
    .step_help = "steps to run: all (default), 2 or 1,2",
    CML_LAB_LIST(options, options),
    .check_only_help = "check each step once: no timing, no ceiling (for compute-sanitizer)",
    .notes = "GB/s counts the bytes read plus the bytes written: 2 * 4 * n.\n"
             "Data are seeded: set CML_SEED to change them.",
    .option = option,
    CML_LAB_GPU_PART,
};

int main(int argc, char **argv)
{
    static lab_data d = {.n = DEFAULT_N};
    return cml_lab_main(&lab, &d, sizeof d, argc, argv);
}
