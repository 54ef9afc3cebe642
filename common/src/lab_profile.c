/* lab_profile.c: --profile, what limits one step, read by Nsight Compute
 * (cml_lab_runner.h). The step is checked here, then run alone in this
 * program under ncu (`--check-only --step N` and the lab's own options, as
 * --sectors does), one fixed list of metrics read per launch. Launches of
 * one kernel are summed (bytes, sectors, time) or averaged over their time
 * (the percentages); the kit's own kernels (cml_*) are left out. Each row
 * says what its number tells, from the numbers alone. */
#define _POSIX_C_SOURCE 200809L
#include "cml/cml_lab_runner.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cml/cml_check.h"

/* The warp stall reasons, as ncu names them in
 * smsp__warp_issue_stalled_<reason>_per_warp_active.pct (the share of the
 * active warps' cycles spent so), and what each means. */
static const struct stall {
    const char *reason;
    const char *means;
} stalls[] = {
    {"long_scoreboard", "waiting for a global, local or texture memory result (L1TEX)"},
    {"lg_throttle", "waiting for room in the queue of global and local memory instructions"},
    {"barrier", "waiting at a barrier (__syncthreads) for the block's other warps"},
    {"mio_throttle", "waiting for room in the memory input/output queue (shared memory, special math)"},
    {"short_scoreboard", "waiting for a shared-memory or other MIO result"},
    {"wait", "a fixed wait between dependent instructions"},
    {"not_selected", "ready, but the scheduler issued another warp's instruction"},
    {"math_pipe_throttle", "waiting for a busy math pipe"},
    {"membar", "waiting at a memory barrier (__threadfence)"},
    {"drain", "at its exit, waiting for its stores to drain to memory"},
    {"imc_miss", "waiting for the immediate constant cache (a constant-memory miss)"},
    {"dispatch_stall", "the dispatcher held back an instruction the scheduler picked"},
    {"no_instruction", "waiting for its next instruction to be fetched"},
    {"sleeping", "asleep (__nanosleep, or its threads all waiting)"},
    {"tex_throttle", "waiting for room in the texture queue"},
    {"selected", "issuing an instruction (not a stall)"},
};
enum { N_STALLS = sizeof stalls / sizeof stalls[0] };

enum {
    DURATION, DRAM_READ, DRAM_WRITE, DRAM_PEAK, L2_HIT,
    LD_SECTORS, LD_REQUESTS, ST_SECTORS, ST_REQUESTS,
    OCC_ACHIEVED, OCC_THEORETICAL, REGISTERS,
    LIMIT_REGISTERS, LIMIT_SHARED, LIMIT_WARPS, LIMIT_BLOCKS,
    ISSUE_BUSY, FIRST_STALL,
    N_METRICS = FIRST_STALL + N_STALLS
};

static const char *const fixed_metrics[FIRST_STALL] = {
    "gpu__time_duration.sum",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "lts__t_sector_hit_rate.pct",
    CML_NCU_GLOBAL_LD_SECTORS,
    CML_NCU_GLOBAL_LD_REQUESTS,
    CML_NCU_GLOBAL_ST_SECTORS,
    CML_NCU_GLOBAL_ST_REQUESTS,
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__maximum_warps_per_active_cycle_pct",
    "launch__registers_per_thread",
    "launch__occupancy_limit_registers",
    "launch__occupancy_limit_shared_mem",
    "launch__occupancy_limit_warps",
    "launch__occupancy_limit_blocks",
    "smsp__issue_active.avg.pct_of_peak_sustained_active",
};

/* How launches of one kernel combine: summed, averaged over their time,
 * or the first launch's (what the launch configuration fixes). */
