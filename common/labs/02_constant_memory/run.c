/* constmem_run: check and time the steps of lab 02: the walk through
 * __constant__, __ldg and plain loads with its cost against d, the table
 * past the constant cache, and the convolution next to the copy kernel and
 * cudaMemcpy measured in the same run. Built twice: constmem_run (your
 * labs/02_constant_memory/constmem.cu) and constmem_run_ref (the
 * reference). `constmem_run --help` tells how to use it; the command line,
 * table and exit codes are the kit's runner library (cml_lab_runner.h). */
#define _POSIX_C_SOURCE 200809L
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_args.h>
#include <cml/cml_check.h>
#include <cml/cml_lab_runner.h>
#include <cml/cml_timing.h>

#include "constmem_host.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* Defaults. The walk: 2^21 threads (about 8 waves of 2048 threads on a
 * 132-SM H100), 32 passes of 32 reads: 1024 reads a thread, and one 4-byte
 * store, so the time is the reads' alone. The image: 8192 x 8192 floats,
 * 512 MB read + written, ten times the H100's 50 MB L2. The CPU path
 * emulates every CUDA thread: small sizes there, and no target applies. */
#ifdef CML_CPU_BACKEND
#define DEFAULT_THREADS 8192
#define DEFAULT_PASSES 2
#define DEFAULT_SIDE 509
#else
#define DEFAULT_THREADS 2097152
#define DEFAULT_PASSES 32
#define DEFAULT_SIDE 8192
#endif
#define DEFAULT_RADIUS 2

/* Targets a GPU run is held to (the handout explains them). */
#define TARGET_D_SPREAD 0.25  /* step 2: cost at d within 25% of d x the cost at d = 1 */
#define TARGET_BROADCAST 1.0  /* step 1 at least as fast as __ldg at d = 1 */
#define TARGET_CONV 0.90      /* the best convolution step against the copy kernel */

typedef struct lab_data {
    int threads, passes, width, height, radius;
    unsigned signs;  /* the walk's (constmem.h), drawn after the upload */
    float table[CONSTMEM_TABLE_ENTRIES], big[CONSTMEM_BIG_ENTRIES], w[CONSTMEM_MAX_TAPS];
    float *img, *img_out, *lk_out;
    cm_lookup_buffers lk;
    cm_conv_buffers cv;
    int have_lk, have_cv;
    double curve[CONSTMEM_NUM_STEPS + 1][CM_NUM_D];  /* ms per walk, steps 2-4 */
    int have_curve[CONSTMEM_NUM_STEPS + 1];
    double big_ldg_ms, step1_ms, anchor_ms;          /* step 5's and step 1's comparisons (-1: none) */
} lab_data;

static int option(cml_lab_run *r, const char *a, const char *v)
{
    lab_data *d = r->data;
    struct {
        const char *name;
        int *at;
        size_t lo, hi;
        const char *expect;
    } opts[] = {
        {"--threads", &d->threads, 1, CONSTMEM_MAX_THREADS, "a count from 1 to 2^26, like 100003 or 2M"},
        {"--passes", &d->passes, 1, CONSTMEM_MAX_PASSES, "a count from 1 to " STR(CONSTMEM_MAX_PASSES)},
        {"--width", &d->width, 1, INT_MAX, "a count from 1 to 2^31-1, like 8191 or 8K"},
        {"--height", &d->height, 1, 4194240, "a count from 1 to 4194240"},
        {"--radius", &d->radius, 1, CONSTMEM_MAX_RADIUS, "a radius from 1 to " STR(CONSTMEM_MAX_RADIUS)},
    };
    for (size_t k = 0; k < sizeof opts / sizeof opts[0]; ++k) {
        if (strcmp(a, opts[k].name) != 0)
            continue;
        size_t n = 0;
        if (!cml_parse_count(v, opts[k].lo, opts[k].hi, &n))
            cml_runner_bad_arg(&r->args, a, v, opts[k].expect);
        *opts[k].at = (int)n;
        return 2;
    }
    return 0;
}

