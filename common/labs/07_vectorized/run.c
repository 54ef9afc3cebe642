/* vectorized_run: check and time the steps of lab 07 next to the kit's
 * 16-byte copy kernel and cudaMemcpy device to device, measured in the
 * same run on the same bytes. Built twice: vectorized_run (your
 * labs/07_vectorized/vectorized.cu) and vectorized_run_ref (the
 * reference). `vectorized_run --help` tells how to use it; the command
 * line, table and exit codes are the kit's runner library
 * (cml_lab_runner.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_args.h>
#include <cml/cml_check.h>
#include <cml/cml_lab_runner.h>

#include "vectorized_host.h"

/* A GPU's default is far past L2 (1 GiB an array; an H100's L2 is 50 MB);
 * the CPU path emulates every CUDA thread, so a few million elements
 * there. */
#ifdef CML_CPU_BACKEND
#define DEFAULT_N (((size_t)1 << 20) + 3)
#define DEFAULT_N_TEXT "2^20 + 3"
#else
#define DEFAULT_N ((size_t)1 << 28)
#define DEFAULT_N_TEXT "2^28"
#endif

typedef struct lab_data {
    size_t n;
    unsigned off;
    float a;
    float *x, *y;           /* off + n each: the seeded inputs */
    uint32_t *layout;       /* room for one output layout */
    vectorized_buffers buf;
} lab_data;

static int option(cml_lab_run *r, const char *opt, const char *value)
{
    lab_data *d = r->data;
    size_t v = 0;
    if (strcmp(opt, "--n") == 0) {
        if (!cml_parse_count(value, 1, (size_t)1 << 30, &d->n))
            cml_runner_bad_arg(&r->args, opt, value, "a count from 1 to 2^30, like 1000003, 2^28 or 16M");
        return 2;
    }
    if (strcmp(opt, "--offset") == 0) {
        if (!cml_parse_count(value, 0, VEC_MAX_OFFSET, &v))
            cml_runner_bad_arg(&r->args, opt, value, "an element offset of 0, 1, 2 or 3");
        d->off = (unsigned)v;
        return 2;
    }
    return 0;
}

static int prepare(cml_lab_run *r)
{
    lab_data *d = r->data;
    size_t words = d->off + d->n;
    d->x = malloc(words * sizeof *d->x);
    d->y = malloc(words * sizeof *d->y);
    d->layout = malloc((2 * VEC_GUARD + d->n) * sizeof *d->layout);
    if (d->x == NULL || d->y == NULL || d->layout == NULL) {
        cml_lab_say(r, "out of host memory for three arrays of %zu floats", words);
        return CML_EXIT_FAIL;
    }
    vectorized_make_data(d->x, d->y, words, &d->a, r->seed, 0);
    CML_CHECK(vectorized_buffers_alloc(&d->buf, d->n, d->off, d->off, d->a, d->x, d->y));
    r->ninputs = 0;
    cml_lab_watch_input(r, &d->buf.x, d->x, "x");
    cml_lab_watch_input(r, &d->buf.y, d->y, "y");
    snprintf(r->rep.params, sizeof r->rep.params,
             "n = %zu elements (%.1f MiB an array), offset %u for steps 4-5", d->n,
             (double)d->n * 4 / (1 << 20), d->off);
    return CML_EXIT_OK;
}

static cudaError_t poison(cml_lab_run *r, int step)
{
    (void)step;
    return vectorized_poison(&((lab_data *)r->data)->buf);
}

static cudaError_t launch(cml_lab_run *r, int step)
{
    return vectorized_run_step(&((lab_data *)r->data)->buf, step);
}

/* After poison and a launch: the guards (vectorized_fetch) and the judge of
 * the tests and the grader (vectorized_judge); the whole story to stderr,
 * its start in the row's note. */