enum { SUM, MEAN, FIRST };
static int combine(int m)
{
    switch (m) {
    case DURATION: case DRAM_READ: case DRAM_WRITE: case LD_SECTORS: case LD_REQUESTS: case ST_SECTORS:
    case ST_REQUESTS:
        return SUM;
    case OCC_THEORETICAL: case REGISTERS: case LIMIT_REGISTERS: case LIMIT_SHARED: case LIMIT_WARPS:
    case LIMIT_BLOCKS:
        return FIRST;
    default:
        return MEAN;
    }
}

#define MAX_GROUPS 16

typedef struct profile {
    int step;
    double ideal;                            /* bytes the step must move; < 0: the lab's unit is not bytes */
    char name[N_METRICS][80];                /* the metrics' ncu names */
    int unknown[N_METRICS];                  /* 1: this ncu does not know it (left out of the run) */
    char unknown_why[300];                   /* what ncu said of the first such */
    int ngroups;                             /* the lab's kernels, one group a kernel name */
    struct {
        char kernel[64];
        int launches;
        double v[N_METRICS];                 /* < 0: no value */
    } group[MAX_GROUPS];
} profile;

static void name_metrics(profile *p)
{
    for (int m = 0; m < FIRST_STALL; ++m)
        snprintf(p->name[m], sizeof p->name[m], "%s", fixed_metrics[m]);
    for (int s = 0; s < N_STALLS; ++s)
        snprintf(p->name[FIRST_STALL + s], sizeof p->name[0], "smsp__warp_issue_stalled_%s_per_warp_active.pct",
                 stalls[s].reason);
}

/* The launches of c (their values in the order of map) into p's groups. */
static void group_launches(profile *p, const cml_ncu_counts *c, const int *map, int n)
{
    double weight[MAX_GROUPS] = {0};
    for (int k = 0; k < c->nkernels; ++k) {
        char name[64];
        cml_lab_kernel_name(c->kernel[k], name, sizeof name);
        if (strncmp(name, "cml_", 4) == 0)
            continue;
        int g = 0;
        while (g < p->ngroups && strcmp(p->group[g].kernel, name) != 0)
            ++g;
        if (g == MAX_GROUPS)
            continue;
        double v[N_METRICS];
        for (int m = 0; m < N_METRICS; ++m)
            v[m] = -1.0;
        for (int j = 0; j < n; ++j)
            v[map[j]] = c->value[k][j];
        double w = v[DURATION] > 0.0 ? v[DURATION] : 1.0;
        if (g == p->ngroups) {  /* a kernel's first launch */
            ++p->ngroups;
            snprintf(p->group[g].kernel, sizeof p->group[g].kernel, "%s", name);
            p->group[g].launches = 0;
            for (int m = 0; m < N_METRICS; ++m)
                p->group[g].v[m] = combine(m) == MEAN && v[m] >= 0.0 ? v[m] * w : v[m];
        } else {
            for (int m = 0; m < N_METRICS; ++m) {
                double *have = &p->group[g].v[m];
                if (*have < 0.0 || v[m] < 0.0)
                    *have = -1.0;  /* a launch without it: the kernel's value is unknown */
                else if (combine(m) == SUM)
                    *have += v[m];
                else if (combine(m) == MEAN)
                    *have += v[m] * w;
            }
        }
        ++p->group[g].launches;
        weight[g] += w;
    }
    for (int g = 0; g < p->ngroups; ++g)
        for (int m = 0; m < N_METRICS; ++m)
            if (combine(m) == MEAN && p->group[g].v[m] >= 0.0)
                p->group[g].v[m] /= weight[g];
}

/* The longest of the n names that why holds, or -1: the metric ncu refused. */
static int named_metric(const char *why, const char *const *names, int n)
{
    int best = -1;
    for (int j = 0; j < n; ++j)
        if (strstr(why, names[j]) != NULL && (best < 0 || strlen(names[j]) > strlen(names[best])))
            best = j;
    return best;
}

/* The step under ncu. A metric ncu refuses by name is left out and the run
 * repeated (a few times at most); any other failure ends it with why. */