static void validate(cml_lab_run *r)
{
    lab_data *d = r->data;
    if ((long long)d->width * d->height >= (1LL << 31)) {
        cml_lab_say(r, "--width x --height must stay below 2^31 pixels");
        exit(CML_EXIT_USAGE);
    }
}

static int any_selected(const cml_lab_run *r, cm_kind kind)
{
    for (int s = 1; s <= CONSTMEM_NUM_STEPS; ++s)
        if (cml_lab_selected(r, s) && cm_step_kind(s) == kind)
            return 1;
    return 0;
}

static double work(const cml_lab_run *r, int step)
{
    const lab_data *d = r->data;
    if (cm_step_kind(step) == CM_CONV)
        return 2.0 * sizeof(float) * (double)d->width * (double)d->height;  /* read once, written once */
    /* the bytes the threads read from the table, summed over the sweep */
    return sizeof(float) * (double)CONSTMEM_PASS_READS * d->passes * (double)d->threads * cm_step_nd(step);
}

static size_t ceiling_bytes(const cml_lab_run *r)
{
    const lab_data *d = r->data;
    return sizeof(float) * (size_t)d->width * (size_t)d->height;
}

/* --sweep: the convolutions' square image, read once and written once
 * (a lookup step's work is its walk's, which no image size changes). */
static int sweep_size(cml_lab_run *r, int step, double bytes)
{
    lab_data *d = r->data;
    d->width = d->height = (int)sqrt(bytes / (2.0 * sizeof(float)));
    return cm_step_kind(step) == CM_CONV && d->width >= 1;
}

static int prepare(cml_lab_run *r)
{
    lab_data *d = r->data;
    r->ninputs = 0;
    if (any_selected(r, CM_LOOKUP)) {
        d->lk_out = malloc((size_t)CM_NUM_D * (size_t)d->threads * sizeof(float));
        if (d->lk_out == NULL) {
            cml_lab_say(r, "out of host memory for %d threads", d->threads);
            return CML_EXIT_FAIL;
        }
        cm_make_table(d->table, CONSTMEM_TABLE_ENTRIES, r->seed, 0);
        cm_make_table(d->big, CONSTMEM_BIG_ENTRIES, r->seed, 1);
        CML_CHECK(cm_lookup_alloc(&d->lk, d->threads));
        d->have_lk = 1;
        cudaError_t err = cm_call_upload_tables(d->table, d->big);
        if (err != cudaSuccess) {
            cml_lab_say(r, "constmem_upload_tables: %s: %s", cudaGetErrorName(err), cm_upload_error_text());
            return CML_EXIT_FAIL;
        }
        CML_CHECK(cm_lookup_upload_globals(&d->lk, d->table, d->big));
        d->signs = cm_make_signs(r->seed, 4);  /* after the upload: it cannot precompute the signed sums */
        cml_lab_watch_input(r, &d->lk.table, d->table, "table (global copy)");
        cml_lab_watch_input(r, &d->lk.big, d->big, "big table (global copy)");
    }
    if (any_selected(r, CM_CONV)) {
        size_t n = (size_t)d->width * (size_t)d->height;
        d->img = malloc(n * sizeof(float));
        d->img_out = malloc(n * sizeof(float));
        if (d->img == NULL || d->img_out == NULL) {
            cml_lab_say(r, "out of host memory for two %d x %d images", d->width, d->height);
            return CML_EXIT_FAIL;
        }
        cm_make_image(d->img, n, r->seed, 2);
        cm_make_filter(d->w, d->radius, r->seed, 3);
        CML_CHECK(cm_conv_alloc(&d->cv, d->width, d->height));
        d->have_cv = 1;
        CML_CHECK(cm_conv_upload_image(&d->cv, d->img));
        CML_CHECK(cm_conv_upload_filter_global(&d->cv, d->w, d->radius));
        cudaError_t err = cm_call_upload_filter(d->w, d->radius);
        if (err != cudaSuccess) {
            cml_lab_say(r, "constmem_upload_filter: %s: %s", cudaGetErrorName(err), cm_upload_error_text());
            return CML_EXIT_FAIL;
        }
        cml_lab_watch_input(r, &d->cv.in, d->img, "in");
    }
    /* the page's header names only what the steps run use: the walk, the image, or both */
    int used = 0;
    if (d->have_lk)
        used = snprintf(r->rep.params, sizeof r->rep.params, "walk: %d threads x %d reads", d->threads,
                        d->passes * CONSTMEM_PASS_READS);
    if (d->have_cv && used >= 0 && (size_t)used < sizeof r->rep.params)
        snprintf(r->rep.params + used, sizeof r->rep.params - (size_t)used, "%simage %d x %d floats, radius %d",
                 used ? "; " : "", d->width, d->height, d->radius);
    return CML_EXIT_OK;
}

