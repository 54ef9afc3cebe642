/* ncu.c: hardware counters through Nsight Compute (see cml_ncu.h); on the
 * CPU path (common/cpu), the runtime's emulated counts instead. */
#define _POSIX_C_SOURCE 200809L
#include "cml/cml_ncu.h"
#include "cml/cml_gpu_turn.h"

#include <cuda_runtime_api.h> /* CML_CPU_BACKEND on the CPU path */
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Splits one CSV line ("a","b,c","d") into at most max fields, in place.
 * Returns the number of fields. */
static int split_csv(char *line, char **field, int max)
{
    int n = 0;
    char *p = line;
    while (*p && n < max) {
        if (*p == '"') {
            char *w = ++p;
            field[n++] = w;
            while (*p && !(*p == '"' && p[1] != '"')) {
                if (*p == '"')  /* "" inside a quoted field */
                    ++p;
                *w++ = *p++;
            }
            if (*p == '"')
                ++p;
            *w = '\0';
            if (*p == ',')
                ++p;
            else if (w == p)
                break;
        } else {
            field[n++] = p;
            while (*p && *p != ',')
                ++p;
            if (*p == ',')
                *p++ = '\0';
        }
    }
    return n;
}

/* "1,234.5" or "1234" -> 1234.5; -1 when it is not a finite number ("n/a",
 * or "nan": a counter ncu did not read, seen on an H200 beside other GPU
 * work; strtod would take "nan" for a number). */
static double parse_value(const char *s)
{
    char digits[64];
    size_t k = 0;
    for (; *s && k + 1 < sizeof digits; ++s)
        if (*s != ',' && *s != ' ')
            digits[k++] = *s;
    digits[k] = '\0';
    char *end = NULL;
    double v = strtod(digits, &end);
    return (k == 0 || end == digits || *end != '\0' || !isfinite(v)) ? -1.0 : v;
}

/* What one unit ncu printed is in the metric's base unit: ncu writes
 * "536.87","Mbyte" or "1.23","msecond" unless told --print-units base
 * (decimal prefixes); bytes and sectors to their count, times to
 * nanoseconds; any other unit as it is. */
static double unit_scale(const char *unit)
{
    static const struct { const char *name; double scale; } units[] = {
        {"second", 1e9}, {"msecond", 1e6}, {"usecond", 1e3}, {"nsecond", 1.0},
        {"Kbyte", 1e3}, {"Mbyte", 1e6}, {"Gbyte", 1e9}, {"Tbyte", 1e12},
        {"Ksector", 1e3}, {"Msector", 1e6}, {"Gsector", 1e9}};
    for (size_t k = 0; unit != NULL && k < sizeof units / sizeof units[0]; ++k)
        if (strcmp(unit, units[k].name) == 0)
            return units[k].scale;
    return 1.0;
}

int cml_ncu_parse_csv(const char *text, const char *const *metrics, int nmetrics, cml_ncu_counts *out)
{
    enum { ID, KERNEL, METRIC, VALUE, UNIT, NCOLS };  /* UNIT may be missing */
    static const char *const names[NCOLS] = {"ID", "Kernel Name", "Metric Name", "Metric Value", "Metric Unit"};
    int col[NCOLS] = {-1, -1, -1, -1, -1};
    long last_id = -1;
    out->nkernels = 0;
    out->nmetrics = nmetrics;
    const char *p = text;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char line[4096];
        if (len < sizeof line && p[0] == '"') {
            memcpy(line, p, len);
            line[len] = '\0';
            if (len > 0 && line[len - 1] == '\r')
                line[len - 1] = '\0';
            char *f[64];
            int nf = split_csv(line, f, 64);
            if (col[ID] < 0) {  /* the header row */
                for (int i = 0; i < nf; ++i)
                    for (int c = 0; c < NCOLS; ++c)
                        if (strcmp(f[i], names[c]) == 0)
                            col[c] = i;
                if (col[ID] < 0 || col[KERNEL] < 0 || col[METRIC] < 0 || col[VALUE] < 0)
                    col[ID] = -1;
            } else if (nf > col[VALUE] && nf > col[METRIC] && nf > col[KERNEL]) {
                int m = -1;
                for (int k = 0; k < nmetrics; ++k)
                    if (strcmp(f[col[METRIC]], metrics[k]) == 0)
                        m = k;
                long id = strtol(f[col[ID]], NULL, 10);
                if (m >= 0) {
                    if (id != last_id || out->nkernels == 0) {
                        if (out->nkernels == CML_NCU_MAX_KERNELS)
                            break;
                        int k = out->nkernels++;
                        snprintf(out->kernel[k], sizeof out->kernel[k], "%s", f[col[KERNEL]]);
                        for (int j = 0; j < CML_NCU_MAX_METRICS; ++j)
                            out->value[k][j] = -1.0;
                        last_id = id;
                    }
                    double v = parse_value(f[col[VALUE]]);
                    out->value[out->nkernels - 1][m] =
                        v >= 0.0 && col[UNIT] >= 0 && nf > col[UNIT] ? v * unit_scale(f[col[UNIT]]) : v;
                }
            }
        }
        p = eol ? eol + 1 : p + len;
    }
    return out->nkernels;
}