static int measure(const cml_lab_run *r, profile *p, char *why, size_t len)
{
    static cml_ncu_counts c;
    for (int attempt = 0; attempt < 6; ++attempt) {
        const char *names[N_METRICS];
        int map[N_METRICS], n = 0;
        for (int m = 0; m < N_METRICS; ++m)
            if (!p->unknown[m]) {
                map[n] = m;
                names[n++] = p->name[m];
            }
        if (cml_lab_ncu(r, 1u << (p->step - 1), r->lab_words, names, n, NULL, 0, &c, why, len)) {
            group_launches(p, &c, map, n);
            if (p->ngroups == 0)
                snprintf(why, len, "ncu measured no launch of the lab's own kernels (only the kit's cml_* ones)");
            return p->ngroups > 0;
        }
        int bad = named_metric(why, names, n);
        if (bad < 0)
            return 0;
        p->unknown[map[bad]] = 1;
        if (p->unknown_why[0] == '\0')
            snprintf(p->unknown_why, sizeof p->unknown_why, "%s", why);
    }
    return 0;
}

/* ------------------------------------------------------------ the rows */

typedef struct prow {
    char label[40], value[80], tells[480];
} prow;

static int have(const double *v, int m) { return v[m] >= 0.0; }

static void missing(const profile *p, int m, prow *w)
{
    snprintf(w->value, sizeof w->value, "not measured");
    if (p->unknown[m])
        snprintf(w->tells, sizeof w->tells, "this ncu does not know %s (it said: %.240s)", p->name[m], p->unknown_why);
    else
        snprintf(w->tells, sizeof w->tells, "ncu gave no value for %s", p->name[m]);
}

static const char *plural(int n, const char *one, const char *many) { return n == 1 ? one : many; }

/* Sectors per request of one direction, against the 4 sectors of 32
 * consecutive 4-byte words. */
static void sectors_row(const profile *p, const double *v, int sectors, int requests, const char *what, prow *w)
{
    snprintf(w->label, sizeof w->label, "global %s", what);
    if (!have(v, sectors) || !have(v, requests)) {
        missing(p, have(v, sectors) ? requests : sectors, w);
        return;
    }
    char s[32], q[32];
    if (v[requests] == 0.0) {
        snprintf(w->value, sizeof w->value, "none");
        snprintf(w->tells, sizeof w->tells, "the kernel issued no global %s", what);
        return;
    }
    double per = v[sectors] / v[requests];
    snprintf(w->value, sizeof w->value, "%.2f sectors/request (ideal 4)", per);
    const char *how = per > 4.04   ? "more than the 4 of a warp's 32 consecutive 4-byte words: the lanes touch more "
                                     "32-byte sectors, or each moves more than 4 bytes"
                      : per < 3.96 ? "fewer than the 4 of a warp's 32 consecutive 4-byte words: some requests carry "
                                     "fewer lanes or bytes"
                                   : "as a warp's 32 consecutive 4-byte words: coalesced";
    snprintf(w->tells, sizeof w->tells, "%s sectors in %s requests; %.2f x %s", cml_with_commas(v[sectors], s, sizeof s),
             cml_with_commas(v[requests], q, sizeof q), per / 4.0, how);
}

