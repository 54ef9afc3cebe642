/* banks_run: lab 01's runner. Shows what your bank model predicts for each
 * access pattern next to what the GPU measures (clock64 cycles, and Nsight
 * Compute's bank-conflict counter where the GPU allows it), then checks and
 * times the three A*B^T steps against the device-copy bandwidth measured in
 * the same run. Built twice: banks_run (your files) and banks_run_ref (the
 * reference). `banks_run --help` tells how to use it; the command line,
 * table and exit codes are the kit's runner library (cml_lab_runner.h). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cml/cml_args.h>
#include <cml/cml_check.h>
#include <cml/cml_lab_runner.h>
#include <cml/cml_timing.h>

#include "banks_host.h"

#define STEP_BIT(s) (1u << ((s) - 1))
#define PROBE_STEP BANKS_FIRST_GPU_STEP
#define ABT_FIRST (PROBE_STEP + 1)
#define MATRIX_FLOATS (BANKS_TILE * BANKS_TILE)
#define TOLERANCE 0.25 /* a measured N-way conflict within 25% of N times */
#define STR_(x) #x
#define STR(x) STR_(x)

/* Loads per probe run of one round: every warp, every unrolled load. */
#define PROBE_LOADS_PER_ROUND ((double)BANKS_PROBE_WARPS * BANKS_PROBE_UNROLL)

typedef struct pattern_result {
    int model;            /* the model's wavefronts (<= 0: the model gave no answer) */
    int measured;         /* the probe ran and checked */
    char why[240];        /* why not, when !measured */
    double cycles;        /* median cycles per warp-wide load */
    double ratio;         /* cycles / stride_1's cycles */
    double conflicts;     /* ncu: bank conflicts in one probe of 1 round; -1 unknown */
} pattern_result;

typedef struct lab_data {
    int batch, rounds;
    pattern_result pat[BANKS_NUM_PATTERNS];
    int probe_run;
    double abt_conflicts[BANKS_NUM_STEPS - PROBE_STEP]; /* ncu, per A*B^T step, the counter batch; -1 unknown */
    char abt_kernel[BANKS_NUM_STEPS - PROBE_STEP][64];
    int counters_available;
    char counters_reason[256];
    int counter_batch;
    /* A*B^T: host data, reference and device buffers */
    float *a, *b, *c, *first_c;
    double *ref, *abs_ref;
    banks_abt_buffers d;
    int first_step;       /* the first step that passed, whose bits the others match */
} lab_data;

static int option(cml_lab_run *r, const char *a, const char *v)
{
    lab_data *d = r->data;
    if (strcmp(a, "--batch") == 0) {
        if (!cml_parse_int(v, 1, 1 << 20, &d->batch))
            cml_runner_bad_arg(&r->args, a, v, "a number of matrices from 1 to 2^20");
        return 2;
    }
    if (strcmp(a, "--rounds") == 0) {
        if (!cml_parse_int(v, 1, BANKS_PROBE_MAX_ROUNDS, &d->rounds))
            cml_runner_bad_arg(&r->args, a, v, "a number of rounds from 1 to 100000");
        return 2;
    }
    if (strcmp(a, "--model") == 0) {
        r->host_only = 1;
        return 1;
    }
    return 0;
}

/* ------------------------------------------------------------ the model */

static void run_model(lab_data *d)
{
    for (int p = 0; p < BANKS_NUM_PATTERNS; ++p) {
        uint32_t addr[BANKS_WARP];
        banks_pattern_addresses((banks_pattern)p, addr);
        d->pat[p].model = conflict_degree(addr, 4);
        d->pat[p].conflicts = -1.0;
    }
}

/* No GPU part: the model's view of each pattern (bank_of's banks and
 * conflict_degree's wavefronts), unless the mode prints nothing. */
static int host_part(cml_lab_run *r)
{
    static char text[8192];
    if (r->args.check_only || r->counters || r->args.json)
        return 0;
    banks_model_table(bank_of, conflict_degree, text, sizeof text);
    printf("Your bank model (steps 1-3) for each pattern, 4-byte loads:\n\n%s", text);
    return 1;
}

