/* banks_run: lab 01's runner. Shows what your bank model predicts for each
 * access pattern next to what the GPU measures (clock64 cycles, and Nsight
 * Compute's bank-conflict counter where the GPU allows it), then checks and
 * times the three A*B^T steps against the device-copy bandwidth measured in
 * the same run. Built twice: banks_run (your files) and banks_run_ref (the
 * reference). `banks_run --help` tells how to use it. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
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

#include "banks_host.h"

#define STEP_NAME(num, ident, where, what) #ident,
#define STEP_WHERE(num, ident, where, what) where,
#define STEP_WHAT(num, ident, where, what) what,
static const char *step_names[] = {BANKS_STEPS(STEP_NAME)};
static const char *step_wheres[] = {BANKS_STEPS(STEP_WHERE)};
static const char *step_whats[] = {BANKS_STEPS(STEP_WHAT)};

#define STEP_BIT(s) (1u << ((s) - 1))
#define GPU_STEPS (((1u << BANKS_NUM_STEPS) - 1u) & ~(STEP_BIT(BANKS_FIRST_GPU_STEP) - 1u))
#define ABT_FIRST 5
#define MATRIX_FLOATS (BANKS_TILE * BANKS_TILE)
#define TOLERANCE 0.25 /* a measured N-way conflict within 25% of N times */

static const char *prog = "banks_run";

typedef struct options {
    cml_runner_args run;  /* --step, --repeat, --json, --markdown, --check-only */
    int batch;
    int rounds;
    int counters, model_only, no_counters;
} options;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: %s [--step N|all|LIST] [--batch B] [--rounds R] [--repeat N] [--json]\n"
            "       [--markdown FILE] [--check-only] [--counters] [--no-counters]\n"
            "       | --model | --list | --probe | --help\n",
            prog);
}

static void help(void)
{
    usage(stdout);
    printf("\nFor each access pattern: the wavefronts your bank model (bank_model.c)\n"
           "predicts, the cycles per warp-wide load the probe (step 4) measures, the\n"
           "ratio to the conflict-free stride 1, and Nsight Compute's count of bank\n"
           "conflicts when it can read the GPU's counters. Then A*B^T (steps 5-7):\n"
           "checked against a CPU product, timed (median of N runs after a warm-up)\n"
           "next to the device-copy bandwidth measured in the same run.\n\n"
           "  --step S        steps: all (default), 6, 4,6,7 or 5-7 (1-3: the model only)\n"
           "  --batch B       32x32 matrices per A*B^T (default 65536: 768 MiB moved)\n"
           "  --rounds R      probe rounds of %d loads per thread (default 256)\n"
           "  --repeat N      timed runs per measurement (default 20)\n"
           "  --json          print the results as JSON instead of the tables\n"
           "  --markdown FILE write the results as Markdown: a page, or the marked\n"
           "                  region of a handout (repeat for up to 4 files)\n"
           "  --check-only    check each selected step once; no timing, no counters\n"
           "                  (for compute-sanitizer and Nsight Compute)\n"
           "  --counters      print only the bank-conflict counts per step, from ncu\n"
           "  --no-counters   do not run Nsight Compute\n"
           "  --model         print the model's predictions only (no GPU needed)\n"
           "  --list          list the steps\n"
           "  --probe         exit 0 when a usable GPU is present, 77 otherwise\n\n"
           "Set CML_NCU to the ncu to use (default: ncu on the PATH), CML_SEED to\n"
           "change the data. Exit status: 0 all checked steps correct, 1 a wrong result\n"
           "or CUDA error, 2 bad arguments, 77 no GPU.\n\nSteps:\n",
           BANKS_PROBE_UNROLL);
    for (int s = 1; s <= BANKS_NUM_STEPS; ++s)
        printf("  %d  %-13s %-13s %s\n", s, step_names[s - 1], step_wheres[s - 1], step_whats[s - 1]);
}