/* The blocks an SM may hold by each limit, and which sets it. */
static void limit_row(const profile *p, const double *v, prow *w)
{
    static const int lim[4] = {LIMIT_REGISTERS, LIMIT_SHARED, LIMIT_WARPS, LIMIT_BLOCKS};
    static const char *const by[4] = {"registers", "shared memory", "warps", "the blocks-per-SM limit"};
    snprintf(w->label, sizeof w->label, "occupancy limit");
    for (int k = 0; k < 4; ++k)
        if (!have(v, lim[k])) {
            missing(p, lim[k], w);
            return;
        }
    double least = v[lim[0]];
    for (int k = 1; k < 4; ++k)
        if (v[lim[k]] < least)
            least = v[lim[k]];
    char regs[48] = "";
    if (have(v, REGISTERS))
        snprintf(regs, sizeof regs, "; %.0f registers a thread", v[REGISTERS]);
    snprintf(w->value, sizeof w->value, "%.0f %s an SM%s", least, plural((int)least, "block", "blocks"), regs);
    int at = snprintf(w->tells, sizeof w->tells, "blocks an SM may hold: registers allow %.0f, shared memory %.0f, "
                      "warps %.0f, the block limit %.0f; set by ", v[LIMIT_REGISTERS], v[LIMIT_SHARED],
                      v[LIMIT_WARPS], v[LIMIT_BLOCKS]);
    for (int k = 0, n = 0; k < 4 && at > 0 && (size_t)at < sizeof w->tells; ++k)
        if (v[lim[k]] == least)
            at += snprintf(w->tells + at, sizeof w->tells - (size_t)at, "%s%s", n++ ? " and " : "", by[k]);
}