static void release(cml_lab_run *r)
{
    lab_data *d = r->data;
    free(d->img);
    free(d->img_out);
    free(d->lk_out);
    d->img = d->img_out = d->lk_out = NULL;
    if (d->have_lk)
        cm_lookup_free(&d->lk);
    if (d->have_cv)
        cm_conv_free(&d->cv);
    d->have_lk = d->have_cv = 0;
}

static cudaError_t poison(cml_lab_run *r, int step)
{
    lab_data *d = r->data;
    return cm_step_kind(step) == CM_CONV ? cm_conv_poison(&d->cv) : cm_lookup_poison(&d->lk);
}

static cudaError_t launch(cml_lab_run *r, int step)
{
    lab_data *d = r->data;
    if (cm_step_kind(step) == CM_CONV)
        return cm_conv_launch(&d->cv, step, d->w, d->radius);
    return cm_lookup_launch(&d->lk, step, cm_step_big(step), d->passes, d->signs);
}

/* After poison and a launch: outputs and guards checked (the second half
 * of the tests' checked run). The whole story goes to stderr; the note has
 * its start. */
static int verify(cml_lab_run *r, int step, cml_row *row)
{
    lab_data *d = r->data;
    char msg[1600] = "";
    int ok;
    cudaError_t err;
    int intact;
    const char *guard_msg;
    if (cm_step_kind(step) == CM_CONV) {
        static cm_conv_result res;
        ok = cm_conv_verify(&d->cv, d->img, d->w, d->radius, d->img_out, &res);
        err = res.err;
        intact = res.guards_intact;
        guard_msg = res.guard_msg;
        if (err == cudaSuccess && res.check.wrong > 0)
            cm_conv_describe(&res.check, msg, sizeof msg);
    } else {
        static cm_lookup_result res;
        ok = cm_lookup_verify(&d->lk, step, cm_step_big(step), d->passes, d->signs, d->table, d->big, d->lk_out,
                              &res);
        err = res.err;
        intact = res.guards_intact;
        guard_msg = res.guard_msg;
        for (int k = 0; k < res.nd && err == cudaSuccess && !msg[0]; ++k)
            if (res.check[k].wrong > 0)
                cm_lookup_describe(&res.check[k], msg, sizeof msg);
    }
    if (err != cudaSuccess) {
        cml_lab_row_error(row, "CUDA error", err);
        return 0;
    }
    row->status = ok ? CML_ROW_OK : CML_ROW_WRONG;
    if (!intact) {
        snprintf(row->note, sizeof row->note, "%s", guard_msg);
        cml_lab_say(r, "step %d %s: %s", step, cml_lab_ident(r, step), guard_msg);
    }
    if (msg[0]) {
        cml_lab_say(r, "step %d %s: %s", step, cml_lab_ident(r, step), msg);
        if (intact)
            snprintf(row->note, sizeof row->note, "%.*s", (int)sizeof row->note - 1, msg);
    }
    return ok;
}

/* ------------------------------------------------------------ the curve */

typedef struct one_walk {
    lab_data *d;
    int step, dval, big, slice;
} one_walk;

static cudaError_t launch_one(void *ctx)
{
    one_walk *w = ctx;
    return cm_lookup_launch_one(&w->d->lk, w->step, w->dval, w->big, w->d->passes, w->d->signs, w->slice);
}

