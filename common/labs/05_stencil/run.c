/* stencil_run: check and time the steps of lab 05 next to a copy kernel and
 * cudaMemcpy device to device, measured in the same run, and flag any grid
 * small enough to stay in the L2 cache. Built twice: stencil_run (your
 * labs/05_stencil/stencil.cu) and stencil_run_ref (the reference).
 * `stencil_run --help` tells how to use it; the command line, table and exit
 * codes are the kit's runner library (cml_lab_runner.h). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_args.h>
#include <cml/cml_check.h>
#include <cml/cml_lab_runner.h>

#include "stencil_host.h"

/* Default grids: 512 MiB per array in each dimension, ten times the 50 MB
 * L2 of an H100, so that every byte comes from DRAM. The CPU path emulates
 * every CUDA thread: small ragged grids there (and few repeats: the runner
 * library's CPU-path default; its times are emulated and compared with
 * nothing). */
#ifdef CML_CPU_BACKEND
#define DEFAULT_N 1000003
#define DEFAULT_N_TEXT "1000003"
#define DEFAULT_NX2 1000
#define DEFAULT_NY2 777
#define DEFAULT_NX3 129
#define DEFAULT_NY3 67
#define DEFAULT_NZ3 65
#else
#define DEFAULT_N (1 << 27)
#define DEFAULT_N_TEXT "2^27: 512 MiB"
#define DEFAULT_NX2 16384
#define DEFAULT_NY2 8192
#define DEFAULT_NX3 512
#define DEFAULT_NY3 512
#define DEFAULT_NZ3 512
#endif
#define STR_(x) #x
#define STR(x) STR_(x)

/* One grid of each dimension (1D, 2D, 3D): its data and device buffers. */
typedef struct dim_data {
    st_grid grid;
    int used;        /* a selected step has these dimensions */
    float *in;
    st_buffers buf;
} dim_data;

typedef struct lab_data {
    dim_data dims[3];
    float *out;                 /* room for the largest grid's result */
    stencil_coeffs coeffs;
} lab_data;

static dim_data *dims_of(const cml_lab_run *r, int step)
{
    lab_data *d = r->data;
    return &d->dims[st_step_dims(step) - 1];
}

static size_t grid_bytes(st_grid g)
{
    return st_points(g) * sizeof(float);
}

/* "NXxNY" or "NXxNYxNZ" (count numbers) into g; 1 on success. */
static int parse_grid(const char *text, int count, st_grid *g)
{
    int v[3] = {1, 1, 1};
    const char *p = text;
    for (int k = 0; k < count; ++k) {
        char *end = NULL;
        long x = p ? strtol(p, &end, 10) : 0;
        if (p == NULL || end == p || x < 1 || x > 2147483647L)
            return 0;
        v[k] = (int)x;
        p = end;
        if (k + 1 < count) {
            if (*p != 'x' && *p != 'X')
                return 0;
            ++p;
        }
    }
    if (p == NULL || *p != '\0')
        return 0;
    g->nx = v[0];
    g->ny = v[1];
    g->nz = v[2];
    return 1;
}

static int option(cml_lab_run *r, const char *a, const char *v)
{
    lab_data *d = r->data;
    if (strcmp(a, "--n") == 0) {
        size_t n = 0;
        if (!cml_parse_count(v, 1, 2147483647u, &n))
            cml_runner_bad_arg(&r->args, a, v, "a count from 1 to 2^31-1, like 100003, 2^27 or 128M");
        d->dims[0].grid = (st_grid){(int)n, 1, 1};
        return 2;
    }
    if (strcmp(a, "--size2") == 0) {
        st_grid g;
        if (!parse_grid(v, 2, &g) || !st_grid_fits(2, g))
            cml_runner_bad_arg(&r->args, a, v, "NXxNY, like 16384x8192 or 1x300 (ny <= 1000000, nx * ny < 2^31)");
        d->dims[1].grid = g;
        return 2;
    }
    if (strcmp(a, "--size3") == 0) {
        st_grid g;
        if (!parse_grid(v, 3, &g) || !st_grid_fits(3, g))
            cml_runner_bad_arg(&r->args, a, v,
                               "NXxNYxNZ, like 512x512x512 or 513x511x509 (ny, nz <= 65535, nx * ny * nz < 2^31)");
        d->dims[2].grid = g;
        return 2;
    }
    return 0;
}

