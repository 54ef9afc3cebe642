/* sectors_agree: a lab's reference steps measured twice, on the GPU by Nsight
 * Compute and on the CPU path by the runtime's sector counts, must give the
 * same global-memory sectors per request per kernel (CTest
 * NN.reference.sectors_agree, label gpu; cmake/Kit.cmake registers it).
 *
 *   kit_sectors_agree GPU_RUNNER CPU_RUNNER [--bound STEPS:PERCENT:WHY]...
 *                     [--markdown FILE [--lab NAME] [--note TEXT]] -- ARGS...
 *
 * Runs `RUNNER --sectors --json ARGS` with each runner (every step, the same
 * sizes), sums each step's launches per kernel (its name without template
 * arguments: nvcc's and g++'s demangled arguments are written differently)
 * and direction, and compares sectors per request: exactly equal, or, for
 * the steps of a --bound (e.g. 7,8:1:why), within PERCENT of the GPU's,
 * for the reason given. A line per kernel and direction, then a verdict.
 * The runners' shared-memory bank conflicts (ld_bank_conflicts,
 * st_bank_conflicts) are summed the same way and reported beside them
 * where either side has some, never compared: the CPU path's bank model is
 * not a GPU's (a GPU counts conflicts of its own where the model says 0).
 *
 * --markdown FILE appends the lab's section to FILE (a heading, NAME or the
 * runners' "lab", the command, TEXT, then a table a row per step, kernel
 * and direction: sectors per request on each side, the requests, the
 * agreement and the bank conflicts of each side), or the reason there is no
 * table (a skip, a runner that failed); tools/gpu-verify access makes its
 * page of every lab from these sections.
 *
 * Exit: 0 agree; 1 a difference, a runner that failed or a count missing;
 * 77 (CTest's skip) with the reason when there is nothing to measure on: no
 * CUDA build of the runner, no GPU (the runner's --probe says 77), or no
 * Nsight Compute. A GPU that is there but fails is an error, not a skip. */
#define _POSIX_C_SOURCE 200809L
#include "cml/cml_ncu.h" /* cml_run_read */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

enum { EXIT_AGREE = 0, EXIT_DIFFER = 1, EXIT_SKIP = 77 };
enum { MAX_ENTRIES = 256, MAX_BOUNDS = 8 };

typedef struct entry {       /* one step's kernel, launches summed */
    int step;
    char ident[64], kernel[96];
    double requests[2], sectors[2]; /* ld, st; -1: a launch had no value */
    double conflicts[2];            /* shared-memory bank conflicts, ld, st; -1: not measured */
} entry;

typedef struct side {
    const char *what;        /* "GPU", "CPU" */
    entry e[MAX_ENTRIES];
    int n;
    char unavailable[512];   /* the first step's reason, when one was not measured */
    char lab[64];            /* the JSON's "lab" */
} side;

typedef struct bound {
    unsigned steps;          /* bit s-1 for step s */
    double percent;
    const char *why;
} bound;

/* Runs cmd (stderr kept apart) and returns its stdout (malloc'd); *status
 * gets the exit status, -1 when it did not exit. */
static char *run(const char *cmd, int *status)
{
    int ws = -1;
    char *text = cml_run_read(cmd, &ws);
    *status = ws != -1 && WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    return text;
}

/* The command line: runner and words, each in single quotes. */
static void command(char *cmd, size_t cap, const char *runner, const char *const *words, int nwords, const char *tail)
{
    size_t n = (size_t)snprintf(cmd, cap, "'%s'", runner);
    for (int k = 0; k < nwords && n < cap; ++k)
        n += (size_t)snprintf(cmd + n, cap - n, " '%s'", words[k]);
    if (n < cap)
        snprintf(cmd + n, cap - n, "%s", tail);
}