/* The median time of one walk (ms), or -1 on a CUDA error (said on stderr). */
static double time_walk(cml_lab_run *r, int step, int dval, int big)
{
    lab_data *d = r->data;
    one_walk w = {d, step, dval, big, 0};
    cml_timing tm;
    cudaError_t err = cml_time_median(launch_one, &w, 3, r->args.repeat, &tm);
    if (err != cudaSuccess) {
        cml_lab_say(r, "timing step %d at d = %d: %s", step, dval, cudaGetErrorString(err));
        return -1.0;
    }
    return tm.median_ms;
}

/* A step's row, when it was checked and timed. */
static const cml_row *timed_row(const cml_lab_run *r, int step)
{
    for (int i = 0; i < r->rep.nrows; ++i)
        if (r->rep.rows[i].kind == CML_ROW_STEP && r->rep.rows[i].step == step && r->rep.rows[i].timed)
            return &r->rep.rows[i];
    return NULL;
}

static cudaError_t launch_anchor(void *ctx)
{
    lab_data *d = ctx;
    return cm_anchor_coeffs_ldg(&d->lk, d->passes, d->signs);
}

/* Step 1's code reading the table through __ldg: checked like a step, then
 * timed; a row of the table. Returns 1 when it is wrong. */
static int coeff_anchor(cml_lab_run *r)
{
    lab_data *d = r->data;
    cml_row *row = cml_report_add(&r->rep, CML_ROW_ANCHOR, 0, "__ldg, step 1's code");
    if (row == NULL)
        return 0;
    snprintf(row->note, sizeof row->note, "step 1's reads from the table's global copy");
    cm_lookup_check chk;
    cudaError_t err = cm_lookup_poison(&d->lk);
    if (err == cudaSuccess)
        err = cm_anchor_coeffs_ldg(&d->lk, d->passes, d->signs);
    if (err == cudaSuccess)
        err = cudaMemcpy(d->lk_out, d->lk.out.ptr, (size_t)d->threads * sizeof(float), cudaMemcpyDeviceToHost);
    if (err != cudaSuccess) {
        cml_lab_row_error(row, "CUDA error", err);
        return 1;
    }
    if (cm_lookup_compare(d->table, 0, CM_COEFFS, d->passes, d->signs, d->lk_out, d->threads, &chk) != 0) {
        row->status = CML_ROW_WRONG;
        cm_lookup_describe(&chk, row->note, sizeof row->note);
        return 1;
    }
    cml_timing tm;
    err = cml_time_median(launch_anchor, d, 3, r->args.repeat, &tm);
    if (err != cudaSuccess) {
        cml_lab_row_error(row, "CUDA error while timing", err);
        return 1;
    }
    row->status = CML_ROW_OK;
    row->timed = 1;
    row->ms = tm.median_ms;
    row->rate = work(r, 1) / (tm.median_ms * 1e6);
    d->anchor_ms = tm.median_ms;
    return 0;
}

/* Before the buffers go: the walks of the passed steps 2-4 one d at a time,
 * step 1's __ldg anchor, and step 5's comparison with __ldg. Only steps
 * that passed their check are timed. Returns the anchors that failed. */
static int anchors(cml_lab_run *r)
{
    lab_data *d = r->data;
    int failed = 0;
    for (int s = 2; s <= 4; ++s) {
        if (timed_row(r, s) == NULL)
            continue;
        d->have_curve[s] = 1;
        for (int k = 0; k < CM_NUM_D; ++k)
            if ((d->curve[s][k] = time_walk(r, s, cm_d(k), 0)) < 0)
                d->have_curve[s] = 0;
    }
    d->big_ldg_ms = d->step1_ms = d->anchor_ms = -1.0;
    if (timed_row(r, 3) != NULL && timed_row(r, 5) != NULL)
        d->big_ldg_ms = time_walk(r, 3, 1, 1);
    if (timed_row(r, 1) != NULL) {
        d->step1_ms = timed_row(r, 1)->ms;
        failed += coeff_anchor(r);
    }
    return failed;
}