static const char *verdict(const pattern_result *p, char *buf, size_t len)
{
    if (!p->measured)
        return "-";
    if (p->model <= 0)
        return "no model answer";
#ifdef CML_CPU_BACKEND
    /* the CPU path's clock64 counts emulated time, not a GPU's wavefronts:
     * no verdict on the model from it (the model's tests judge it) */
    (void)buf;
    (void)len;
    return "emulated: no verdict";
#else
    double off = p->ratio / p->model - 1.0;
    if (fabs(off) <= TOLERANCE)
        snprintf(buf, len, "ok (%+.0f%%)", 100.0 * off);
    else
        snprintf(buf, len, "MODEL OFF BY %+.0f%%", 100.0 * off);
    return buf;
#endif
}

/* The pattern table of the probe, as text for the terminal or as Markdown. */
static void patterns_table(const lab_data *d, int markdown, char *out, size_t len)
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
        const pattern_result *q = &d->pat[p];
        char model[16], cycles[16], ratio[16], ncu[16], check[40];
        snprintf(model, sizeof model, q->model > 0 ? "%d" : "?", q->model);
        snprintf(cycles, sizeof cycles, q->measured ? "%.2f" : "-", q->cycles);
        snprintf(ratio, sizeof ratio, q->measured ? "%.2fx" : "-", q->ratio);
        if (q->conflicts >= 0.0)
            snprintf(ncu, sizeof ncu, "%.2f", 1.0 + q->conflicts / PROBE_LOADS_PER_ROUND);
        else
            snprintf(ncu, sizeof ncu, "-");
        const char *v = verdict(q, check, sizeof check);
        if (markdown)
            PUT("| %s | %s | %s | %s | %s | %s | %s |\n", banks_pattern_names[p], banks_pattern_whats[p], model,
                cycles, ratio, ncu, v);
        else
            PUT("%-16s %-48s %5s %8s %11s %6s  %s%s%s\n", banks_pattern_names[p], banks_pattern_whats[p], model,
                cycles, ratio, ncu, v, q->measured || !q->why[0] ? "" : ": ", q->measured ? "" : q->why);
    }
    if (!d->counters_available && d->counters_reason[0])
        PUT("%scounters not available: %s\n", markdown ? "\n" : "", d->counters_reason);
#undef PUT
}

static void patterns_json(const lab_data *d, char *out, size_t len)
{
    size_t used = 0;
    used += (size_t)snprintf(out, len, "{\"probe_warps\": %d, \"patterns\": [", BANKS_PROBE_WARPS);
    for (int p = 0; p < BANKS_NUM_PATTERNS && used < len; ++p) {
        const pattern_result *q = &d->pat[p];
        int n = snprintf(out + used, len - used,
                         "%s{\"pattern\": \"%s\", \"model\": %d, \"measured\": %s, \"cycles_per_access\": %.4f, "
                         "\"ratio_to_stride_1\": %.4f, \"ncu_wavefronts_per_access\": %.4f}",
                         p ? ", " : "", banks_pattern_names[p], q->model, q->measured ? "true" : "false",
                         q->measured ? q->cycles : 0.0, q->measured ? q->ratio : 0.0,
                         q->conflicts >= 0.0 ? 1.0 + q->conflicts / PROBE_LOADS_PER_ROUND : -1.0);
        used += n > 0 ? (size_t)n : 0;
    }
    if (used < len)
        snprintf(out + used, len - used, "], \"counters\": \"%s\"}",
                 d->counters_available ? "ncu" : "not available");
}

/* ------------------------------------------------------------ step 4, the probe */

/* Checks every pattern once, then (unless check_only) times each: the
 * median over --repeat runs. Returns the number of failed checks. */