/* A JSON string value after `"key": "` in line, into out. */
static void string_after(const char *line, const char *key, char *out, size_t cap)
{
    out[0] = '\0';
    const char *p = strstr(line, key);
    if (p == NULL || (p = strchr(p + strlen(key), '"')) == NULL)
        return;
    size_t o = 0;
    for (++p; *p && *p != '"' && o + 1 < cap; ++p) {
        if (*p == '\\' && p[1])
            ++p;
        out[o++] = *p;
    }
    out[o] = '\0';
}

/* A number after `"key": ` in line; -1 for null or none. */
static double number_after(const char *line, const char *key)
{
    const char *p = strstr(line, key);
    if (p == NULL)
        return -1.0;
    p += strlen(key);
    while (*p == ' ' || *p == ':' || *p == '"')
        ++p;
    char *end;
    double v = strtod(p, &end);
    return end == p ? -1.0 : v;
}

static void add(double *sum, double v) { *sum = *sum < 0.0 || v < 0.0 ? -1.0 : *sum + v; }

/* A launch's line of the JSON into s: summed into its step and kernel. */
static int add_launch(const char *line, side *s)
{
    int step = (int)number_after(line, "\"step\":");
    char ident[64], kernel[96];
    string_after(line, "\"ident\":", ident, sizeof ident);
    string_after(line, "\"kernel\":", kernel, sizeof kernel);
    kernel[strcspn(kernel, "<")] = '\0'; /* reduce_kernel6<512, int> from ncu, <512u,int> from g++ */
    int k = 0;
    while (k < s->n && !(s->e[k].step == step && strcmp(s->e[k].kernel, kernel) == 0))
        ++k;
    if (k == s->n) {
        if (s->n == MAX_ENTRIES)
            return 0;
        memset(&s->e[k], 0, sizeof s->e[k]);
        s->e[k].step = step;
        snprintf(s->e[k].ident, sizeof s->e[k].ident, "%s", ident);
        snprintf(s->e[k].kernel, sizeof s->e[k].kernel, "%s", kernel);
        ++s->n;
    }
    add(&s->e[k].requests[0], number_after(line, "\"ld_requests\":"));
    add(&s->e[k].sectors[0], number_after(line, "\"ld_sectors\":"));
    add(&s->e[k].requests[1], number_after(line, "\"st_requests\":"));
    add(&s->e[k].sectors[1], number_after(line, "\"st_sectors\":"));
    add(&s->e[k].conflicts[0], number_after(line, "\"ld_bank_conflicts\":"));
    add(&s->e[k].conflicts[1], number_after(line, "\"st_bank_conflicts\":"));
    return 1;
}

/* The runner's --sectors JSON, as the runner library prints it (a line
 * opens each array, then one step, launch or source line a line), into s. */
static int read_json(char *text, side *s)
{
    enum { NONE, STEPS, LAUNCHES, LINES } in = NONE;
    int seen = 0;
    for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        if (s->lab[0] == '\0' && strncmp(line, "{\"lab\":", 7) == 0)
            string_after(line, "\"lab\":", s->lab, sizeof s->lab);
        if (strstr(line, "\"steps\": [") != NULL)
            in = STEPS, seen |= 1;
        else if (strstr(line, "\"launches\": [") != NULL)
            in = LAUNCHES, seen |= 2;
        else if (strstr(line, "\"lines\": [") != NULL)
            in = LINES;
        if (strncmp(line, "  {\"step\":", 10) != 0)
            continue;
        if (in == STEPS && strstr(line, "\"available\": false") != NULL && s->unavailable[0] == '\0') {
            char reason[400];
            string_after(line, "\"reason\":", reason, sizeof reason);
            snprintf(s->unavailable, sizeof s->unavailable, "step %d: %s", (int)number_after(line, "\"step\":"),
                     reason);
        } else if (in == LAUNCHES && !add_launch(line, s)) {
            return 0;
        }
    }
    return seen == 3;
}

/* What went wrong, as printed, kept for the Markdown section (the first
 * 1 KiB of it). */
static char told[1024];

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    size_t n = strlen(told);
    if (n + 1 < sizeof told) {
        va_start(ap, fmt);
        vsnprintf(told + n, sizeof told - n, fmt, ap);
        va_end(ap);
    }
}