/* ------------------------------------------------------------ notes */

static int emulated(void)
{
#ifdef CML_CPU_BACKEND
    return 1;
#else
    return 0;
#endif
}

static void finish(cml_lab_run *r)
{
    lab_data *d = r->data;
    static char extra_md[2048], extra_json[2048];
    size_t mused = 0, jused = 0;
    double copy = r->ceiling.kernel_gbs;
    double best_conv = 0.0;
    int best_step = 0;
    int rows_lk = 0, rows_cv = 0;  /* the page's rows of each kind (release() has freed the data by now) */
    for (int i = 0; i < r->rep.nrows; ++i) {
        cml_row *row = &r->rep.rows[i];
        if (row->kind != CML_ROW_STEP)
            continue;
        if (cm_step_kind(row->step) == CM_CONV)
            rows_cv = 1;
        else
            rows_lk = 1;
        if (!row->timed)
            continue;
        if (cm_step_kind(row->step) == CM_CONV) {
            snprintf(row->note, sizeof row->note, "%.2fx copy kernel, %.2fx cudaMemcpy", row->rate / copy,
                     row->rate / r->ceiling.memcpy_gbs);
            if (row->rate > best_conv) {
                best_conv = row->rate;
                best_step = row->step;
            }
        } else if (row->step >= 2 && row->step <= 4 && d->have_curve[row->step]) {
            const double *c = d->curve[row->step];
            snprintf(row->note, sizeof row->note,
                     "sweep d = 1..32; cost x d=1: %.2f %.2f %.2f %.2f %.2f (d = 2, 4, 8, 16, 32)", c[1] / c[0],
                     c[2] / c[0], c[3] / c[0], c[4] / c[0], c[5] / c[0]);
        } else if (row->step == 5) {
            size_t u = 0;
            row->note[0] = '\0';
            if (d->have_curve[2])
                u += (size_t)snprintf(row->note, sizeof row->note, "%.2fx the time of step 2 at d = 1 (4 KB table)",
                                      row->ms / d->curve[2][0]);
            if (d->big_ldg_ms > 0 && u < sizeof row->note)
                snprintf(row->note + u, sizeof row->note - u, "%s%.2fx __ldg on the same walk", u ? ", " : "",
                         row->ms / d->big_ldg_ms);
        } else if (row->step == 1 && d->anchor_ms > 0) {
            snprintf(row->note, sizeof row->note, "%.2fx the speed of the same code through __ldg",
                     d->anchor_ms / row->ms);
        }
    }
#define MD(...) (mused += (size_t)snprintf(extra_md + mused, mused < sizeof extra_md ? sizeof extra_md - mused : 0, __VA_ARGS__))
#define JS(...) (jused += (size_t)snprintf(extra_json + jused, jused < sizeof extra_json ? sizeof extra_json - jused : 0, __VA_ARGS__))
    MD("Notes: %s%s%s%s\n",
       rows_lk ? "steps 1-5 count GB/s of table reads (4 bytes per thread and read), served by the caches, not "
                 "DRAM: compare them with each other"
               : "",
       rows_lk && rows_cv ? "; " : "",
       rows_cv ? "steps 6-8 count the image read and written once, as fractions of the copy kernel and "
                 "cudaMemcpy measured in this run."
               : ".",
       emulated() ? " Times are emulated on the CPU: no target applies." : "");
    JS("{\"emulated\": %s, \"threads\": %d, \"passes\": %d, \"curve\": [", emulated() ? "true" : "false",
       d->threads, d->passes);
    int listed = 0;
    for (int s = 2; s <= 4; ++s) {
        if (!d->have_curve[s])
            continue;
        JS("%s{\"step\": %d, \"ms\": [", listed++ ? ", " : "", s);
        for (int k = 0; k < CM_NUM_D; ++k)
            JS("%s%.5f", k ? ", " : "", d->curve[s][k]);
        JS("]}");
    }
    if (listed) {
        MD("\nCost of one walk at d distinct entries per warp and read, as a multiple of its cost at d = 1:\n\n| d |");
        for (int s = 2; s <= 4; ++s)
            if (d->have_curve[s])
                MD(" step %d %s |", s, cml_lab_ident(r, s));
        MD("\n|---|");
        for (int s = 2; s <= 4; ++s)
            if (d->have_curve[s])
                MD("---|");
        MD("\n");
        for (int k = 0; k < CM_NUM_D; ++k) {
            MD("| %d |", cm_d(k));
            for (int s = 2; s <= 4; ++s)
                if (d->have_curve[s])
                    MD(" %.2f |", d->curve[s][k] / d->curve[s][0]);
            MD("\n");
        }
    }
    JS("], \"copy_kernel_gbs\": %.3f, \"best_conv_step\": %d, \"best_conv_x_copy\": %.4f, "
       "\"step1_ms\": %.5f, \"step1_ldg_anchor_ms\": %.5f, \"big_ldg_ms\": %.5f}",
       copy, best_step, copy > 0 ? best_conv / copy : 0.0, d->step1_ms, d->anchor_ms, d->big_ldg_ms);
    if (best_step)
        MD("\nBest convolution: step %d, %.2fx the copy kernel.\n", best_step, best_conv / copy);
#undef MD
#undef JS
    r->rep.extra_markdown = mused < sizeof extra_md ? extra_md : NULL;
    r->rep.extra_json = jused < sizeof extra_json ? extra_json : NULL;
}