int cml_self_exe(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    if (n <= 0 || (size_t)n >= len - 1)
        return 0;
    buf[n] = '\0';
    return 1;
}

/* Appends s to the command in single quotes (a ' inside becomes '\''). */
static int append_quoted(char *cmd, size_t cap, const char *s)
{
    size_t n = strlen(cmd);
    if (n + 4 >= cap)
        return 0;
    cmd[n++] = ' ';
    cmd[n++] = '\'';
    for (; *s; ++s) {
        if (n + 6 >= cap)
            return 0;
        if (*s == '\'') {
            memcpy(cmd + n, "'\\''", 4);
            n += 4;
        } else {
            cmd[n++] = *s;
        }
    }
    cmd[n++] = '\'';
    cmd[n] = '\0';
    return 1;
}

#ifndef CML_CPU_BACKEND
/* The first line of text that holds needle, copied to dst without the
 * "==ERROR== " prefix; 0 when there is none. */
static int first_line_with(const char *text, const char *needle, char *dst, size_t cap)
{
    const char *hit = strstr(text, needle);
    if (hit == NULL)
        return 0;
    const char *start = hit;
    while (start > text && start[-1] != '\n')
        --start;
    const char *end = strchr(hit, '\n');
    size_t len = end ? (size_t)(end - start) : strlen(start);
    if (strncmp(start, "==ERROR== ", 10) == 0) {
        start += 10;
        len -= 10;
    }
    if (len >= cap)
        len = cap - 1;
    memcpy(dst, start, len);
    dst[len] = '\0';
    return 1;
}

/* ncu's first error lines, without their "==ERROR== " and joined by a
 * space, into dst ("An error was reported by the counter measurement
 * library: LaunchFailed"); "" when it printed none. */
static void errors_said(const char *text, char *dst, size_t cap)
{
    size_t n = 0;
    dst[0] = '\0';
    const char *e = strstr(text, "==ERROR== ");
    for (int k = 0; e != NULL && k < 3 && n + 1 < cap; ++k) {
        e += 10;
        int len = (int)strcspn(e, "\n");
        n += (size_t)snprintf(dst + n, cap - n, "%s%.*s", k ? " " : "", len, e);
        e += len;
        e = strncmp(e, "\n==ERROR== ", 11) == 0 ? e + 1 : NULL;  /* the next line, when it is one too */
    }
}
#endif

/* Zeroes *out; 0 with the reason when nmetrics is out of range. */
static int start_counts(cml_ncu_counts *out, int nmetrics)
{
    memset(out, 0, sizeof *out);
    if (nmetrics < 1 || nmetrics > CML_NCU_MAX_METRICS) {
        snprintf(out->reason, sizeof out->reason, "at most %d metrics at a time", CML_NCU_MAX_METRICS);
        return 0;
    }
    return 1;
}

/* Appends the program and its NULL-terminated arguments, quoted. */
static int append_program(char *cmd, size_t cap, const char *exe, const char *const *args)
{
    int ok = append_quoted(cmd, cap, exe);
    for (int k = 0; ok && args && args[k]; ++k)
        ok = append_quoted(cmd, cap, args[k]);
    return ok;
}