/* One runner's measurements; 0 with the problem printed when it failed. */
static int measure(const char *runner, const char *const *args, int nargs, side *s)
{
    char cmd[4096];
    const char *words[40] = {"--sectors", "--json"};
    int n = 2;
    for (int k = 0; k < nargs && n < 40; ++k)
        words[n++] = args[k];
    command(cmd, sizeof cmd, runner, words, n, "");
    int status = 0;
    char *text = run(cmd, &status), *shown = text ? strdup(text) : NULL;
    if (text == NULL || !read_json(text, s)) {
        say("%s: %s gave no --sectors JSON (exit %d):\n%s\n", s->what, cmd, status, shown ? shown : "");
        free(text);
        free(shown);
        return 0;
    }
    free(text);
    free(shown);
    if (status != 0) {
        say("%s: %s exited %d (a step's check failed?)\n", s->what, cmd, status);
        return 0;
    }
    return 1;
}

static double ratio(double sectors, double requests) { return requests > 0.0 ? sectors / requests : 0.0; }

static const bound *bound_of(const bound *b, int nb, int step)
{
    for (int k = 0; k < nb; ++k)
        if (b[k].steps & (1u << (step - 1)))
            return &b[k];
    return NULL;
}

/* A count as the table shows it: "24,864", or "–" when not measured. */
static const char *count_text(double v, char *buf, size_t cap)
{
    if (v < 0.0) {
        snprintf(buf, cap, "–");
        return buf;
    }
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%.0f", v), o = 0;
    for (int k = 0; k < n && (size_t)o + 2 < cap; ++k) {
        if (k > 0 && (n - k) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[k];
    }
    buf[o] = '\0';
    return buf;
}

/* One row of the Markdown table (md may be NULL: no table). c NULL: the
 * kernel did not run on the CPU path; g NULL: not on the GPU. */
static void md_row(FILE *md, const entry *g, const entry *c, int d, const char *agreement)
{
    if (md == NULL)
        return;
    static const char *const dir[2] = {"ld", "st"};
    const entry *e = g != NULL ? g : c;
    char rg[32] = "–", rc[32] = "–", qg[32], qc[32], bg[32], bc[32];
    if (g != NULL && g->requests[d] > 0.0 && g->sectors[d] >= 0.0)
        snprintf(rg, sizeof rg, "%.4f", ratio(g->sectors[d], g->requests[d]));
    if (c != NULL && c->requests[d] > 0.0 && c->sectors[d] >= 0.0)
        snprintf(rc, sizeof rc, "%.4f", ratio(c->sectors[d], c->requests[d]));
    fprintf(md, "| %d | %s | `%s` | %s | %s | %s | %s / %s | %s | %s / %s |\n", e->step, e->ident, e->kernel, dir[d],
            rg, rc, count_text(g ? g->requests[d] : -1.0, qg, sizeof qg),
            count_text(c ? c->requests[d] : -1.0, qc, sizeof qc), agreement,
            count_text(g ? g->conflicts[d] : -1.0, bg, sizeof bg), count_text(c ? c->conflicts[d] : -1.0, bc, sizeof bc));
}

/* The bank conflicts of a kernel and direction, where either side has
 * some: reported, not compared. */
static void print_conflicts(const entry *g, const entry *c, int d)
{
    static const char *const dir[2] = {"ld", "st"};
    if (g->conflicts[d] <= 0.0 && c->conflicts[d] <= 0.0)
        return;
    char bg[32], bc[32];
    printf("step %d %s: %s %s: shared-memory bank conflicts GPU %s, CPU path %s (reported, not compared)\n", g->step,
           g->ident, g->kernel, dir[d], count_text(g->conflicts[d], bg, sizeof bg),
           count_text(c->conflicts[d], bc, sizeof bc));
}

/* Compares every kernel and direction; prints a line each (and a row each
 * into md, when not NULL). Returns the problems. */
static int compare(const side *gpu, const side *cpu, const bound *b, int nb, FILE *md)
{
    static const char *const dir[2] = {"ld", "st"};
    int problems = 0;
    for (int k = 0; k < gpu->n; ++k) {
        const entry *g = &gpu->e[k], *c = NULL;
        for (int j = 0; j < cpu->n && c == NULL; ++j)
            if (cpu->e[j].step == g->step && strcmp(cpu->e[j].kernel, g->kernel) == 0)
                c = &cpu->e[j];
        if (c == NULL) {
            printf("step %d %s: %s: launched on the GPU, not on the CPU path\n", g->step, g->ident, g->kernel);
            for (int d = 0; d < 2; ++d)
                md_row(md, g, NULL, d, "differs: not launched on the CPU path");
            ++problems;
            continue;
        }
        const bound *bd = bound_of(b, nb, g->step);
        for (int d = 0; d < 2; ++d) {
            if (g->requests[d] < 0.0 || c->requests[d] < 0.0 || g->sectors[d] < 0.0 || c->sectors[d] < 0.0) {
                printf("step %d %s: %s %s: a count is missing (GPU %g/%g, CPU %g/%g)\n", g->step, g->ident,
                       g->kernel, dir[d], g->sectors[d], g->requests[d], c->sectors[d], c->requests[d]);
                md_row(md, g, c, d, "differs: a count is missing");
                ++problems;
                continue;
            }
            if (g->requests[d] == 0.0 && c->requests[d] == 0.0) {
                if (g->conflicts[d] > 0.0 || c->conflicts[d] > 0.0)
                    md_row(md, g, c, d, "no global accesses");
                print_conflicts(g, c, d);
                continue;
            }
            double rg = ratio(g->sectors[d], g->requests[d]), rc = ratio(c->sectors[d], c->requests[d]);
            /* exact: integer counts cross-multiplied, no rounding */
            int same = g->sectors[d] * c->requests[d] == c->sectors[d] * g->requests[d] &&
                       (g->requests[d] > 0.0) == (c->requests[d] > 0.0);
            double off = rg > 0.0 ? 100.0 * (rc - rg) / rg : 100.0;
            int ok = same || (bd != NULL && off <= bd->percent && off >= -bd->percent);
            printf("step %d %s: %s %s: GPU %.4f sectors/request (%.0f requests, %.0f sectors), CPU path %.4f (%.0f, "
                   "%.0f): %s",
                   g->step, g->ident, g->kernel, dir[d], rg, g->requests[d], g->sectors[d], rc, c->requests[d],
                   c->sectors[d], same ? "the same" : ok ? "within" : "DIFFERENT");
            if (!same && bd != NULL)
                printf(" %+.2f%%, bound %.0f%% (%s)", off, bd->percent, bd->why);
            printf("\n");
            print_conflicts(g, c, d);
            char agreement[400];
            if (same)
                snprintf(agreement, sizeof agreement, "the same");
            else if (ok)
                snprintf(agreement, sizeof agreement, "within %g%% (%+.2f%%): %s", bd->percent, off, bd->why);
            else
                snprintf(agreement, sizeof agreement, "differs (%+.2f%%)", off);
            md_row(md, g, c, d, agreement);
            problems += !ok;
        }
    }
    for (int j = 0; j < cpu->n; ++j) {
        int found = 0;
        for (int k = 0; k < gpu->n && !found; ++k)
            found = gpu->e[k].step == cpu->e[j].step && strcmp(gpu->e[k].kernel, cpu->e[j].kernel) == 0;
        if (!found) {
            printf("step %d %s: %s: launched on the CPU path, not on the GPU\n", cpu->e[j].step, cpu->e[j].ident,
                   cpu->e[j].kernel);
            for (int d = 0; d < 2; ++d)
                md_row(md, NULL, &cpu->e[j], d, "differs: not launched on the GPU");
            ++problems;
        }
    }
    return problems;
}

static int usage(void)
{
    fprintf(stderr, "usage: kit_sectors_agree GPU_RUNNER CPU_RUNNER [--bound STEPS:PERCENT:WHY]...\n"
                    "                         [--markdown FILE [--lab NAME] [--note TEXT]] -- ARGS...\n");
    return EXIT_DIFFER;
}

/* What --markdown writes. */
typedef struct page {
    const char *path, *lab, *note;
    const char *gpu_runner, *cpu_runner;
    const char *const *args;
    int nargs;
} page;

/* Appends the lab's section to the page: the table (rows, NULL when there
 * is none) and the verdict, or what was told instead. Returns rc, or 1
 * when the file cannot be written. */
static int write_section(const page *pg, const char *lab, const char *rows, const char *verdict, int rc)
{
    if (pg->path == NULL)
        return rc;
    FILE *f = fopen(pg->path, "a");
    if (f == NULL) {
        perror(pg->path);
        return EXIT_DIFFER;
    }
    const char *base_g = strrchr(pg->gpu_runner, '/'), *base_c = strrchr(pg->cpu_runner, '/');
    base_g = base_g ? base_g + 1 : pg->gpu_runner;
    base_c = base_c ? base_c + 1 : pg->cpu_runner;
    fprintf(f, "\n## %s\n\n", pg->lab ? pg->lab : lab);
    if (base_g[0] != '\0')
        fprintf(f, "`%s --sectors` (Nsight Compute) against ", base_g);
    fprintf(f, "`%s --sectors` (the CPU path), every step", base_c);
    if (pg->nargs > 0) {
        fprintf(f, ", at `");
        for (int k = 0; k < pg->nargs; ++k)
            fprintf(f, "%s%s", k ? " " : "", pg->args[k]);
        fprintf(f, "`");
    }
    fprintf(f, ".%s%s\n\n", pg->note ? " " : "", pg->note ? pg->note : "");
    if (rows != NULL && rows[0] != '\0') {
        fprintf(f, "| step | ident | kernel | direction | GPU sectors/request | CPU path sectors/request | "
                   "requests GPU / CPU path | agreement | bank conflicts GPU / CPU path |\n"
                   "|---:|---|---|---|---:|---:|---:|---|---:|\n%s\n",
                rows);
    }
    if (told[0] != '\0') {
        fprintf(f, "```\n%s", told);
        fprintf(f, "%s```\n\n", told[strlen(told) - 1] == '\n' ? "" : "\n");
    }
    fprintf(f, "%s\n", verdict);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        perror(pg->path);
        return EXIT_DIFFER;
    }
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return usage();
    const char *gpu_runner = argv[1], *cpu_runner = argv[2];
    bound b[MAX_BOUNDS];
    page pg = {NULL, NULL, NULL, gpu_runner, cpu_runner, NULL, 0};
    int nb = 0, at = 3;
    for (; at < argc && strcmp(argv[at], "--") != 0; ++at) {
        if (at + 1 >= argc)
            return usage();
        if (strcmp(argv[at], "--markdown") == 0 || strcmp(argv[at], "--lab") == 0 || strcmp(argv[at], "--note") == 0) {
            const char **to = argv[at][2] == 'm' ? &pg.path : argv[at][2] == 'l' ? &pg.lab : &pg.note;
            *to = argv[++at];
            continue;
        }
        char *steps = argv[at + 1], *colon, *end;
        if (strcmp(argv[at], "--bound") != 0 || nb == MAX_BOUNDS || (colon = strchr(steps, ':')) == NULL)
            return usage();
        b[nb].steps = 0;
        for (char *p = steps; p < colon; p = end + (*end == ',')) {
            long s = strtol(p, &end, 10);
            if (end == p || s < 1 || s > 31)
                return usage();
            b[nb].steps |= 1u << (s - 1);
        }
        b[nb].percent = strtod(colon + 1, &end);
        b[nb].why = *end == ':' ? end + 1 : "";
        ++nb;
        ++at;
    }
    if ((pg.lab != NULL || pg.note != NULL) && pg.path == NULL)
        return usage();
    const char *const *args = (const char *const *)argv + at + (at < argc);
    int nargs = argc - at - (at < argc);
    pg.args = args, pg.nargs = nargs;
    const char *cpu_base = strrchr(cpu_runner, '/');
    cpu_base = cpu_base ? cpu_base + 1 : cpu_runner;

    if (gpu_runner[0] == '\0') {
        say("no CUDA build of the lab's runner here (configured without nvcc or with KIT_CUDA=OFF): nothing "
            "to measure on a GPU\n");
        return write_section(&pg, cpu_base, NULL, "Not measured (skipped).", EXIT_SKIP);
    }
    char cmd[4096];
    const char *probe[] = {"--probe"};
    command(cmd, sizeof cmd, gpu_runner, probe, 1, " 2>&1");
    int status = 0;
    char *said = run(cmd, &status);
    if (status == EXIT_SKIP) {
        say("%s", said ? said : "no usable GPU\n");
        free(said);
        return write_section(&pg, cpu_base, NULL, "Not measured (skipped).", EXIT_SKIP);
    }
    if (status != 0) {
        say("%s --probe failed (exit %d): a GPU is there but not usable:\n%s", gpu_runner, status, said ? said : "");
        free(said);
        return write_section(&pg, cpu_base, NULL, "Not measured: the GPU failed.", EXIT_DIFFER);
    }
    free(said);

    static side gpu = {"GPU", {{0}}, 0, "", ""}, cpu = {"CPU path", {{0}}, 0, "", ""};
    if (!measure(gpu_runner, args, nargs, &gpu))
        return write_section(&pg, gpu.lab[0] ? gpu.lab : cpu_base, NULL, "Not measured: the GPU's runner failed.",
                             EXIT_DIFFER);
    if (strstr(gpu.unavailable, "was not found") != NULL) {
        say("Nsight Compute was not found: %s\n", gpu.unavailable);
        return write_section(&pg, gpu.lab[0] ? gpu.lab : cpu_base, NULL, "Not measured (skipped).", EXIT_SKIP);
    }
    const char *lab = gpu.lab[0] ? gpu.lab : cpu_base;
    if (!measure(cpu_runner, args, nargs, &cpu))
        return write_section(&pg, lab, NULL, "Not measured: the CPU path's runner failed.", EXIT_DIFFER);
    int problems = 0;
    for (side *s = &gpu; s != NULL; s = s == &gpu ? &cpu : NULL)
        if (s->unavailable[0] != '\0') {
            say("%s: not measured: %s\n", s->what, s->unavailable);
            ++problems;
        }
    if (gpu.n == 0) {
        say("the GPU's ncu reported no launch of the lab's kernels\n");
        ++problems;
    }
    char *rows = NULL;
    size_t rows_len = 0;
    FILE *md = pg.path != NULL ? open_memstream(&rows, &rows_len) : NULL;
    problems += compare(&gpu, &cpu, b, nb, md);
    if (md != NULL)
        fclose(md);
    unsigned steps = 0;
    for (int k = 0; k < gpu.n; ++k)
        steps |= 1u << (gpu.e[k].step - 1);
    char verdict[300];
    snprintf(verdict, sizeof verdict, "%s: %d kernels of %d steps compared (each one's launches summed): %s",
             problems ? "DIFFER" : "AGREE", gpu.n, __builtin_popcount(steps),
             problems ? "see the lines above" : "the same sectors per request, or within the stated bounds");
    printf("%s\n", verdict);
    char shown[400];
    snprintf(shown, sizeof shown, "%s: %d kernels of %d steps compared, each one's launches summed%s.",
             problems ? "**Differ**" : "**Agree**", gpu.n, __builtin_popcount(steps),
             problems ? "" : ": the same sectors per request, or within the stated bounds");
    int rc = write_section(&pg, lab, rows, shown, problems ? EXIT_DIFFER : EXIT_AGREE);
    free(rows);
    return rc;
}