/* A kernel's rows; returns how many. */
static int kernel_rows(const profile *p, const double *v, int launches, prow *rows)
{
    int n = 0;
    prow *w = &rows[n++];
    snprintf(w->label, sizeof w->label, "time");
    if (have(v, DURATION)) {
        snprintf(w->value, sizeof w->value, "%.3f ms", v[DURATION] / 1e6);
        snprintf(w->tells, sizeof w->tells, "%d %s under ncu, summed; the GPU's clocks not locked", launches,
                 plural(launches, "launch", "launches"));
    } else {
        missing(p, DURATION, w);
    }

    w = &rows[n++];
    snprintf(w->label, sizeof w->label, "DRAM read, written");
    if (have(v, DRAM_READ) && have(v, DRAM_WRITE)) {
        char a[32], b[32];
        snprintf(w->value, sizeof w->value, "%s B, %s B", cml_with_commas(v[DRAM_READ], a, sizeof a),
                 cml_with_commas(v[DRAM_WRITE], b, sizeof b));
        snprintf(w->tells, sizeof w->tells, "the bytes that crossed the DRAM interface (the step's total against "
                 "the bytes it must move: below)");
    } else {
        missing(p, have(v, DRAM_READ) ? DRAM_WRITE : DRAM_READ, w);
    }

    w = &rows[n++];
    snprintf(w->label, sizeof w->label, "DRAM throughput");
    if (have(v, DRAM_PEAK)) {
        double d = v[DRAM_PEAK];
        snprintf(w->value, sizeof w->value, "%.1f %% of peak", d);
        snprintf(w->tells, sizeof w->tells, "%s",
                 d >= 80.0   ? "DRAM was busy most of the time: the launch runs near the memory's bandwidth"
                 : d >= 50.0 ? "DRAM was busy part of the time: bandwidth is not yet the limit"
                             : "DRAM was idle much of the time: something else sets the pace (see the stalls)");
    } else {
        missing(p, DRAM_PEAK, w);
    }

    w = &rows[n++];
    snprintf(w->label, sizeof w->label, "L2 hit rate");
    if (have(v, L2_HIT)) {
        snprintf(w->value, sizeof w->value, "%.1f %%", v[L2_HIT]);
        snprintf(w->tells, sizeof w->tells, "of the sectors looked up in the L2 cache (loads and stores), %.0f %% "
                 "were there; the rest went to DRAM", v[L2_HIT]);
    } else {
        missing(p, L2_HIT, w);
    }

    sectors_row(p, v, LD_SECTORS, LD_REQUESTS, "loads", &rows[n++]);
    sectors_row(p, v, ST_SECTORS, ST_REQUESTS, "stores", &rows[n++]);

    w = &rows[n++];
    snprintf(w->label, sizeof w->label, "occupancy");
    if (have(v, OCC_ACHIEVED)) {
        char theory[40] = "";
        if (have(v, OCC_THEORETICAL))
            snprintf(theory, sizeof theory, " (theoretical %.0f %%)", v[OCC_THEORETICAL]);
        snprintf(w->value, sizeof w->value, "%.1f %% achieved%s", v[OCC_ACHIEVED], theory);
        snprintf(w->tells, sizeof w->tells, "the warps resident on an SM, on average, of the most it can hold%s",
                 have(v, OCC_THEORETICAL) && v[OCC_ACHIEVED] < 0.9 * v[OCC_THEORETICAL]
                     ? "; under the theoretical: part of the time the SMs held fewer warps than the launch allows"
                     : "");
    } else {
        missing(p, OCC_ACHIEVED, w);
    }
    limit_row(p, v, &rows[n++]);

    w = &rows[n++];
    snprintf(w->label, sizeof w->label, "issue slots busy");
    if (have(v, ISSUE_BUSY)) {
        snprintf(w->value, sizeof w->value, "%.1f %%", v[ISSUE_BUSY]);
        snprintf(w->tells, sizeof w->tells, "the schedulers issued an instruction in %.0f %% of their active "
                 "cycles; in the rest no warp was ready", v[ISSUE_BUSY]);
    } else {
        missing(p, ISSUE_BUSY, w);
    }

    /* the top three stalls (issuing, "selected", is not one) */
    int used[N_STALLS] = {0}, shown = 0;
    for (int t = 0; t < 3; ++t) {
        int best = -1;
        for (int s = 0; s < N_STALLS; ++s)
            if (!used[s] && strcmp(stalls[s].reason, "selected") != 0 && have(v, FIRST_STALL + s) &&
                (best < 0 || v[FIRST_STALL + s] > v[FIRST_STALL + best]))
                best = s;
        if (best < 0)
            break;
        used[best] = 1;
        w = &rows[n++];
        snprintf(w->label, sizeof w->label, "stall %d", t + 1);
        snprintf(w->value, sizeof w->value, "%s %.1f %%", stalls[best].reason, v[FIRST_STALL + best]);
        snprintf(w->tells, sizeof w->tells, "of the active warps' cycles: %s", stalls[best].means);
        ++shown;
    }
    int unmeasured = 0;
    for (int s = 0; s < N_STALLS; ++s)
        unmeasured += !have(v, FIRST_STALL + s);
    if (shown == 0) {
        w = &rows[n++];
        snprintf(w->label, sizeof w->label, "warp stalls");
        missing(p, FIRST_STALL, w);
    } else if (unmeasured > 0) {
        w = &rows[n++];
        snprintf(w->label, sizeof w->label, "stalls not measured");
        snprintf(w->value, sizeof w->value, "%d of %d", unmeasured, N_STALLS);
        int at = snprintf(w->tells, sizeof w->tells, "no value for:"), unknown = 0;
        for (int s = 0; s < N_STALLS && at > 0 && (size_t)at < sizeof w->tells; ++s)
            if (!have(v, FIRST_STALL + s)) {
                at += snprintf(w->tells + at, sizeof w->tells - (size_t)at, " %s", stalls[s].reason);
                unknown += p->unknown[FIRST_STALL + s];
            }
        if (unknown && at > 0 && (size_t)at < sizeof w->tells)
            snprintf(w->tells + at, sizeof w->tells - (size_t)at, " (%s unknown to this ncu, which said: %.200s)",
                     unknown == 1 ? "a name" : "names", p->unknown_why);
    }
    return n;
}