/* cml_run_read, with out->reason set when it gives nothing. */
static char *run_and_read(const char *cmd, int *status, cml_ncu_counts *out, const char *what)
{
    *status = -1;
    char *text = cml_run_read(cmd, status);
    if (text == NULL)
        snprintf(out->reason, sizeof out->reason, "%s %s",
                 *status == -1 ? "cannot start" : "out of memory reading the output of", what);
    return text;
}

#ifdef CML_CPU_BACKEND
/* The CPU path: the program runs itself again with CML_CPU_CHECK=banks or
 * =sectors, and the runtime's counts stand in for ncu: lab 01's bank model
 * for the bank-conflict metrics, the runtime's sector counts for the
 * global-memory ones. Where the runtime prints one line per launch
 * ("cml-cpu banks: launch <kernel> ld conflicts=<C> st conflicts=<C>",
 * "cml-cpu sectors: launch <kernel> ld requests=<R> sectors=<S> ideal=<I>
 * st ..."), those are the launches, in order. Otherwise it prints per-kernel
 * totals only ("cml-cpu banks: <kernel> total ld conflicts=<C> ..."): then
 * each step of the "--step" list runs alone and its matching kernels'
 * totals, summed, are one launch (right for a step that launches its kernel
 * once). A metric the check does not count has no value (-1). Metrics of
 * both kinds: one run under CML_CPU_CHECK=sectors,banks, whose two kinds of
 * launch lines (one of each per launch) are paired in order. */
typedef struct stand_in {
    const char *check;                       /* its CML_CPU_CHECK name */
    const char *what;                        /* for messages */
    const char *tag;                         /* how each of its lines starts */
    const char *launch_form, *total_form;    /* the kernel, then nfields numbers */
    int nfields;
    const char *metric[6];                   /* the ncu metric each number stands for, or NULL */
} stand_in;

#define BANKS_TAG "cml-cpu banks: "
#define SECTORS_TAG "cml-cpu sectors: "
#define SECTOR_FIELDS "ld requests=%lld sectors=%lld ideal=%lld st requests=%lld sectors=%lld ideal=%lld"
/* In the order their launch lines are read: the sector counts (a line for
 * every launch) first, then the bank counts are paired with them. */
static const stand_in stand_ins[] = {
    {"sectors", "sector counts", SECTORS_TAG, SECTORS_TAG "launch %63s " SECTOR_FIELDS,
     SECTORS_TAG "%63s total " SECTOR_FIELDS, 6,
     {CML_NCU_GLOBAL_LD_REQUESTS, CML_NCU_GLOBAL_LD_SECTORS, NULL, CML_NCU_GLOBAL_ST_REQUESTS,
      CML_NCU_GLOBAL_ST_SECTORS, NULL}},
    {"banks", "bank accounting", BANKS_TAG, BANKS_TAG "launch %63s ld conflicts=%lld st conflicts=%lld",
     BANKS_TAG "%63s total ld conflicts=%lld st conflicts=%lld", 2,
     {CML_NCU_SHARED_LD_CONFLICTS, CML_NCU_SHARED_ST_CONFLICTS}},
};
enum { N_STAND_INS = sizeof stand_ins / sizeof stand_ins[0], BANKS_KIND = 1 };

static int counts_metric(const stand_in *si, const char *metric)
{
    for (int f = 0; f < si->nfields; ++f)
        if (si->metric[f] != NULL && strcmp(si->metric[f], metric) == 0)
            return 1;
    return 0;
}

static int kernel_wanted(const char *kernel, const char *filter, const regex_t *re)
{
    if (filter == NULL)
        return 1;
    if (re != NULL)
        return regexec(re, kernel, 0, NULL, 0) == 0;
    return strcmp(kernel, filter) == 0;
}

static double metric_of(const stand_in *si, const char *metric, const long long *field)
{
    for (int f = 0; f < si->nfields; ++f)
        if (si->metric[f] != NULL && strcmp(si->metric[f], metric) == 0)
            return (double)field[f];
    return -1.0;
}