static int verify(cml_lab_run *r, int step, cml_row *row)
{
    lab_data *d = r->data;
    vectorized_result res;
    int ok = vectorized_fetch(&d->buf, step, d->layout, &res);
    if (res.err != cudaSuccess) {
        cml_lab_row_error(row, "CUDA error", res.err);
        return 0;
    }
    char msg[800] = "";
    if (!res.guards_intact)
        snprintf(msg, sizeof msg, "%s", res.guard_msg);
    unsigned eff = vectorized_step_offset(step, d->off);
    const uint32_t *x = (const uint32_t *)d->x + eff, *y = (const uint32_t *)d->y + eff;
    if (ok && !vectorized_judge(step, x, y, d->a, d->n, eff, d->layout, msg, sizeof msg))
        ok = 0;
    row->status = ok ? CML_ROW_OK : CML_ROW_WRONG;
    if (!ok) {
        snprintf(row->note, sizeof row->note, "%.*s", (int)sizeof row->note - 1, msg);
        cml_lab_say(r, "step %d %s: %s", step, cml_lab_ident(r, step), msg);
    }
    return ok;
}

/* Bytes a step must move: the copies read x and write out (8 n), the
 * scale-add reads x and y and writes out (12 n). */
static double work(const cml_lab_run *r, int step)
{
    double n = (double)((const lab_data *)r->data)->n;
    return (vectorized_kind(step) == VEC_SCALE_ADD ? 12.0 : 8.0) * n;
}

static size_t ceiling_bytes(const cml_lab_run *r)
{
    return ((const lab_data *)r->data)->n * sizeof(float);
}

static void release(cml_lab_run *r)
{
    lab_data *d = r->data;
    free(d->x);
    free(d->y);
    free(d->layout);
    d->x = d->y = NULL;
    d->layout = NULL;
    vectorized_buffers_free(&d->buf);
}

/* Each timed step as a fraction of the two copies measured in this run. */
static void finish(cml_lab_run *r)
{
    static char extra_md[400];
    if (!r->have_ceiling)
        return;
    for (int i = 0; i < r->rep.nrows; ++i) {
        cml_row *row = &r->rep.rows[i];
        if (row->kind != CML_ROW_STEP || !row->timed)
            continue;
        snprintf(row->note, sizeof row->note, "%.2fx copy kernel, %.2fx cudaMemcpy", row->rate / r->ceiling.kernel_gbs,
                 row->rate / r->ceiling.memcpy_gbs);
    }
    snprintf(extra_md, sizeof extra_md,
             "Notes: GB/s as a fraction of the kit's 16-byte copy kernel and of cudaMemcpy device to device, "
             "both measured in this run on %zu MiB.\n",
             r->ceiling.bytes >> 20);
    r->rep.extra_markdown = extra_md;
}

CML_LAB_STEP_TABLE(VECTORIZED);

static const cml_lab_option options[] = {
    {"--n N", "elements (default " DEFAULT_N_TEXT "); 2^20 sits in L2, 2^24 a few times L2"},
    {"--offset K", "element offset of steps 4 and 5 from a 16-byte boundary, 0-3 (default 0)"},
};

static const cml_lab lab = {
    CML_LAB_IDENTITY(VECTORIZED, "07_vectorized", "vectorized"),
    .title = "vectorized global memory access: copies and a scale-add",
    .usage = "[--step N|all|LIST] [--n N] [--offset K] [--repeat N] [--json] [--markdown FILE]\n"
             "       [--check-only] | --list | --probe | --help",
    .about = "Checks each step's output against the CPU (copies bit for bit, the scale-add\n"
             "within its rounding), then times it (median of N runs after a warm-up) next\n"
             "to the kit's 16-byte copy kernel and cudaMemcpy device to device, measured\n"
             "in this run.",
    .step_help = "steps to run: all (default), 3, 1,3 or 2-5",
    CML_LAB_LIST(options, options),
    .check_only_help = "check each step once: no timing, no ceiling (for compute-sanitizer)",
    .notes = "GB/s counts the bytes read plus the bytes written: 8 n for a copy, 12 n for\n"
             "the scale-add. Data are seeded: set CML_SEED to change them.",
    .option = option,
    CML_LAB_GPU_PART,
    .finish = finish,
};

int main(int argc, char **argv)
{
    static lab_data d = {.n = DEFAULT_N};
    return cml_lab_main(&lab, &d, sizeof d, argc, argv);
}