/* The step's DRAM bytes against the bytes it must move. */
static void step_row(const profile *p, prow *w)
{
    double bytes = 0.0;
    int known = 1;
    for (int g = 0; g < p->ngroups; ++g) {
        const double *v = p->group[g].v;
        known &= have(v, DRAM_READ) && have(v, DRAM_WRITE);
        bytes += v[DRAM_READ] + v[DRAM_WRITE];
    }
    snprintf(w->label, sizeof w->label, "DRAM traffic of the step");
    char a[32], b[32];
    if (!known) {
        snprintf(w->value, sizeof w->value, "not measured");
        snprintf(w->tells, sizeof w->tells, "a kernel's DRAM bytes are missing (above)");
        return;
    }
    if (p->ideal <= 0.0) {
        snprintf(w->value, sizeof w->value, "%s B", cml_with_commas(bytes, a, sizeof a));
        snprintf(w->tells, sizeof w->tells, "the lab's rate is not in bytes, so there is no ideal byte count to "
                 "compare with");
        return;
    }
    double x = bytes / p->ideal;
    snprintf(w->value, sizeof w->value, "%.2f x the ideal", x);
    int at = snprintf(w->tells, sizeof w->tells, "%s B crossed DRAM; the step must move %s B (the bytes its GB/s "
                      "count): ", cml_with_commas(bytes, a, sizeof a), cml_with_commas(p->ideal, b, sizeof b));
    if (at > 0 && (size_t)at < sizeof w->tells) {
        if (x > 1.02)
            snprintf(w->tells + at, sizeof w->tells - (size_t)at, "%.0f %% more bytes than that crossed DRAM",
                     100.0 * (x - 1.0));
        else if (x < 0.98)
            snprintf(w->tells + at, sizeof w->tells - (size_t)at, "%.0f %% fewer crossed DRAM: the rest was "
                     "served from, or left in, the L2 cache", 100.0 * (1.0 - x));
        else
            snprintf(w->tells + at, sizeof w->tells - (size_t)at, "each byte crossed DRAM about once");
    }
}

/* ------------------------------------------------------------ output */

#define MAX_ROWS 24

static void command_line(const cml_lab_run *r, const profile *p, char *buf, size_t len)
{
    int at = snprintf(buf, len, "%s --profile --step %d", r->args.prog, p->step);
    for (int k = 0; k < r->nlab_words && at > 0 && (size_t)at < len; ++k)
        at += snprintf(buf + at, len - (size_t)at, " %s", r->lab_words[k]);
}

static void print_text(const cml_lab_run *r, const profile *p)
{
    char dev[400];
    cml_device_describe(&r->dev, dev, sizeof dev);
    printf("\nwhat limits step %d (%s) of %s, read by Nsight Compute\nGPU: %s\n%s, seed %llu, %s\n", p->step,
           cml_lab_ident(r, p->step), r->lab->name, dev, r->rep.params, (unsigned long long)r->seed, r->rep.date);
    prow rows[MAX_ROWS];
    for (int g = 0; g < p->ngroups; ++g) {
        printf("\nkernel %s (%d %s)\n", p->group[g].kernel, p->group[g].launches,
               plural(p->group[g].launches, "launch", "launches"));
        int n = kernel_rows(p, p->group[g].v, p->group[g].launches, rows);
        for (int k = 0; k < n; ++k)
            printf("  %-24s %-36s %s\n", rows[k].label, rows[k].value, rows[k].tells);
    }
    step_row(p, &rows[0]);
    printf("\nstep %d\n  %-24s %-36s %s\n", p->step, rows[0].label, rows[0].value, rows[0].tells);
    printf("(Nsight Compute, one run of `--check-only --step %d`; every metric's value: %s --profile --step %d "
           "--json)\n", p->step, r->args.prog, p->step);
}

static void json_number(FILE *out, double v)
{
    if (v >= 0.0)
        fprintf(out, "%.6g", v);
    else
        fprintf(out, "null");
}

