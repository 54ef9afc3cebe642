/* --sweep: one step's rate as its data grow, from sizes that live in L2
 * to sizes far past it, beside the copy kernel and cudaMemcpy on the same
 * bytes, each measured at that size in this run (cml_lab_runner.h). */
#include "cml/cml_lab_runner.h"

#include <stdio.h>
#include <string.h>

#include "cml/cml_check.h"
#include "cml/cml_timing.h"

#define MIN_BYTES ((size_t)1 << 20)
#define MAX_POINTS 40
#define EMULATED CML_LAB_EMULATED
#define DEFAULT_MAX (EMULATED ? (size_t)4 << 20 : (size_t)4 << 30)

typedef struct sweep_point {
    double bytes;         /* the step's work at this size */
    char params[200];     /* the lab's words for the size */
    double ms, rate;      /* the step: median time and rate */
    double kernel_gbs, memcpy_gbs;  /* the copies of the same bytes (not on the CPU path) */
} sweep_point;

typedef struct sweep {
    int step;
    int npoints;
    sweep_point points[MAX_POINTS];
} sweep;

/* The step to sweep: the one --step names, or the last when it names all. */
static int sweep_step(const cml_lab_run *r)
{
    const cml_lab *lab = r->lab;
    unsigned all = lab->nsteps >= 32 ? ~0u : (1u << lab->nsteps) - 1u;
    if (r->args.steps == all)
        return lab->nsteps;
    int step = 0;
    for (int s = 1; s <= lab->nsteps; ++s) {
        if (!cml_lab_selected(r, s))
            continue;
        if (step)
            return 0;  /* more than one */
        step = s;
    }
    return step;
}

/* "1.0 MiB", "256 MiB", "4.0 GiB" */
static const char *size_words(double bytes, char *buf, size_t len)
{
    if (bytes >= (double)(1u << 30))
        snprintf(buf, len, "%.1f GiB", bytes / (double)(1u << 30));
    else
        snprintf(buf, len, "%.0f MiB", bytes / (double)(1u << 20));
    return buf;
}

/* Runs of a step enqueued back to back, timed as one. */
typedef struct batch_job {
    cml_lab_run *r;
    int step, runs;
} batch_job;

static cudaError_t run_batch(void *ctx)
{
    batch_job *b = (batch_job *)ctx;
    cudaError_t err = cudaSuccess;
    for (int k = 0; k < b->runs && err == cudaSuccess; ++k)
        err = b->r->lab->launch(b->r, b->step);
    return err;
}

/* The step's time a run at this size: one run alone, then, when that is
 * short, the median of batches of *batch runs enqueued back to back (about
 * BATCH_MS each), so that a small size shows the time of its work, not one
 * launch's latency. The copies are then timed in batches as large. */
#define BATCH_MS 0.5
static int time_batches(cml_lab_run *r, int step, cml_row *row, int *batch)
{
    batch_job job = {r, step, 1};
    cml_timing one, many;
    cudaError_t err = cml_time_median(run_batch, &job, 3, 5, &one);
    if (err == cudaSuccess) {
        double k = one.median_ms > 0 ? BATCH_MS / one.median_ms : 1000.0;
        job.runs = k < 1 ? 1 : k > 1000 ? 1000 : (int)k;
        err = cml_time_median(run_batch, &job, 1, r->args.repeat, &many);
    }
    if (err != cudaSuccess) {
        cml_lab_row_error(row, "CUDA error while timing", err);
        return 0;
    }
    *batch = job.runs;
    row->timed = 1;
    row->ms = many.median_ms / job.runs;
    row->rate = r->lab->work(r, step) / (row->ms * 1e6);
    return 1;
}

/* One size: prepare, check, time, release, then the copies of the same
 * bytes. Returns CML_EXIT_OK, or CML_EXIT_FAIL after saying why. */
static int measure(cml_lab_run *r, int step, sweep_point *p)
{
    const cml_lab *lab = r->lab;
    cml_lab_new_report(r);
    r->ninputs = 0;
    int rc = lab->prepare(r);
    if (rc != CML_EXIT_OK)
        return rc;
    cml_row row;
    memset(&row, 0, sizeof row);
    int batch = 1;
    int ok = cml_lab_check(r, step, &row) && time_batches(r, step, &row, &batch);
    p->bytes = lab->work(r, step);
    snprintf(p->params, sizeof p->params, "%s", r->rep.params);
    if (lab->release)
        lab->release(r);
    if (!ok) {
        char size[32];
        cml_lab_say(r, "step %d at %s (%s): %s", step, size_words(p->bytes, size, sizeof size), p->params,
                    row.note[0] ? row.note : "wrong");
        return CML_EXIT_FAIL;
    }
    p->ms = row.ms;
    p->rate = row.rate;
    if (!EMULATED) {
        /* half the bytes copied: read and written, as many bytes in all as the step moves */
        cml_copy_ceiling c;
        CML_CHECK(cml_measure_copy_ceiling_batched((size_t)(p->bytes / 2), r->args.repeat, batch, &c));
        p->kernel_gbs = c.kernel_gbs;
        p->memcpy_gbs = c.memcpy_gbs;
    }
    return CML_EXIT_OK;
}