/* The lines under the table: the curve, and each target with its verdict. */
static void after_table(cml_lab_run *r)
{
    lab_data *d = r->data;
    if (r->args.check_only)
        return;
    const char *tag = emulated() ? "emulated, no target" : NULL;
    int any = 0;
    for (int s = 2; s <= 4; ++s)
        any |= d->have_curve[s];
    if (any) {
        printf("Cost of one walk at d distinct entries per warp and read, as a multiple of d = 1%s:\n\n    d",
               emulated() ? " (emulated)" : "");
        for (int s = 2; s <= 4; ++s)
            if (d->have_curve[s])
                printf("  %12s", cml_lab_ident(r, s));
        printf("\n");
        for (int k = 0; k < CM_NUM_D; ++k) {
            printf("%5d", cm_d(k));
            for (int s = 2; s <= 4; ++s)
                if (d->have_curve[s])
                    printf("  %11.2fx", d->curve[s][k] / d->curve[s][0]);
            printf("\n");
        }
        printf("(ms at d = 1:");
        for (int s = 2; s <= 4; ++s)
            if (d->have_curve[s])
                printf(" %s %.4f", cml_lab_ident(r, s), d->curve[s][0]);
        printf(")\n\n");
    }
    printf("Targets:\n");
    if (d->have_curve[2]) {
        int within = 1;
        for (int k = 1; k < CM_NUM_D; ++k) {
            double x = d->curve[2][k] / d->curve[2][0] / cm_d(k);
            within &= x >= 1.0 - TARGET_D_SPREAD && x <= 1.0 + TARGET_D_SPREAD;
        }
        printf("  step 2: cost at d within 25%% of d x the cost at d = 1, d = 2..32: %s\n",
               tag ? tag : within ? "met" : "NOT met");
    } else {
        printf("  step 2: cost against d: not measured (step 2 not run or not passing)\n");
    }
    if (d->step1_ms > 0 && d->anchor_ms > 0) {
        double x = d->anchor_ms / d->step1_ms;
        printf("  step 1: broadcast __constant__ at %.2fx the speed of the same code through __ldg (target >= %.1f): "
               "%s\n",
               x, TARGET_BROADCAST, tag ? tag : x >= TARGET_BROADCAST ? "met" : "NOT met");
    } else {
        printf("  step 1: broadcast against __ldg: not measured (step 1 not run or not passing)\n");
    }
    double best = 0.0;
    int best_step = 0;
    for (int s = 6; s <= 8; ++s) {
        const cml_row *row = timed_row(r, s);
        if (row != NULL && row->rate > best) {
            best = row->rate;
            best_step = s;
        }
    }
    if (best_step) {
        double x = best / r->ceiling.kernel_gbs;
        printf("  convolution: best step %d at %.2fx the copy kernel at %d x %d (target >= %.2f at 8192 x 8192): %s\n",
               best_step, x, d->width, d->height, TARGET_CONV,
               tag ? tag : (d->width != 8192 || d->height != 8192) ? "other size, not judged"
                                                                   : x >= TARGET_CONV ? "met" : "NOT met");
    } else {
        printf("  convolution: not measured (steps 6-8 not run or not passing)\n");
    }
    if (d->have_curve[2] && d->have_curve[3])
        printf("  (an indexed broadcast, step 2 at d = 1, runs at %.2fx the speed of __ldg at d = 1, step 3)\n",
               d->curve[3][0] / d->curve[2][0]);
    putchar('\n');
}