static void print_json(const cml_lab_run *r, const profile *p, int available, const char *why)
{
    printf("{\"lab\": ");
    cml_json_string(stdout, r->lab->name);
    printf(", \"gpu\": ");
    cml_json_string(stdout, r->dev.name);
    printf(", \"date\": ");
    cml_json_string(stdout, r->rep.date);
    printf(", \"params\": ");
    cml_json_string(stdout, r->rep.params);
    printf(", \"step\": %d, \"ident\": ", p->step);
    cml_json_string(stdout, cml_lab_ident(r, p->step));
    printf(", \"available\": %s, \"reason\": ", available ? "true" : "false");
    cml_json_string(stdout, available ? "" : why);
    printf(", \"ideal_bytes\": ");
    json_number(stdout, p->ideal);
    printf(", \"unknown_metrics\": [");
    for (int m = 0, n = 0; m < N_METRICS; ++m)
        if (p->unknown[m]) {
            printf("%s", n++ ? ", " : "");
            cml_json_string(stdout, p->name[m]);
        }
    printf("],\n \"kernels\": [");
    for (int g = 0; available && g < p->ngroups; ++g) {
        printf("%s\n  {\"kernel\": ", g ? "," : "");
        cml_json_string(stdout, p->group[g].kernel);
        printf(", \"launches\": %d, \"metrics\": {", p->group[g].launches);
        for (int m = 0; m < N_METRICS; ++m) {
            printf("%s\"%s\": ", m ? ", " : "", p->name[m]);
            json_number(stdout, p->group[g].v[m]);
        }
        printf("}}");
    }
    printf("]}\n");
}

/* A Markdown table cell: '|' would end it. */
static void md_text(FILE *out, const char *s)
{
    for (; *s; ++s) {
        if (*s == '|')
            fputc('\\', out);
        fputc(*s, out);
    }
}

static void markdown_body(const cml_lab_run *r, const profile *p, FILE *out)
{
    char dev[400], cmd[600];
    cml_device_describe(&r->dev, dev, sizeof dev);
    command_line(r, p, cmd, sizeof cmd);
    fprintf(out, "Measured on %s, %s. %s, seed %llu. Written by the lab's runner, `%s`: the step checked, then "
            "run once more alone under Nsight Compute (`--check-only`), the GPU's clocks not locked; launches of "
            "one kernel summed (time, bytes, sectors) or averaged over their time (the percentages).\n",
            dev, r->rep.date, r->rep.params, (unsigned long long)r->seed, cmd);
    prow rows[MAX_ROWS];
    for (int g = 0; g < p->ngroups; ++g) {
        fprintf(out, "\n**%s** (%d %s)\n\n| measure | value | what it tells |\n|---|---|---|\n", p->group[g].kernel,
                p->group[g].launches, plural(p->group[g].launches, "launch", "launches"));
        int n = kernel_rows(p, p->group[g].v, p->group[g].launches, rows);
        for (int k = 0; k < n; ++k) {
            fprintf(out, "| %s | ", rows[k].label);
            md_text(out, rows[k].value);
            fputs(" | ", out);
            md_text(out, rows[k].tells);
            fputs(" |\n", out);
        }
    }
    step_row(p, &rows[0]);
    fprintf(out, "\n**The step**: %s %s: ", rows[0].label, rows[0].value);
    md_text(out, rows[0].tells);
    fputs(".\n", out);
}

typedef struct page {
    const cml_lab_run *r;
    const profile *p;
} page;

/* The page (whole: its heading and the marked region) or the region's text. */
static void write_page(FILE *out, int whole, const void *ctx)
{
    const page *g = (const page *)ctx;
    if (whole)
        fprintf(out, "# %s on %s\n\nWhat limits step %d (%s), read by Nsight Compute.\n\n<!-- profile:begin -->\n",
                g->r->lab->name, g->r->dev.name, g->p->step, cml_lab_ident(g->r, g->p->step));
    markdown_body(g->r, g->p, out);
    if (whole)
        fprintf(out, "<!-- profile:end -->\n");
}

/* ------------------------------------------------------------ the mode */