static void parse(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    cml_runner_init(&o->run, argc > 0 ? argv[0] : NULL, prog, BANKS_NUM_STEPS, 20, usage);
    prog = o->run.prog;
    o->batch = 1 << 16;
    o->rounds = 256;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (cml_runner_arg(&o->run, argc, argv, &i))
            continue;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            help();
            exit(CML_EXIT_OK);
        } else if (strcmp(a, "--list") == 0) {
            for (int s = 1; s <= BANKS_NUM_STEPS; ++s)
                printf("%d\t%s\t%s\t%s\n", s, step_names[s - 1], step_wheres[s - 1], step_whats[s - 1]);
            exit(CML_EXIT_OK);
        } else if (strcmp(a, "--batch") == 0) {
            if (!cml_parse_int(v, 1, 1 << 20, &o->batch))
                cml_runner_bad_arg(&o->run, a, v, "a number of matrices from 1 to 2^20");
            ++i;
        } else if (strcmp(a, "--rounds") == 0) {
            if (!cml_parse_int(v, 1, BANKS_PROBE_MAX_ROUNDS, &o->rounds))
                cml_runner_bad_arg(&o->run, a, v, "a number of rounds from 1 to 100000");
            ++i;
        } else if (strcmp(a, "--counters") == 0) {
            o->counters = 1;
        } else if (strcmp(a, "--no-counters") == 0) {
            o->no_counters = 1;
        } else if (strcmp(a, "--model") == 0) {
            o->model_only = 1;
        } else {
            cml_runner_unknown(&o->run, a);
        }
    }
}

/* ------------------------------------------------------------ results */

typedef struct pattern_result {
    int model;            /* the model's wavefronts (<= 0: the model gave no answer) */
    int measured;         /* the probe ran and checked */
    char why[240];        /* why not, when !measured */
    double cycles;        /* median cycles per warp-wide load */
    double ratio;         /* cycles / stride_1's cycles */
    double conflicts;     /* ncu: bank conflicts in one probe of 1 round; -1 unknown */
} pattern_result;

typedef struct results {
    pattern_result pat[BANKS_NUM_PATTERNS];
    int probe_run;
    double abt_conflicts[3]; /* ncu, per step 5-7, for the counter batch; -1 unknown */
    int counters_available;
    char counters_reason[256];
    int counter_batch;
} results;

/* Loads per probe run of one round: every warp, every unrolled load. */
#define PROBE_LOADS_PER_ROUND ((double)BANKS_PROBE_WARPS * BANKS_PROBE_UNROLL)

static void run_model(results *res)
{
    for (int p = 0; p < BANKS_NUM_PATTERNS; ++p) {
        uint32_t addr[BANKS_WARP];
        banks_pattern_addresses((banks_pattern)p, addr);
        res->pat[p].model = conflict_degree(addr, 4);
        res->pat[p].conflicts = -1.0;
    }
}

static const char *verdict(const pattern_result *r, char *buf, size_t len)
{
    if (!r->measured)
        return "-";
    if (r->model <= 0)
        return "no model answer";
    double off = r->ratio / r->model - 1.0;
    if (fabs(off) <= TOLERANCE)
        snprintf(buf, len, "ok (%+.0f%%)", 100.0 * off);
    else
        snprintf(buf, len, "MODEL OFF BY %+.0f%%", 100.0 * off);
    return buf;
}

/* The pattern table, as text for the terminal or as Markdown. */
static void patterns_table(const results *res, int markdown, char *out, size_t len)
{
    size_t used = 0;
#define PUT(...)                                                                       \
    do {                                                                               \
        int n_ = snprintf(out + used, used < len ? len - used : 0, __VA_ARGS__);        \
        used += n_ > 0 ? (size_t)n_ : 0;                                               \
    } while (0)
    if (markdown) {
        PUT("Step 4, the probe: %d warps of one block read the pattern at once; cycles are SM "
            "cycles per warp-wide 4-byte load (clock64). \"model\" is the bank model's wavefronts; "
            "\"ncu\" is 1 + Nsight Compute's shared-load bank conflicts per load.\n\n",
            BANKS_PROBE_WARPS);
        PUT("| pattern | lane i reads | model | cycles | vs stride_1 | ncu | check |\n");
        PUT("|---|---|---:|---:|---:|---:|---|\n");
    } else {
        PUT("%-16s %-48s %5s %8s %11s %6s  %s\n", "pattern", "lane i reads", "model", "cycles", "vs stride_1",
            "ncu", "check");
    }
    for (int p = 0; p < BANKS_NUM_PATTERNS; ++p) {
        const pattern_result *r = &res->pat[p];
        char model[16], cycles[16], ratio[16], ncu[16], check[40];
        snprintf(model, sizeof model, r->model > 0 ? "%d" : "?", r->model);
        snprintf(cycles, sizeof cycles, r->measured ? "%.2f" : "-", r->cycles);
        snprintf(ratio, sizeof ratio, r->measured ? "%.2fx" : "-", r->ratio);
        if (r->conflicts >= 0.0)
            snprintf(ncu, sizeof ncu, "%.2f", 1.0 + r->conflicts / PROBE_LOADS_PER_ROUND);
        else
            snprintf(ncu, sizeof ncu, "-");
        const char *v = verdict(r, check, sizeof check);
        if (markdown)
            PUT("| %s | %s | %s | %s | %s | %s | %s |\n", banks_pattern_names[p], banks_pattern_whats[p], model,
                cycles, ratio, ncu, v);
        else
            PUT("%-16s %-48s %5s %8s %11s %6s  %s%s%s\n", banks_pattern_names[p], banks_pattern_whats[p], model,
                cycles, ratio, ncu, v, r->measured || !r->why[0] ? "" : ": ", r->measured ? "" : r->why);
    }
    if (!res->counters_available && res->counters_reason[0])
        PUT("%scounters not available: %s\n", markdown ? "\n" : "", res->counters_reason);
#undef PUT
}