static int run_probe(cml_lab_run *r)
{
    lab_data *d = r->data;
    if (!cml_lab_selected(r, PROBE_STEP))
        return 0;
    banks_probe_buffers b;
    CML_CHECK(banks_probe_alloc(&b));
    int wrong = 0;
    for (int p = 0; p < BANKS_NUM_PATTERNS; ++p) {
        pattern_result *q = &d->pat[p];
        banks_probe_result pr;
        cudaError_t err = banks_probe_run(&b, (banks_pattern)p, d->rounds, &pr);
        if (err != cudaSuccess || !pr.ok) {
            snprintf(q->why, sizeof q->why, "%s", pr.why);
            cml_lab_say(r, "step %d, pattern %s: %s", PROBE_STEP, banks_pattern_names[p], pr.why);
            ++wrong;
            if (err != cudaSuccess)
                break;  /* a sticky error poisons every later call */
            continue;
        }
        if (r->args.check_only)
            continue;
        double samples[256];
        int n = r->args.repeat < 256 ? r->args.repeat : 256;
        for (int k = 0; k < n && pr.ok; ++k) {
            CML_CHECK(banks_probe_run(&b, (banks_pattern)p, d->rounds, &pr));
            samples[k] = pr.cycles_per_access;
        }
        if (!pr.ok)
            continue;
        q->measured = 1;
        q->cycles = cml_median(samples, n);
    }
    double base = d->pat[BANKS_PATTERN_stride_1].cycles;
    for (int p = 0; p < BANKS_NUM_PATTERNS; ++p)
        if (d->pat[p].measured)
            d->pat[p].ratio = base > 0.0 ? d->pat[p].cycles / base : 0.0;
    d->probe_run = 1;
    banks_probe_free(&b);
    return wrong;
}

/* ------------------------------------------------------------ steps 5-7, A*B^T */

static int prepare(cml_lab_run *r)
{
    lab_data *d = r->data;
    run_model(d);
    snprintf(r->rep.params, sizeof r->rep.params,
             "A*B^T of %d 32x32 float matrices (%.0f MiB read + written); probe: %d rounds",
             d->batch, 3.0 * d->batch * MATRIX_FLOATS * sizeof(float) / (1 << 20), d->rounds);
    size_t n = (size_t)d->batch * MATRIX_FLOATS;
    d->a = malloc(n * sizeof *d->a);
    d->b = malloc(n * sizeof *d->b);
    d->c = malloc(n * sizeof *d->c);
    d->first_c = malloc(n * sizeof *d->first_c);
    d->ref = malloc(n * sizeof *d->ref);
    d->abs_ref = malloc(n * sizeof *d->abs_ref);
    if (!d->a || !d->b || !d->c || !d->first_c || !d->ref || !d->abs_ref) {
        cml_lab_say(r, "out of host memory for %d matrices", d->batch);
        return CML_EXIT_FAIL;
    }
    banks_make_matrices(d->a, d->batch, BANKS_DATA_REALS, r->seed, 0);
    banks_make_matrices(d->b, d->batch, BANKS_DATA_REALS, r->seed, 1);
    banks_cpu_abt(d->a, d->b, d->batch, d->ref, d->abs_ref);
    CML_CHECK(banks_abt_alloc(&d->d, d->batch));
    CML_CHECK(cudaMemcpy(d->d.a.ptr, d->a, n * sizeof *d->a, cudaMemcpyHostToDevice));
    CML_CHECK(cudaMemcpy(d->d.b.ptr, d->b, n * sizeof *d->b, cudaMemcpyHostToDevice));
    cml_lab_watch_input(r, &d->d.a, d->a, "a");
    cml_lab_watch_input(r, &d->d.b, d->b, "b");
    return CML_EXIT_OK;
}

static cudaError_t poison(cml_lab_run *r, int step)
{
    (void)step;
    return cml_dbuf_fill32(&((lab_data *)r->data)->d.c, BANKS_POISON);
}

/* After poison and a launch: banks_abt_verify (the second half of the
 * tests' banks_abt_run_checked), then the bits against the first step that
 * passed: all sum k = 0..31 in one order. */