static void release(cml_lab_run *r)
{
    lab_data *d = r->data;
    for (int k = 0; k < 3; ++k) {
        free(d->dims[k].in);
        d->dims[k].in = NULL;
        st_buffers_free(&d->dims[k].buf);
    }
    free(d->out);
    d->out = NULL;
}

/* --sweep: each grid about bytes / 2 of floats (read once, written once):
 * a line, a square, a cube. */
static int sweep_size(cml_lab_run *r, int step, double bytes)
{
    (void)step;
    lab_data *d = r->data;
    double points = bytes / (2.0 * sizeof(float));
    int side2 = (int)sqrt(points), side3 = (int)cbrt(points);
    d->dims[0].grid = (st_grid){(int)points, 1, 1};
    d->dims[1].grid = (st_grid){side2, side2, 1};
    d->dims[2].grid = (st_grid){side3, side3, side3};
    return side3 >= 1 && st_grid_fits(1, d->dims[0].grid) && st_grid_fits(2, d->dims[1].grid) &&
           st_grid_fits(3, d->dims[2].grid);
}

static int prepare(cml_lab_run *r)
{
    lab_data *d = r->data;
    size_t largest = 0;
    st_make_coeffs(&d->coeffs, r->seed);
    for (int s = 1; s <= STENCIL_NUM_STEPS; ++s)
        if (cml_lab_selected(r, s))
            dims_of(r, s)->used = 1;
    r->ninputs = 0;
    for (int k = 0; k < 3; ++k) {
        dim_data *dd = &d->dims[k];
        if (!dd->used)
            continue;
        size_t n = st_points(dd->grid);
        largest = n > largest ? n : largest;
        dd->in = malloc(n * sizeof *dd->in);
        if (dd->in == NULL) {
            cml_lab_say(r, "out of host memory for a grid of %zu points", n);
            return CML_EXIT_FAIL;
        }
        st_make_data(dd->in, n, r->seed, (uint64_t)k);
        CML_CHECK(st_buffers_alloc(&dd->buf, n));
        CML_CHECK(st_upload(&dd->buf, dd->in, n));
        static const char *names[3] = {"in (1D)", "in (2D)", "in (3D)"};
        cml_lab_watch_input(r, &dd->buf.in, dd->in, names[k]);
    }
    d->out = malloc(largest * sizeof *d->out);
    if (d->out == NULL) {
        cml_lab_say(r, "out of host memory for a grid of %zu points", largest);
        return CML_EXIT_FAIL;
    }
    size_t used = 0;
    r->rep.params[0] = '\0';
    for (int k = 0; k < 3; ++k) {
        const st_grid *g = &d->dims[k].grid;
        if (!d->dims[k].used || used >= sizeof r->rep.params)
            continue;
        if (k == 0)
            used += (size_t)snprintf(r->rep.params + used, sizeof r->rep.params - used, "1D n = %d, ", g->nx);
        else if (k == 1)
            used += (size_t)snprintf(r->rep.params + used, sizeof r->rep.params - used, "2D %d x %d, ", g->nx, g->ny);
        else
            used += (size_t)snprintf(r->rep.params + used, sizeof r->rep.params - used, "3D %d x %d x %d, ", g->nx,
                                     g->ny, g->nz);
    }
    if (used < sizeof r->rep.params)
        snprintf(r->rep.params + used, sizeof r->rep.params - used, "floats");
    return CML_EXIT_OK;
}

static cudaError_t poison(cml_lab_run *r, int step)
{
    return st_poison(&dims_of(r, step)->buf);
}

static cudaError_t launch(cml_lab_run *r, int step)
{
    lab_data *d = r->data;
    dim_data *dd = dims_of(r, step);
    return st_run_step(&dd->buf, step, dd->grid, &d->coeffs);
}

/* After poison and a launch: out and its guards checked (st_verify, the
 * second half of the tests' st_run_checked). The whole story goes to
 * stderr; the note has the start. */