/* The k-th launch of this kind: a new launch, or, when another kind's
 * lines made it already (the same kernel), its metrics added to it. */
static void add_launch(const stand_in *si, int k, const char *kernel, const long long *field,
                       const char *const *metrics, int nmetrics, cml_ncu_counts *out)
{
    if (k < out->nkernels) {
        if (strcmp(out->kernel[k], kernel) != 0)
            return;  /* not the same launch: its values stay unknown (-1) */
        for (int m = 0; m < nmetrics; ++m)
            if (counts_metric(si, metrics[m]))
                out->value[k][m] = metric_of(si, metrics[m], field);
        return;
    }
    if (out->nkernels == CML_NCU_MAX_KERNELS)
        return;
    k = out->nkernels++;
    snprintf(out->kernel[k], sizeof out->kernel[k], "%s", kernel);
    for (int m = 0; m < CML_NCU_MAX_METRICS; ++m)
        out->value[k][m] = m < nmetrics ? metric_of(si, metrics[m], field) : -1.0;
}

/* A sector line of the report at exit, "<kernel> <file>:<line> ld|st
 * requests=<R> sectors=<S> ideal=<I> ...", into out->line (path left out). */
static void add_source_line(const char *p, const char *filter, const regex_t *re, cml_ncu_counts *out)
{
    char kernel[64], where[400], op[3];
    long long r, s, i;
    if (sscanf(p, SECTORS_TAG "%63s %399s %2s requests=%lld sectors=%lld ideal=%lld", kernel, where, op, &r, &s,
               &i) != 6 ||
        strcmp(kernel, "launch") == 0 || strcmp(where, "total") == 0 || !kernel_wanted(kernel, filter, re) ||
        out->nlines == CML_NCU_MAX_LINES)
        return;
    cml_ncu_line *l = &out->line[out->nlines++];
    const char *base = strrchr(where, '/');
    snprintf(l->kernel, sizeof l->kernel, "%s", kernel);
    snprintf(l->where, sizeof l->where, "%.159s", base != NULL ? base + 1 : where);
    l->store = strcmp(op, "st") == 0;
    l->requests = (double)r, l->sectors = (double)s, l->ideal = (double)i;
}

/* Adds the matching lines of text to *out: one launch per line (per_launch)
 * or, for the totals, one launch for all of them together; and the
 * sector counts' source lines. */
static void parse_lines(const stand_in *si, const char *text, int per_launch, const char *const *metrics,
                        int nmetrics, const char *filter, cml_ncu_counts *out)
{
    regex_t re;
    int have_re =
        filter && strncmp(filter, "regex:", 6) == 0 && regcomp(&re, filter + 6, REG_EXTENDED | REG_NOSUB) == 0;
    const char *form = per_launch ? si->launch_form : si->total_form;
    long long sum[6] = {0};
    char first[64] = "";
    int nth = 0;  /* this kind's launches so far */
    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        char kernel[64];
        long long f[6] = {0};
        if (si->nfields == 6 && per_launch)
            add_source_line(p, filter, have_re ? &re : NULL, out);
        if (sscanf(p, form, kernel, &f[0], &f[1], &f[2], &f[3], &f[4], &f[5]) != 1 + si->nfields ||
            !kernel_wanted(kernel, filter, have_re ? &re : NULL))
            continue;
        if (per_launch) {
            add_launch(si, nth++, kernel, f, metrics, nmetrics, out);
            continue;
        }
        if (first[0] == '\0')
            snprintf(first, sizeof first, "%s", kernel);
        for (int k = 0; k < 6; ++k)
            sum[k] += f[k];
    }
    if (!per_launch && first[0])
        add_launch(si, out->nkernels, first, sum, metrics, nmetrics, out);
    if (have_re)
        regfree(&re);
    out->nmetrics = nmetrics;
}

/* The checks' lines of one run of exe with args (stderr; stdout dropped):
 * the stand-ins of the bits of `kinds`. */