static int verify(cml_lab_run *r, int step, cml_row *row)
{
    lab_data *d = r->data;
    size_t n = (size_t)d->batch * MATRIX_FLOATS;
    banks_abt_result res;
    int ok = banks_abt_verify(&d->d, step, d->a, d->b, d->ref, d->abs_ref, d->c, 1, &res);
    if (res.err != cudaSuccess) {
        cml_lab_row_error(row, "CUDA error", res.err);
        return 0;
    }
    row->status = ok ? CML_ROW_OK : CML_ROW_WRONG;
    if (!res.guards_intact)
        snprintf(row->note, sizeof row->note, "%.*s", (int)sizeof row->note - 1, res.guard_msg);
    else if (res.wrong)
        snprintf(row->note, sizeof row->note, "%zu wrong, first: %.150s", res.wrong, res.report);
    if (!ok) {
        cml_lab_say(r, "step %d: %s", step, row->note);
        return 0;
    }
    if (d->first_step == 0) {
        memcpy(d->first_c, d->c, n * sizeof *d->c);
        d->first_step = step;
    } else if (d->first_step == step) {
        return 1;  /* a timed repeat of the first step (--check-every-run): its note stays */
    } else if (memcmp(d->first_c, d->c, n * sizeof *d->c) != 0) {
        snprintf(row->note, sizeof row->note, "correct, but not bit-for-bit step %d's product", d->first_step);
    } else {
        snprintf(row->note, sizeof row->note, "same bits as step %d", d->first_step);
    }
    return 1;
}

static cudaError_t launch(cml_lab_run *r, int step)
{
    lab_data *d = r->data;
    return banks_abt(step, (const float *)d->d.a.ptr, (const float *)d->d.b.ptr, (float *)d->d.c.ptr, d->batch);
}

static double work(const cml_lab_run *r, int step)
{
    const lab_data *d = r->data;
    (void)step;
    return 3.0 * (double)d->batch * MATRIX_FLOATS * sizeof(float);  /* read A and B, write C */
}

static size_t ceiling_bytes(const cml_lab_run *r)
{
    return (size_t)(work(r, 0) / 2);
}

static void release(cml_lab_run *r)
{
    lab_data *d = r->data;
    banks_abt_free(&d->d);
    free(d->a);
    free(d->b);
    free(d->c);
    free(d->first_c);
    free(d->ref);
    free(d->abs_ref);
    d->a = d->b = d->c = d->first_c = NULL;
    d->ref = d->abs_ref = NULL;
}

/* ------------------------------------------------------------ counters */

/* Runs this program again under Nsight Compute in --check-only mode and
 * reads the shared-load bank conflicts of every probe and A*B^T launch.
 * The A*B^T launches are profiled on one wave of blocks (two matrices per
 * SM): with later waves a block's column reads overlap the next blocks'
 * global loads landing in the same SRAM banks, and ncu counts those few
 * stalls as bank conflicts too, hiding the exact count of the access
 * pattern. */
static void collect_counters(cml_lab_run *r)
{
    static cml_ncu_counts c;
    lab_data *d = r->data;
    d->counter_batch = d->batch < 2 * r->dev.sm_count ? d->batch : 2 * r->dev.sm_count;
    unsigned steps = 0;
    int expected = 0;
    for (int s = PROBE_STEP; s <= BANKS_NUM_STEPS; ++s)
        if (cml_lab_selected(r, s)) {
            steps |= STEP_BIT(s);
            expected += s == PROBE_STEP ? BANKS_NUM_PATTERNS : 1;
        }
    char batch[16];
    snprintf(batch, sizeof batch, "%d", d->counter_batch);
    const char *args[] = {"--batch", batch, "--rounds", "1", NULL};
    const char *metrics[] = {CML_NCU_SHARED_LD_CONFLICTS};
    /* The kernels keep the names the skeleton gives them: probe_kernel and
     * abt_*_kernel. */
    if (!cml_lab_ncu(r, steps, args, metrics, 1, "regex:^(probe_kernel|abt_)", expected, &c, d->counters_reason,
                     sizeof d->counters_reason))
        return;
    d->counters_available = 1;
    int k = 0;
    if (steps & STEP_BIT(PROBE_STEP))
        for (int p = 0; p < BANKS_NUM_PATTERNS; ++p)
            d->pat[p].conflicts = c.value[k++][0];
    for (int s = ABT_FIRST; s <= BANKS_NUM_STEPS; ++s) {
        d->abt_conflicts[s - ABT_FIRST] = (steps & STEP_BIT(s)) ? c.value[k][0] : -1.0;
        if (steps & STEP_BIT(s))
            snprintf(d->abt_kernel[s - ABT_FIRST], sizeof d->abt_kernel[0], "%s", c.kernel[k++]);
    }
}