static void patterns_json(const results *res, char *out, size_t len)
{
    size_t used = 0;
    used += (size_t)snprintf(out, len, "{\"probe_warps\": %d, \"patterns\": [", BANKS_PROBE_WARPS);
    for (int p = 0; p < BANKS_NUM_PATTERNS && used < len; ++p) {
        const pattern_result *r = &res->pat[p];
        int n = snprintf(out + used, len - used,
                         "%s{\"pattern\": \"%s\", \"model\": %d, \"measured\": %s, \"cycles_per_access\": %.4f, "
                         "\"ratio_to_stride_1\": %.4f, \"ncu_wavefronts_per_access\": %.4f}",
                         p ? ", " : "", banks_pattern_names[p], r->model, r->measured ? "true" : "false",
                         r->measured ? r->cycles : 0.0, r->measured ? r->ratio : 0.0,
                         r->conflicts >= 0.0 ? 1.0 + r->conflicts / PROBE_LOADS_PER_ROUND : -1.0);
        used += n > 0 ? (size_t)n : 0;
    }
    if (used < len)
        snprintf(out + used, len - used, "], \"counters\": \"%s\"}",
                 res->counters_available ? "ncu" : "not available");
}

/* ------------------------------------------------------------ the probe */

/* Checks every pattern once, then (unless check_only) times each: the
 * median over `repeat` runs. Returns the number of failed checks. */
static int run_probe(const options *o, results *res)
{
    banks_probe_buffers b;
    CML_CHECK(banks_probe_alloc(&b));
    int wrong = 0;
    for (int p = 0; p < BANKS_NUM_PATTERNS; ++p) {
        pattern_result *r = &res->pat[p];
        banks_probe_result pr;
        cudaError_t err = banks_probe_run(&b, (banks_pattern)p, o->rounds, &pr);
        if (err != cudaSuccess || !pr.ok) {
            snprintf(r->why, sizeof r->why, "%s", pr.why);
            fprintf(stderr, "%s: step 4, pattern %s: %s\n", prog, banks_pattern_names[p], pr.why);
            ++wrong;
            if (err != cudaSuccess)
                break;  /* a sticky error poisons every later call */
            continue;
        }
        if (o->run.check_only)
            continue;
        double samples[256];
        int n = o->run.repeat < 256 ? o->run.repeat : 256;
        for (int k = 0; k < n && pr.ok; ++k) {
            CML_CHECK(banks_probe_run(&b, (banks_pattern)p, o->rounds, &pr));
            samples[k] = pr.cycles_per_access;
        }
        if (!pr.ok)
            continue;
        r->measured = 1;
        r->cycles = cml_median(samples, n);
    }
    double base = res->pat[BANKS_PATTERN_stride_1].cycles;
    for (int p = 0; p < BANKS_NUM_PATTERNS; ++p)
        if (res->pat[p].measured)
            res->pat[p].ratio = base > 0.0 ? res->pat[p].cycles / base : 0.0;
    res->probe_run = 1;
    banks_probe_free(&b);
    return wrong;
}

/* ------------------------------------------------------------ A*B^T */

typedef struct abt_job {
    banks_abt_buffers *d;
    int step;
} abt_job;

static cudaError_t run_abt_job(void *ctx)
{
    abt_job *j = (abt_job *)ctx;
    return banks_abt(j->step, (const float *)j->d->a.ptr, (const float *)j->d->b.ptr, (float *)j->d->c.ptr,
                     j->d->batch);
}