static char *check_run(unsigned kinds, const char *exe, const char *const *args, cml_ncu_counts *out)
{
    char cmd[8192] = "CML_CPU_CHECK=", what[64] = "";
    for (int k = 0, n = 0; k < N_STAND_INS; ++k)
        if (kinds & (1u << k)) {
            snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), "%s%s", n ? "," : "", stand_ins[k].check);
            snprintf(what + strlen(what), sizeof what - strlen(what), "%s%s", n++ ? " and " : "the CPU path's ",
                     stand_ins[k].what);
        }
    if (!append_program(cmd, sizeof cmd, exe, args)) {
        snprintf(out->reason, sizeof out->reason, "the command line is too long");
        return NULL;
    }
    strncat(cmd, " 2>&1 >/dev/null", sizeof cmd - strlen(cmd) - 1);
    int status = 0;
    return run_and_read(cmd, &status, out, what);
}

/* The stand-ins that count the metrics, a bit each; none: the bank run
 * (every value -1). */
static unsigned kinds_for(const char *const *metrics, int nmetrics)
{
    unsigned kinds = 0;
    for (int k = 0; k < N_STAND_INS; ++k)
        for (int m = 0; m < nmetrics; ++m)
            if (counts_metric(&stand_ins[k], metrics[m]))
                kinds |= 1u << k;
    return kinds != 0 ? kinds : 1u << BANKS_KIND;
}

int cml_ncu_collect(const char *exe, const char *const *args, const char *const *metrics, int nmetrics,
                    const char *filter, cml_ncu_counts *out)
{
    if (!start_counts(out, nmetrics))
        return 0;
    unsigned kinds = kinds_for(metrics, nmetrics);
    char *text = check_run(kinds, exe, args, out);
    if (text == NULL)
        return 0;
    const stand_in *si = &stand_ins[__builtin_ctz(kinds)];  /* the first kind: the messages' */
    int any_launch = 0;
    for (int k = 0; k < N_STAND_INS; ++k) {
        char launch_tag[64];
        snprintf(launch_tag, sizeof launch_tag, "%slaunch ", stand_ins[k].tag);
        if ((kinds & (1u << k)) && strstr(text, launch_tag) != NULL) {
            parse_lines(&stand_ins[k], text, 1, metrics, nmetrics, filter, out);
            any_launch = 1;
        }
    }
    if (!any_launch && (kinds & (kinds - 1)) == 0) {
        /* Totals only (one kind): each step of the "--step" list alone. */
        const char *one[32];
        int n = 0, at = -1;
        for (int k = 0; args && args[k] && n < 31; ++k) {
            if (at < 0 && strcmp(args[k], "--step") == 0 && args[k + 1])
                at = n + 1;
            one[n++] = args[k];
        }
        one[n] = NULL;
        char list[128] = "";
        if (at >= 0 && strchr(one[at], ',') != NULL)
            snprintf(list, sizeof list, "%s", one[at]);
        else  /* one step (or all of them as one): this run is it */
            at = -1, parse_lines(si, text, 0, metrics, nmetrics, filter, out);
        for (char *save = NULL, *step = at >= 0 ? strtok_r(list, ",", &save) : NULL; step;
             step = strtok_r(NULL, ",", &save)) {
            one[at] = step;
            char *part = check_run(kinds, exe, one, out);
            if (part == NULL)
                break;
            parse_lines(si, part, 0, metrics, nmetrics, filter, out);
            free(part);
        }
    }
    /* A build without a bank model says so instead of counting: that is the reason. */
    const char *no_model = strstr(text, BANKS_TAG "no bank model");
    if (out->nkernels == 0 && out->reason[0] == '\0' && no_model != NULL) {
        const char *why = no_model + strlen(BANKS_TAG);
        snprintf(out->reason, sizeof out->reason, "%.*s", (int)strcspn(why, "\n"), why);
    }
    free(text);
    if (out->nkernels > 0)
        out->available = 1;
    else if (out->reason[0] == '\0')
        snprintf(out->reason, sizeof out->reason,
                 "the CPU path's %s (CML_CPU_CHECK=%s) reported no launch of the lab's kernels", si->what,
                 (kinds & (kinds - 1)) == 0 ? si->check : "sectors,banks");
    return out->available;
}
#else
/* The GPU this process's ncu run profiles: the one it shares (its probe's),
 * else its current device's; "" where none is known. */