/* --counters: one line per probe pattern and A*B^T step. */
static int counters(cml_lab_run *r, cml_lab_counters *out)
{
    lab_data *d = r->data;
    collect_counters(r);
    out->available = d->counters_available;
    snprintf(out->reason, sizeof out->reason, "%s", d->counters_reason);
    if (!d->counters_available)
        return CML_EXIT_OK;
    /* A launch Nsight Compute gave no value for (-1: "n/a") is said so, and
     * its step has no value: not -1 printed as a count, nor summed in. */
    if (cml_lab_selected(r, PROBE_STEP)) {
        double sum = 0.0;
        int unread = 0;
        for (int p = 0; p < BANKS_NUM_PATTERNS; ++p) {
            double v = d->pat[p].conflicts;
            unread += v < 0.0;
            sum += v < 0.0 ? 0.0 : v;
            if (r->args.json)
                continue;
            if (v < 0.0)
                printf("step %d probe %s: counters not available: ncu gave no value\n", PROBE_STEP,
                       banks_pattern_names[p]);
            else
                printf("step %d probe %s: shared-load bank conflicts %.0f (%.2f wavefronts per load)\n", PROBE_STEP,
                       banks_pattern_names[p], v, 1.0 + v / PROBE_LOADS_PER_ROUND);
        }
        char kernels[64];
        snprintf(kernels, sizeof kernels, "probe_kernel, once per pattern (%d)", BANKS_NUM_PATTERNS);
        cml_lab_counters_add(out, r, PROBE_STEP, kernels, unread ? -1.0 : sum);
    }
    for (int s = ABT_FIRST; s <= BANKS_NUM_STEPS; ++s) {
        if (!cml_lab_selected(r, s))
            continue;
        double v = d->abt_conflicts[s - ABT_FIRST];
        cml_lab_counters_add(out, r, s, d->abt_kernel[s - ABT_FIRST], v);
        if (r->args.json)
            continue;
        if (v < 0.0)
            printf("step %d %s: counters not available: ncu gave no value\n", s, cml_lab_ident(r, s));
        else
            printf("step %d %s: shared-load bank conflicts %.0f (%d matrices, one wave of blocks)\n", s,
                   cml_lab_ident(r, s), v, d->counter_batch);
    }
    return CML_EXIT_OK;
}

/* After the ceiling: counters on the rows, the probe table as extras. */
static void finish(cml_lab_run *r)
{
    lab_data *d = r->data;
    static char md[16384], json[8192];
    if (!r->no_counters)
        collect_counters(r);
    else
        snprintf(d->counters_reason, sizeof d->counters_reason, "--no-counters");
    for (int i = 0; i < r->rep.nrows; ++i) {
        cml_row *row = &r->rep.rows[i];
        double k = row->kind == CML_ROW_STEP && row->step >= ABT_FIRST ? d->abt_conflicts[row->step - ABT_FIRST]
                                                                        : -1.0;
        if (k >= 0.0 && row->status == CML_ROW_OK)
            snprintf(row->note + strlen(row->note), sizeof row->note - strlen(row->note),
                     "%sncu: %.0f shared-load bank conflicts per matrix", row->note[0] ? "; " : "",
                     k / d->counter_batch);
    }
    if (d->probe_run) {
        patterns_table(d, 1, md, sizeof md);
        r->rep.extra_markdown = md;
        patterns_json(d, json, sizeof json);
        r->rep.extra_json = json;
    }
}

/* Before the A*B^T table (or check lines): the probe's. */
static void before_table(cml_lab_run *r)
{
    static char text[16384];
    lab_data *d = r->data;
    if (!d->probe_run)
        return;
    if (r->args.check_only) {
        for (int p = 0; p < BANKS_NUM_PATTERNS; ++p)
            printf("step %d probe %-16s %s%s%s\n", PROBE_STEP, banks_pattern_names[p],
                   d->pat[p].why[0] ? "WRONG" : "ok", d->pat[p].why[0] ? ": " : "", d->pat[p].why);
        return;
    }
    patterns_table(d, 0, text, sizeof text);
#ifdef CML_CPU_BACKEND
    printf("Step 4, the probe: %d warps read each pattern at once; cycles are emulated on the CPU path\n"
           "(no GPU's shared memory behind them), so the model gets no check from them here: its tests\n"
           "judge it, and a GPU's probe compares it with real cycles.\n\n%s\n",
           BANKS_PROBE_WARPS, text);
#else
    printf("Step 4, the probe: %d warps read each pattern at once; cycles per warp-wide 4-byte load.\n"
           "model: your bank model's wavefronts. ncu: 1 + bank conflicts per load (Nsight Compute).\n"
           "check: the measured ratio within %.0f%% of the model's.\n\n%s\n",
           BANKS_PROBE_WARPS, 100.0 * TOLERANCE, text);
#endif
}