static void print_table(const cml_lab_run *r, const sweep *sw)
{
    char dev[400], size[32];
    cml_device_describe(&r->dev, dev, sizeof dev);
    const char *unit = r->rep.unit;
    printf("\n%s: step %d (%s) as its data grow\n", r->lab->name, sw->step, cml_lab_ident(r, sw->step));
    if (EMULATED) {
        printf("Device: %s -- EMULATED\nseed %llu, %s, median of %d timings a size\n", dev,
               (unsigned long long)r->seed, r->rep.date, r->args.repeat);
        printf("The kernels ran on the CPU path: the times are the CPU's, and a CPU has no GPU L2 to show.\n\n");
        printf("%10s %12s %10s  %s\n", "work", "emulated ms", unit, "size");
        for (int i = 0; i < sw->npoints; ++i) {
            const sweep_point *p = &sw->points[i];
            printf("%10s %12.3f %10.3f  %s\n", size_words(p->bytes, size, sizeof size), p->ms, p->rate, p->params);
        }
        putchar('\n');
        return;
    }
    printf("GPU: %s\nseed %llu, %s, median of %d timings a size (short runs timed in batches back to back); at each\n"
           "size the copies read and write as many bytes in all as the step moves, measured then\n\n",
           dev, (unsigned long long)r->seed, r->rep.date, r->args.repeat);
    printf("%10s %10s %12s %12s %9s  %s\n", "work", "step", "copy kernel", "cudaMemcpy", "of memcpy", "size");
    int l2_said = 0;
    for (int i = 0; i < sw->npoints; ++i) {
        const sweep_point *p = &sw->points[i];
        if (!l2_said && r->dev.l2_bytes > 0 && p->bytes > (double)r->dev.l2_bytes) {
            printf("%10s ---- L2 is %d MiB: from here on the data no longer fit in it ----\n", "",
                   r->dev.l2_bytes >> 20);
            l2_said = 1;
        }
        printf("%10s %10.1f %12.1f %12.1f %8.0f%%  %s\n", size_words(p->bytes, size, sizeof size), p->rate,
               p->kernel_gbs, p->memcpy_gbs, p->memcpy_gbs > 0 ? 100.0 * p->rate / p->memcpy_gbs : 0.0, p->params);
    }
    printf("\n%s of the bytes each run moves: the step's work (what its table counts), the copies' reads plus writes.\n",
           unit);
}

static void print_json(const cml_lab_run *r, const sweep *sw, FILE *out)
{
    fprintf(out, "{\"lab\": ");
    cml_json_string(out, r->lab->name);
    fprintf(out, ", \"title\": ");
    cml_json_string(out, r->lab->title);
    fprintf(out, ", \"date\": ");
    cml_json_string(out, r->rep.date);
    fprintf(out, ", \"gpu\": ");
    cml_json_string(out, r->dev.name);
    fprintf(out, ", \"compute_capability\": \"%d.%d\", \"sm_count\": %d, \"l2_bytes\": %d, \"emulated\": %s, "
            "\"seed\": %llu, \"unit\": ", r->dev.cc_major, r->dev.cc_minor, r->dev.sm_count, r->dev.l2_bytes,
            EMULATED ? "true" : "false", (unsigned long long)r->seed);
    cml_json_string(out, r->rep.unit);
    fprintf(out, ",\n \"sweep\": {\"step\": %d, \"name\": ", sw->step);
    cml_json_string(out, cml_lab_ident(r, sw->step));
    fprintf(out, ", \"runs\": %d, \"points\": [", r->args.repeat);
    for (int i = 0; i < sw->npoints; ++i) {
        const sweep_point *p = &sw->points[i];
        fprintf(out, "%s\n  {\"bytes\": %.0f, \"size\": ", i ? "," : "", p->bytes);
        cml_json_string(out, p->params);
        fprintf(out, ", \"median_ms\": %.6f, \"rate\": %.3f", p->ms, p->rate);
        if (!EMULATED)
            fprintf(out, ", \"copy_kernel\": %.3f, \"memcpy\": %.3f", p->kernel_gbs, p->memcpy_gbs);
        fputc('}', out);
    }
    fprintf(out, "\n]}}\n");
}