static void profiled_gpu(char *uuid, size_t cap)
{
    snprintf(uuid, cap, "%s", cml_gpu_shared());
    if (uuid[0] != '\0')
        return;
    int dev = 0;
    struct cudaDeviceProp p;
    if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&p, dev) == cudaSuccess)
        cml_gpu_uuid_text((const unsigned char *)p.uuid.bytes, uuid, cap);
    else
        (void)cudaGetLastError();   /* no GPU: ncu will say so */
}

int cml_ncu_collect(const char *exe, const char *const *args, const char *const *metrics, int nmetrics,
                    const char *filter, cml_ncu_counts *out)
{
    if (!start_counts(out, nmetrics))
        return 0;
    const char *ncu = getenv("CML_NCU");
    if (ncu == NULL || ncu[0] == '\0')
        ncu = "ncu";

    char cmd[8192] = "CML_GPU_HELD=1";  /* the program it profiles takes no share: this run holds the GPU (below) */
    char list[4096] = "";
    int ok = 1;
    for (int k = 0; k < nmetrics && ok; ++k) {
        size_t at = strlen(list);
        ok = snprintf(list + at, sizeof list - at, "%s%s", k ? "," : "", metrics[k]) < (int)(sizeof list - at);
    }
    ok = ok && append_quoted(cmd, sizeof cmd, ncu);
    const char *fixed[] = {"--clock-control", "none", "--csv", "--print-units", "base", "--metrics", list};
    for (size_t k = 0; ok && k < sizeof fixed / sizeof fixed[0]; ++k)
        ok = append_quoted(cmd, sizeof cmd, fixed[k]);
    if (ok && filter) {
        ok = append_quoted(cmd, sizeof cmd, "--kernel-name") && append_quoted(cmd, sizeof cmd, filter);
    }
    ok = ok && append_program(cmd, sizeof cmd, exe, args);
    if (!ok) {
        snprintf(out->reason, sizeof out->reason, "the ncu command line is too long");
        return 0;
    }
    strncat(cmd, " 2>&1", sizeof cmd - strlen(cmd) - 1);

    /* Two ncu runs on one GPU, or one beside other GPU work, failed
     * ("LaunchFailed", cml_gpu_turn.h): the run has the GPU alone among
     * the kit's processes, and the program it profiles takes nothing. */
    int status = 0;
    char gpu[64];
    profiled_gpu(gpu, sizeof gpu);
    cml_gpu_alone_hold alone = {-1, -1, 0};
    if (gpu[0] != '\0' && !cml_gpu_alone(gpu, &alone, out->reason, sizeof out->reason))
        return 0;
    char *text = run_and_read(cmd, &status, out, ncu);
    cml_gpu_alone_end(&alone);
    if (text == NULL)
        return 0;

    /* A run that reported an error or failed measured nothing, whatever
     * rows it printed before: its launches are not all there. */
    int failed = strstr(text, "==ERROR==") != NULL || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    int found = cml_ncu_parse_csv(text, metrics, nmetrics, out);
    if (found > 0 && !failed) {
        out->available = 1;
    } else if (found > 0) {
        out->nkernels = 0;
        char said[160];
        errors_said(text, said, sizeof said);
        snprintf(out->reason, sizeof out->reason, "ncu failed after profiling %d launch%s (%s; exit status %d)",
                 found, found == 1 ? "" : "es", said[0] ? said : "it printed no error",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    } else if (first_line_with(text, "ERR_NVGPUCTRPERM", out->reason, sizeof out->reason)) {
        /* The usual refusal: counters are reserved for admin users. */
    } else if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
        snprintf(out->reason, sizeof out->reason, "Nsight Compute (%s) was not found; set CML_NCU to its path", ncu);
    } else {
        errors_said(text, out->reason, sizeof out->reason);
        if (out->reason[0] == '\0')
            snprintf(out->reason, sizeof out->reason, "ncu profiled no kernel (exit status %d)", status);
    }
    free(text);
    return out->available;
}
#endif