void cml_lab_profile_options(cml_lab_run *r)
{
    const cml_lab *lab = r->lab;
    unsigned all = lab->nsteps >= 32 ? ~0u : (1u << lab->nsteps) - 1u;
    const char *bad = NULL;
    char msg[200];
    if (r->counters || r->sectors || r->sweep || r->args.check_only || r->host_only)
        bad = "--profile goes alone (with --step N, --json, --markdown FILE and the sizes)";
    if (bad == NULL && r->args.steps == all)
        r->args.steps = 1u << (lab->nsteps - 1);  /* the default: the lab's last step */
    if (bad == NULL && (r->args.steps & (r->args.steps - 1u)) != 0) {
        snprintf(msg, sizeof msg, "--profile measures one step: --step N (default the last, %d)", lab->nsteps);
        bad = msg;
    }
    if (bad == NULL && r->args.steps < (1u << (lab->first_gpu_step - 1))) {
        snprintf(msg, sizeof msg, "--profile: step %d runs on the host, with nothing for Nsight Compute to "
                 "measure; choose a step from %d", __builtin_ctz(r->args.steps) + 1, lab->first_gpu_step);
        bad = msg;
    }
    if (bad != NULL) {
        cml_lab_say(r, "%s", bad);
        r->args.usage(stderr);
        exit(CML_EXIT_USAGE);
    }
}

/* The step checked as --check-only would (steps before the rows by the
 * lab's before_rows, all of them); 1 when it passed, else 0 with why. */
static int check_step(cml_lab_run *r, int step, char *why, size_t len, int *sticky)
{
    const cml_lab *lab = r->lab;
    int first_row = lab->first_row_step > 0 ? lab->first_row_step : lab->first_gpu_step;
    if (step < first_row) {
        int keep = r->args.check_only;
        r->args.check_only = 1;
        int wrong = lab->before_rows ? lab->before_rows(r) : 0;
        r->args.check_only = keep;
        if (wrong)
            snprintf(why, len, "not measured: its check failed (the lines above)");
        return wrong == 0;
    }
    cml_row row;
    memset(&row, 0, sizeof row);
    if (cml_lab_check(r, step, &row))
        return 1;
    snprintf(why, len, "not measured: %s", row.note[0] ? row.note : "a wrong result");
    *sticky = row.status == CML_ROW_ERROR;
    return 0;
}

int cml_lab_profile(cml_lab_run *r)
{
    const cml_lab *lab = r->lab;
    static profile p;
    char why[300] = "";
    memset(&p, 0, sizeof p);
    p.step = __builtin_ctz(r->args.steps) + 1;
    name_metrics(&p);
    cml_lab_new_report(r);
    int rc = lab->prepare(r);
    if (rc != CML_EXIT_OK)
        return rc;
    int sticky = 0, ok = check_step(r, p.step, why, sizeof why, &sticky);
    const char *unit = lab->unit ? lab->unit : "GB/s";
    p.ideal = strcmp(unit, "GB/s") == 0 && lab->work ? lab->work(r, p.step) : -1.0;
    if (lab->release)
        lab->release(r);
    if (sticky) {
        cml_lab_say(r, "step %d: %s", p.step, why);
        return CML_EXIT_FAIL;
    }
    if (ok)
        ok = measure(r, &p, why, sizeof why);
    if (r->args.json)
        print_json(r, &p, ok, why);
    if (!ok) {
        if (!r->args.json)
            printf("step %d %s: profile not available: %s\n", p.step, cml_lab_ident(r, p.step), why);
        fflush(stdout);
        return CML_EXIT_FAIL;  /* no page is written without its measurements */
    }
    if (!r->args.json)
        print_text(r, &p);
    fflush(stdout);
    for (int k = 0; k < r->args.nmarkdown; ++k)
        if (cml_markdown_write(r->args.markdown[k], "profile", write_page, &(page){r, &p}) != 0) {
            cml_lab_say(r, "cannot write %s: %s", r->args.markdown[k], strerror(errno));
            return CML_EXIT_FAIL;
        }
    return CML_EXIT_OK;
}