/* Checks step on the uploaded data; fills row; returns 1 when correct. The
 * result is left in c_out (host) for the cross-step comparison. */
static int check_abt(banks_abt_buffers *d, int step, const float *a, const float *b, const double *ref,
                     const double *abs_ref, float *c_out, cml_row *row)
{
    size_t n = (size_t)d->batch * MATRIX_FLOATS;
    cudaError_t err = banks_abt_run(d, step);
    if (err == cudaSuccess)
        err = cudaMemcpy(c_out, d->c.ptr, n * sizeof(float), cudaMemcpyDeviceToHost);
    if (err != cudaSuccess) {
        row->status = CML_ROW_ERROR;
        snprintf(row->note, sizeof row->note, "CUDA error: %s: %s", cudaGetErrorName(err), cudaGetErrorString(err));
        return 0;
    }
    int intact = 0;
    long long where = 0;
    CML_CHECK(cml_dbuf_check_guards(&d->c, &intact, &where));
    if (!intact) {
        row->status = CML_ROW_WRONG;
        snprintf(row->note, sizeof row->note, "a write outside c (byte offset %lld)", where);
        return 0;
    }
    char report[400];
    size_t wrong = banks_abt_check(step, a, b, c_out, ref, abs_ref, d->batch, 1, report, sizeof report);
    if (wrong) {
        row->status = CML_ROW_WRONG;
        snprintf(row->note, sizeof row->note, "%zu wrong, first: %.150s", wrong, report);
        return 0;
    }
    row->status = CML_ROW_OK;
    return 1;
}

static int run_abt(const options *o, uint64_t seed, cml_report *rep, results *res)
{
    int batch = o->batch;
    size_t n = (size_t)batch * MATRIX_FLOATS;
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    float *c = malloc(n * sizeof *c), *first_c = malloc(n * sizeof *first_c);
    double *ref = malloc(n * sizeof *ref), *abs_ref = malloc(n * sizeof *abs_ref);
    if (!a || !b || !c || !first_c || !ref || !abs_ref) {
        fprintf(stderr, "%s: out of host memory for %d matrices\n", prog, batch);
        exit(CML_EXIT_FAIL);
    }
    banks_make_matrices(a, batch, BANKS_DATA_REALS, seed, 0);
    banks_make_matrices(b, batch, BANKS_DATA_REALS, seed, 1);
    banks_cpu_abt(a, b, batch, ref, abs_ref);
    banks_abt_buffers d;
    CML_CHECK(banks_abt_alloc(&d, batch));
    CML_CHECK(cudaMemcpy(d.a.ptr, a, n * sizeof *a, cudaMemcpyHostToDevice));
    CML_CHECK(cudaMemcpy(d.b.ptr, b, n * sizeof *b, cudaMemcpyHostToDevice));

    double bytes = 3.0 * (double)n * sizeof(float);  /* read A and B, write C */
    int wrong = 0, have_first = 0, first_step = 0;
    for (int s = ABT_FIRST; s <= BANKS_NUM_STEPS; ++s) {
        if (!(o->run.steps & STEP_BIT(s)))
            continue;
        cml_row *row = cml_report_add(rep, CML_ROW_STEP, s, step_names[s - 1]);
        if (!check_abt(&d, s, a, b, ref, abs_ref, c, row)) {
            ++wrong;  /* a wrong step is never timed as if it worked */
            fprintf(stderr, "%s: step %d: %s\n", prog, s, row->note);
            if (row->status == CML_ROW_ERROR)
                break;
            continue;
        }
        /* All steps sum k = 0..31 in the same order: the same bits. */
        if (!have_first) {
            memcpy(first_c, c, n * sizeof *c);
            have_first = 1;
            first_step = s;
        } else if (memcmp(first_c, c, n * sizeof *c) != 0) {
            snprintf(row->note, sizeof row->note, "correct, but not bit-for-bit step %d's product", first_step);
        } else {
            snprintf(row->note, sizeof row->note, "same bits as step %d", first_step);
        }
        if (o->run.check_only)
            continue;
        abt_job job = {&d, s};
        cml_timing t;
        CML_CHECK(cml_time_median(run_abt_job, &job, 3, o->run.repeat, &t));
        row->timed = 1;
        row->ms = t.median_ms;
        row->rate = bytes / (t.median_ms * 1e6);
    }
    banks_abt_free(&d);
    (void)res;
    free(a);
    free(b);
    free(c);
    free(first_c);
    free(ref);
    free(abs_ref);
    return wrong;
}