static int verify(cml_lab_run *r, int step, cml_row *row)
{
    lab_data *d = r->data;
    dim_data *dd = dims_of(r, step);
    st_result res;
    int ok = st_verify(&dd->buf, step, dd->grid, &d->coeffs, dd->in, d->out, &res);
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
        st_describe(&res.check, msg, sizeof msg);
        cml_lab_say(r, "step %d %s: %s", step, cml_lab_ident(r, step), msg);
        if (res.guards_intact)
            snprintf(row->note, sizeof row->note, "%.*s", (int)sizeof row->note - 1, msg);
    }
    return ok;
}

/* One read and one write of every point: the bytes a stencil must move,
 * whatever its caches do with the neighbours. */
static double work(const cml_lab_run *r, int step)
{
    return 2.0 * (double)grid_bytes(dims_of(r, step)->grid);
}

/* The copy moves as many bytes as the largest grid, and never fewer than
 * twice the L2 in each array: the ceiling is always a DRAM speed. */
static size_t ceiling_bytes(const cml_lab_run *r)
{
    const lab_data *d = r->data;
    size_t bytes = 2 * (size_t)(r->dev.l2_bytes > 0 ? r->dev.l2_bytes : 0);
    for (int k = 0; k < 3; ++k)
        if (d->dims[k].used && grid_bytes(d->dims[k].grid) > bytes)
            bytes = grid_bytes(d->dims[k].grid);
    return bytes;
}

/* How the step's arrays compare with the L2: 2 when in and out together fit
 * in it (the timed repeats then run from the cache, faster than DRAM), 1
 * when they are under four times its size (the cache still helps), 0 when
 * the measurement is of DRAM. */
static int l2_fit(const cml_lab_run *r, int step)
{
    double both = work(r, step), l2 = (double)r->dev.l2_bytes;
    if (l2 <= 0.0)
        return 0;
    return both <= l2 ? 2 : both <= 4.0 * l2 ? 1 : 0;
}

static const char *l2_words(int fit)
{
    return fit == 2 ? "L2-RESIDENT: in + out fit in the L2, a cache speed, not DRAM"
           : fit == 1 ? "near the L2's size: the cache still helps"
                      : "";
}

/* The notes: each timed step against the copy kernel and cudaMemcpy, and
 * the L2 flag; the ratios go into the JSON too. */
static void finish(cml_lab_run *r)
{
    static char extra_md[700], extra_json[2048];
    size_t jused = (size_t)snprintf(extra_json, sizeof extra_json,
                                    "{\"copy_kernel_gbs\": %.1f, \"memcpy_gbs\": %.1f, \"l2_bytes\": %d, \"steps\": [",
                                    r->ceiling.kernel_gbs, r->ceiling.memcpy_gbs, r->dev.l2_bytes);
    int listed = 0;
    for (int i = 0; i < r->rep.nrows; ++i) {
        cml_row *row = &r->rep.rows[i];
        if (row->kind != CML_ROW_STEP || !row->timed)
            continue;
        double vs_kernel = row->rate / r->ceiling.kernel_gbs, vs_memcpy = row->rate / r->ceiling.memcpy_gbs;
        int fit = l2_fit(r, row->step);
        snprintf(row->note, sizeof row->note, "%.2fx copy kernel, %.2fx cudaMemcpy%s%s", vs_kernel, vs_memcpy,
                 fit ? "; " : "", l2_words(fit));
        if (jused < sizeof extra_json)
            jused += (size_t)snprintf(extra_json + jused, sizeof extra_json - jused,
                                      "%s{\"step\": %d, \"vs_copy_kernel\": %.3f, \"vs_memcpy\": %.3f, "
                                      "\"l2_resident\": %s}",
                                      listed++ ? ", " : "", row->step, vs_kernel, vs_memcpy,
                                      fit == 2 ? "true" : "false");
    }
    if (jused < sizeof extra_json)
        snprintf(extra_json + jused, sizeof extra_json - jused, "]}");
    r->rep.extra_json = jused < sizeof extra_json ? extra_json : NULL;
    snprintf(extra_md, sizeof extra_md,
             "Notes: GB/s counts one read and one write of every point (2 x 4 bytes per point), whatever the "
             "caches do with the neighbours; each step as a fraction of the copy kernel (16 bytes per thread) "
             "and of cudaMemcpy device to device, both measured in this run on %.0f MB per array. A grid whose "
             "in and out fit in the %.0f MiB L2 is marked L2-RESIDENT: its speed is the cache's, not DRAM's.\n",
             (double)r->ceiling.bytes / 1e6, (double)r->dev.l2_bytes / (1 << 20));
    r->rep.extra_markdown = extra_md;
}