CML_LAB_STEP_TABLE(BANKS);

#ifdef CML_CPU_BACKEND
#define DEFAULT_BATCH 1024 /* the CPU path: seconds on 2 cores, not minutes */
#define DEFAULT_BATCH_HELP "32x32 matrices per A*B^T (default 1024 on the CPU path: 12 MiB moved)"
#else
#define DEFAULT_BATCH (1 << 16)
#define DEFAULT_BATCH_HELP "32x32 matrices per A*B^T (default 65536: 768 MiB moved)"
#endif

static const cml_lab_option options[] = {
    {"--batch B", DEFAULT_BATCH_HELP},
    {"--rounds R", "probe rounds of " STR(BANKS_PROBE_UNROLL) " loads per thread (default 256)"},
};
static const cml_lab_option modes[] = {
    {"--model", "print the model's predictions only (no GPU needed)"},
};

static const cml_lab lab = {
    CML_LAB_IDENTITY(BANKS, "01_shared_banks", "banks"),
    .title = "bank conflicts: the probe, and C = A*B^T of 32x32 tiles",
    .first_row_step = ABT_FIRST,
    .default_repeat = 20,
    .name_width = 13,
    .list_files = 1,
    .usage = "[--step N|all|LIST] [--batch B] [--rounds R] [--repeat N] [--json]\n"
             "       [--markdown FILE] [--check-only] [--counters] [--no-counters]\n"
             "       | --model | --list | --probe | --help",
    .about = "For each access pattern: the wavefronts your bank model (bank_model.c)\n"
             "predicts, the cycles per warp-wide load the probe (step 4) measures, the\n"
             "ratio to the conflict-free stride 1, and Nsight Compute's count of bank\n"
             "conflicts when it can read the GPU's counters. Then A*B^T (steps 5-7):\n"
             "checked against a CPU product, timed (median of N runs after a warm-up)\n"
             "next to the device-copy bandwidth measured in the same run.",
    .step_help = "steps: all (default), 6, 4,6,7 or 5-7 (1-3: the model only)",
    CML_LAB_LIST(options, options),
    .repeat_help = "timed runs per measurement (default 20)",
    .json_help = "print the results as JSON instead of the tables",
    .check_only_help = "check each selected step once; no timing, no counters\n"
                       "(for compute-sanitizer and Nsight Compute)",
    .counters_help = "print only the bank-conflict counts per step, from ncu\n(with --json: as JSON)",
    .no_counters_help = "do not run Nsight Compute",
    CML_LAB_LIST(modes, modes),
    .notes = "Set CML_NCU to the ncu to use (default: ncu on the PATH), CML_SEED to\nchange the data.",
    .option = option,
    CML_LAB_GPU_PART,
    .host_part = host_part,
    .host_part_name = "model",
    .host_part_hint = "`banks_run --model` (your bank model's predictions)",
    .before_rows = run_probe,
    .finish = finish,
    .before_table = before_table,
    .table_note = "GB/s counts A and B read and C written; the copies count bytes read + written.",
    .counters = counters,
    .counters_metric = CML_NCU_SHARED_LD_CONFLICTS,
};

int main(int argc, char **argv)
{
    static lab_data d = {.batch = DEFAULT_BATCH, .rounds = 256};
    for (int k = 0; k < BANKS_NUM_STEPS - PROBE_STEP; ++k)
        d.abt_conflicts[k] = -1.0;
    return cml_lab_main(&lab, &d, sizeof d, argc, argv);
}