/* ------------------------------------------------------------ counters */

/* Runs this program again under Nsight Compute in --check-only mode and
 * reads the shared-load bank conflicts of every probe and A*B^T launch. */
/* The A*B^T launches are profiled on one wave of blocks (two matrices per
 * SM): with later waves a block's column reads overlap the next blocks'
 * global loads landing in the same SRAM banks, and ncu counts those few
 * stalls as bank conflicts too, hiding the exact count of the access
 * pattern. */
static void collect_counters(const options *o, int sm_count, results *res)
{
    char self[4096];
    res->counter_batch = o->batch < 2 * sm_count ? o->batch : 2 * sm_count;
    if (!cml_self_exe(self, sizeof self)) {
        snprintf(res->counters_reason, sizeof res->counters_reason, "cannot find this program's path");
        return;
    }
    char steps[64] = "", batch[16];
    int expected = 0;
    for (int s = BANKS_FIRST_GPU_STEP; s <= BANKS_NUM_STEPS; ++s)
        if (o->run.steps & STEP_BIT(s)) {
            snprintf(steps + strlen(steps), sizeof steps - strlen(steps), "%s%d", steps[0] ? "," : "", s);
            expected += s == BANKS_FIRST_GPU_STEP ? BANKS_NUM_PATTERNS : 1;
        }
    if (expected == 0)
        return;
    snprintf(batch, sizeof batch, "%d", res->counter_batch);
    const char *args[] = {"--check-only", "--step", steps, "--batch", batch, "--rounds", "1", NULL};
    const char *metrics[] = {CML_NCU_SHARED_LD_CONFLICTS};
    cml_ncu_counts *c = malloc(sizeof *c);
    if (c == NULL)
        return;
    /* The kernels keep the names the skeleton gives them: probe_kernel and
     * abt_*_kernel. */
    if (!cml_ncu_collect(self, args, metrics, 1, "regex:^(probe_kernel|abt_)", c)) {
        snprintf(res->counters_reason, sizeof res->counters_reason, "%s", c->reason);
    } else if (c->nkernels != expected) {
        snprintf(res->counters_reason, sizeof res->counters_reason,
                 "ncu profiled %d launches, expected %d (kernels renamed?)", c->nkernels, expected);
    } else {
        res->counters_available = 1;
        int k = 0;
        if (o->run.steps & STEP_BIT(BANKS_FIRST_GPU_STEP))
            for (int p = 0; p < BANKS_NUM_PATTERNS; ++p)
                res->pat[p].conflicts = c->value[k++][0];
        for (int s = ABT_FIRST; s <= BANKS_NUM_STEPS; ++s)
            res->abt_conflicts[s - ABT_FIRST] = (o->run.steps & STEP_BIT(s)) ? c->value[k++][0] : -1.0;
    }
    free(c);
}