/* The lines under the table: each step's grid and its ratios. */
static void after_table(cml_lab_run *r)
{
    if (r->args.check_only)
        return;
    printf("Each step against the copy kernel (%.1f GB/s) and cudaMemcpy (%.1f GB/s),\n"
           "both copying %.0f MB in this run; GB/s counts 8 bytes per point:\n\n",
           r->ceiling.kernel_gbs, r->ceiling.memcpy_gbs, (double)r->ceiling.bytes / 1e6);
    printf("step  %-12s %-18s %12s %12s  %s\n", "kernel", "grid", "x copy kern", "x cudaMemcpy", "L2");
    for (int i = 0; i < r->rep.nrows; ++i) {
        const cml_row *row = &r->rep.rows[i];
        if (row->kind != CML_ROW_STEP || !row->timed)
            continue;
        st_grid g = dims_of(r, row->step)->grid;
        char grid[40];
        int dims = st_step_dims(row->step);
        if (dims == 1)
            snprintf(grid, sizeof grid, "%d", g.nx);
        else if (dims == 2)
            snprintf(grid, sizeof grid, "%dx%d", g.nx, g.ny);
        else
            snprintf(grid, sizeof grid, "%dx%dx%d", g.nx, g.ny, g.nz);
        int fit = l2_fit(r, row->step);
        printf("%4d  %-12s %-18s %12.2f %12.2f  %s\n", row->step, row->name, grid, row->rate / r->ceiling.kernel_gbs,
               row->rate / r->ceiling.memcpy_gbs, fit == 2 ? "RESIDENT" : fit == 1 ? "near" : "-");
    }
    putchar('\n');
}

CML_LAB_STEP_TABLE(STENCIL);

static const cml_lab_option options[] = {
    {"--n N", "points of the 1D grid, step 1 (default " DEFAULT_N_TEXT ")"},
    {"--size2 NXxNY", "the 2D grid, step 2 (default " STR(DEFAULT_NX2) "x" STR(DEFAULT_NY2) ")"},
    {"--size3 NXxNYxNZ", "the 3D grid, steps 3-6 (default " STR(DEFAULT_NX3) "x" STR(DEFAULT_NY3) "x" STR(
                             DEFAULT_NZ3) ";\ntry 513x511x509, and 160x160x160: an L2-resident grid)"},
};

static const cml_lab lab = {
    CML_LAB_IDENTITY(STENCIL, "05_stencil", "stencil"),
    .title = "stencils with halos, 1D, 2D and 3D",
    .usage = "[--step N|all|LIST] [--n N] [--size2 NXxNY] [--size3 NXxNYxNZ]\n"
             "       [--repeat N] [--json] [--markdown FILE] [--check-only]\n"
             "       [--sweep [--sweep-max BYTES]] | --list | --probe | --help",
    .about = "Checks every point of each step's output against the stencil computed in\n"
             "double on the CPU, then times the step (median of N runs after a warm-up)\n"
             "next to a copy kernel and cudaMemcpy device to device, both measured in\n"
             "this run on at least twice the L2's size. A grid whose in and out fit in\n"
             "the L2 is flagged L2-RESIDENT: its GB/s are the cache's, not DRAM's.",
    .step_help = "steps to run: all (default), 6, 1,2,6 or 3-6",
    CML_LAB_LIST(options, options),
    .check_only_help = "check each step once: no timing, no copy\n(for compute-sanitizer)",
    .notes = "GB/s counts one read and one write of every point: 2 * 4 * points bytes.\n"
             "Data and coefficients are seeded: set CML_SEED to change them.",
    .option = option,
    CML_LAB_GPU_PART,
    .finish = finish,
    .after_table = after_table,
    .sweep_size = sweep_size,
};

int main(int argc, char **argv)
{
    static lab_data d = {.dims = {{.grid = {DEFAULT_N, 1, 1}},
                                  {.grid = {DEFAULT_NX2, DEFAULT_NY2, 1}},
                                  {.grid = {DEFAULT_NX3, DEFAULT_NY3, DEFAULT_NZ3}}}};
    return cml_lab_main(&lab, &d, sizeof d, argc, argv);
}