/* The results page: the whole file (a sweep has no handout region). */
static int write_page(const cml_lab_run *r, const sweep *sw, const char *path)
{
    FILE *out = fopen(path, "wb");
    if (out == NULL)
        return -1;
    char dev[400], size[32];
    cml_device_describe(&r->dev, dev, sizeof dev);
    const char *unit = r->rep.unit;
    fprintf(out, "# %s on %s: step %d (%s) as its data grow\n\n", r->lab->name, r->dev.name, sw->step,
            cml_lab_ident(r, sw->step));
    fprintf(out, "Measured on %s, %s, seed %llu, median of %d timings a size (runs shorter than %.1f ms timed in "
            "batches enqueued back to back, so that a small size shows its work and not one launch's latency). "
            "Written by the lab's runner "
            "(`--sweep`); at each size the copy kernel and cudaMemcpy read and write as many bytes in all as the step "
            "moves, in the same run. "
            "%s of the bytes each run moves. The L2 cache holds %d MiB: up to about that size the data can "
            "stay in it from one run to the next.\n\n",
            dev, r->rep.date, (unsigned long long)r->seed, r->args.repeat, BATCH_MS, unit, r->dev.l2_bytes >> 20);
    fprintf(out, "| work | step %d %s | copy kernel | cudaMemcpy | of cudaMemcpy | size |\n", sw->step, unit);
    fprintf(out, "|---:|---:|---:|---:|---:|---|\n");
    for (int i = 0; i < sw->npoints; ++i) {
        const sweep_point *p = &sw->points[i];
        int in_l2 = r->dev.l2_bytes > 0 && p->bytes <= (double)r->dev.l2_bytes;
        fprintf(out, "| %s%s | %.1f | %.1f | %.1f | %.0f%% | %s |\n", size_words(p->bytes, size, sizeof size),
                in_l2 ? " (fits L2)" : "", p->rate, p->kernel_gbs, p->memcpy_gbs,
                p->memcpy_gbs > 0 ? 100.0 * p->rate / p->memcpy_gbs : 0.0, p->params);
    }
    return fclose(out) == 0 ? 0 : -1;
}

int cml_lab_sweep(cml_lab_run *r)
{
    const cml_lab *lab = r->lab;
    int step = sweep_step(r);
    if (step == 0 || step < lab->first_gpu_step) {
        cml_lab_say(r, "--sweep times one GPU step: give it with --step N (%d to %d), or none for the last",
                    lab->first_gpu_step, lab->nsteps);
        return CML_EXIT_USAGE;
    }
    r->args.steps = 1u << (step - 1);  /* prepare makes the data of this step alone */
    size_t most = r->sweep_max ? r->sweep_max : DEFAULT_MAX;
    static sweep sw;
    memset(&sw, 0, sizeof sw);
    sw.step = step;
    for (size_t bytes = MIN_BYTES; bytes <= most && sw.npoints < MAX_POINTS; bytes *= 2) {
        size_t free_b = 0, total_b = 0;
        /* the data, and then the two copy buffers, each about the size: with room */
        if (!EMULATED && cudaMemGetInfo(&free_b, &total_b) == cudaSuccess && 3 * bytes > free_b) {
            cml_lab_say(r, "stopping before %zu MiB: the GPU has %zu MiB free", bytes >> 20, free_b >> 20);
            break;
        }
        if (!lab->sweep_size(r, step, (double)bytes))
            continue;
        int rc = measure(r, step, &sw.points[sw.npoints]);
        if (rc != CML_EXIT_OK)
            return rc;
        ++sw.npoints;
        if (!r->args.json) {
            char size[32];
            fprintf(stderr, "%s: %s done\n", r->args.prog, size_words(sw.points[sw.npoints - 1].bytes, size,
                                                                      sizeof size));
        }
    }
    if (sw.npoints == 0) {
        cml_lab_say(r, "step %d has no size between 1 MiB and %zu MiB (--sweep-max): only a step whose data grow "
                    "with a size can be swept", step, most >> 20);
        return CML_EXIT_USAGE;
    }
    if (r->args.json)
        print_json(r, &sw, stdout);
    else
        print_table(r, &sw);
    fflush(stdout);
    for (int k = 0; k < r->args.nmarkdown; ++k) {
        if (write_page(r, &sw, r->args.markdown[k]) != 0) {
            cml_lab_say(r, "cannot write %s", r->args.markdown[k]);
            return CML_EXIT_FAIL;
        }
    }
    return CML_EXIT_OK;
}