static void print_counters(const options *o, const results *res)
{
    if (!res->counters_available) {
        printf("counters not available: %s\n", res->counters_reason);
        return;
    }
    if (o->run.steps & STEP_BIT(BANKS_FIRST_GPU_STEP))
        for (int p = 0; p < BANKS_NUM_PATTERNS; ++p)
            printf("step %d probe %s: shared-load bank conflicts %.0f (%.2f wavefronts per load)\n",
                   BANKS_FIRST_GPU_STEP, banks_pattern_names[p], res->pat[p].conflicts,
                   1.0 + res->pat[p].conflicts / PROBE_LOADS_PER_ROUND);
    for (int s = ABT_FIRST; s <= BANKS_NUM_STEPS; ++s)
        if (o->run.steps & STEP_BIT(s))
            printf("step %d %s: shared-load bank conflicts %.0f (%d matrices, one wave of blocks)\n", s,
                   step_names[s - 1], res->abt_conflicts[s - ABT_FIRST], res->counter_batch);
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    options o;
    parse(argc, argv, &o);

    static results res;
    static char text[16384], json[8192];
    for (int k = 0; k < 3; ++k)
        res.abt_conflicts[k] = -1.0;
    run_model(&res);

    cml_device_info dev;
    char why[256];
    int gpu_wanted = !o.model_only && (o.run.steps & GPU_STEPS);
    int have_gpu = gpu_wanted && cml_device_probe(&dev, why, sizeof why);
    if (!gpu_wanted || !have_gpu) {
        if (!o.run.check_only && !o.counters) {
            patterns_table(&res, 0, text, sizeof text);
            printf("Your bank model (steps 1-3) for each pattern, 4-byte loads:\n\n%s", text);
        }
        if (!gpu_wanted)
            return CML_EXIT_OK;
        fprintf(stderr, "%s: %s\n%s: the measurements need a GPU; the model above and the host tests "
                "(ctest --preset host) work without one\n", prog, why, prog);
        return CML_EXIT_NO_GPU;
    }
    uint64_t seed = 0;
    char err_text[200];
    if (!cml_seed(&seed, err_text, sizeof err_text)) {
        fprintf(stderr, "%s: %s\n", prog, err_text);
        return CML_EXIT_USAGE;
    }

    if (o.counters) {
        collect_counters(&o, dev.sm_count, &res);
        print_counters(&o, &res);
        return CML_EXIT_OK;
    }

    cml_report rep;
    cml_report_init(&rep, "01_shared_banks", "bank conflicts: the probe, and C = A*B^T of 32x32 tiles", "GB/s");
    rep.device = dev;
    rep.seed = seed;
    snprintf(rep.params, sizeof rep.params,
             "A*B^T of %d 32x32 float matrices (%.0f MiB read + written), median of %d runs; probe: %d rounds",
             o.batch, 3.0 * o.batch * MATRIX_FLOATS * sizeof(float) / (1 << 20), o.run.check_only ? 0 : o.run.repeat,
             o.rounds);

    int wrong = 0;
    if (o.run.steps & STEP_BIT(BANKS_FIRST_GPU_STEP))
        wrong += run_probe(&o, &res);
    wrong += run_abt(&o, seed, &rep, &res);

    if (!o.run.check_only) {
        if (!o.no_counters)
            collect_counters(&o, dev.sm_count, &res);
        else
            snprintf(res.counters_reason, sizeof res.counters_reason, "--no-counters");
        for (int i = 0; i < rep.nrows; ++i) {
            cml_row *row = &rep.rows[i];
            double k = row->step >= ABT_FIRST ? res.abt_conflicts[row->step - ABT_FIRST] : -1.0;
            if (row->kind == CML_ROW_STEP && k >= 0.0 && row->status == CML_ROW_OK)
                snprintf(row->note + strlen(row->note), sizeof row->note - strlen(row->note),
                         "%sncu: %.0f shared-load bank conflicts per matrix", row->note[0] ? "; " : "",
                         k / res.counter_batch);
        }
        if (rep.nrows > 0) {
            size_t bytes = (size_t)o.batch * MATRIX_FLOATS * sizeof(float) * 3 / 2;
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
        }
    }

    static char md[16384];
    if (res.probe_run && !o.run.check_only) {
        patterns_table(&res, 1, md, sizeof md);
        rep.extra_markdown = md;
        patterns_json(&res, json, sizeof json);
        rep.extra_json = json;
    }
    if (o.run.json) {
        cml_report_print_json(&rep, stdout);
    } else if (o.run.check_only) {
        if (res.probe_run)
            for (int p = 0; p < BANKS_NUM_PATTERNS; ++p)
                printf("step 4 probe %-16s %s%s%s\n", banks_pattern_names[p], res.pat[p].why[0] ? "WRONG" : "ok",
                       res.pat[p].why[0] ? ": " : "", res.pat[p].why);
        for (int i = 0; i < rep.nrows; ++i)
            printf("step %d %-13s %s%s%s\n", rep.rows[i].step, rep.rows[i].name,
                   rep.rows[i].status == CML_ROW_OK ? "ok" : "WRONG", rep.rows[i].note[0] ? ": " : "",
                   rep.rows[i].note);
    } else {
        if (res.probe_run) {
            patterns_table(&res, 0, text, sizeof text);
            printf("Step 4, the probe: %d warps read each pattern at once; cycles per warp-wide 4-byte load.\n"
                   "model: your bank model's wavefronts. ncu: 1 + bank conflicts per load (Nsight Compute).\n"
                   "check: the measured ratio within %.0f%% of the model's.\n\n%s\n",
                   BANKS_PROBE_WARPS, 100.0 * TOLERANCE, text);
        }
        if (rep.nrows > 0) {
            cml_report_print_table(&rep, stdout);
            printf("GB/s counts A and B read and C written; the copies count bytes read + written.\n");
        }
    }
    if (cml_runner_write_markdown(&o.run, &rep) != CML_EXIT_OK)
        return CML_EXIT_FAIL;
    return wrong ? CML_EXIT_FAIL : CML_EXIT_OK;
}