CML_LAB_STEP_TABLE(CONSTMEM);

static const cml_lab_option options[] = {
    {"--threads N", "threads of the walk, steps 1-5 (default " STR(DEFAULT_THREADS) ")"},
    {"--passes P", "passes of " STR(CONSTMEM_PASS_READS) " reads per thread, 1.." STR(
                       CONSTMEM_MAX_PASSES) " (default " STR(DEFAULT_PASSES) ")"},
    {"--width W", "image width, steps 6-8 (default " STR(DEFAULT_SIDE) ")"},
    {"--height H", "image height (default " STR(DEFAULT_SIDE) ")"},
    {"--radius R", "filter radius 1.." STR(CONSTMEM_MAX_RADIUS) ": (2R+1)^2 taps (default " STR(DEFAULT_RADIUS) ")"},
};

static const cml_lab lab = {
    CML_LAB_IDENTITY(CONSTMEM, "02_constant_memory", "constmem"),
    .title = "constant memory: broadcast, serialised reads, a filter in three places",
    .usage = "[--step N|all|LIST] [--threads N] [--passes P] [--width W] [--height H]\n"
             "       [--radius R] [--repeat N] [--json] [--markdown FILE] [--check-only]\n"
             "       [--sweep [--sweep-max BYTES]] | --list | --probe | --help",
    .about = "Checks each step against the CPU (the walk's sums exactly, the convolution\n"
             "against a double-precision reference), then times it (median of N runs after\n"
             "a warm-up). Step 1's code is also timed reading the table through __ldg\n"
             "(the lib row). Steps 2-4 are then timed at each d = 1, 2, 4, ..., 32 alone:\n"
             "the cost of d distinct addresses per warp as a multiple of d = 1. The\n"
             "convolution's GB/s is set against the kit's copy kernel and cudaMemcpy,\n"
             "measured in the same run; the targets are checked under the table.",
    .step_help = "steps to run: all (default), 2, 1,3,5 or 6-8",
    CML_LAB_LIST(options, options),
    .check_only_help = "check each step once: no timing, no copy\n(for compute-sanitizer)",
    .notes = "Steps 1-5: GB/s of table reads (4 bytes per thread and read), served by the\n"
             "caches, not DRAM. Steps 6-8: 2 * 4 * width * height bytes (read + written).\n"
             "Data are seeded: set CML_SEED to change them.",
    .table_note = "(steps 1-5: table reads served by the caches, compare them with each other;\n"
                  " steps 6-8: image bytes read + written, against the copy rows)",
    .option = option,
    .validate = validate,
    CML_LAB_GPU_PART,
    .anchors = anchors,
    .finish = finish,
    .after_table = after_table,
    .sweep_size = sweep_size,
};

int main(int argc, char **argv)
{
    static lab_data d = {.threads = DEFAULT_THREADS,
                         .passes = DEFAULT_PASSES,
                         .width = DEFAULT_SIDE,
                         .height = DEFAULT_SIDE,
                         .radius = DEFAULT_RADIUS};
    return cml_lab_main(&lab, &d, sizeof d, argc, argv);
}
