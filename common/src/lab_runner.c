/* lab_runner.c: what every lab runner does the same way (cml_lab_runner.h). */
#define _POSIX_C_SOURCE 200809L
#include "cml/cml_lab_runner.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cml/cml_access_picture.h"
#include "cml/cml_args.h"
#include "cml/cml_check.h"
#include "cml/cml_rng.h"
#include "cml/cml_timing.h"

#define OPT_WIDTH 15  /* "--markdown FILE": the help's option column */

static const cml_lab *usage_lab;  /* for cml_runner_args.usage, which takes only a FILE */
static const char *usage_prog;

static void usage(FILE *out)
{
    fprintf(out, "usage: %s %s\n", usage_prog, usage_lab->usage);
}

void cml_lab_say(const cml_lab_run *r, const char *fmt, ...)
{
    fflush(stdout);  /* the table so far first: a message never splits a row */
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", r->args.prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    fflush(stderr);
}

int cml_lab_selected(const cml_lab_run *r, int step)
{
    return step >= 1 && step <= r->lab->nsteps && (r->args.steps & (1u << (step - 1))) != 0;
}

const char *cml_lab_ident(const cml_lab_run *r, int step)
{
    return step >= 1 && step <= r->lab->nsteps ? r->lab->steps[step - 1].ident : "?";
}

void cml_lab_row_error(cml_row *row, const char *what, cudaError_t err)
{
    row->status = CML_ROW_ERROR;
    snprintf(row->note, sizeof row->note, "%s: %s: %s", what, cudaGetErrorName(err), cudaGetErrorString(err));
}

const char *cml_with_commas(double v, char *buf, size_t len)
{
    char digits[32];
    snprintf(digits, sizeof digits, "%.0f", v);
    size_t n = strlen(digits), o = 0;
    for (size_t i = 0; i < n && o + 2 < len; ++i) {
        if (i > 0 && digits[i - 1] != '-' && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    if (len > 0)
        buf[o < len ? o : len - 1] = '\0';
    return buf;
}

/* ------------------------------------------------------------ help */

/* Timed runs per kernel. On the CPU path (CML_CPU_BACKEND: every CUDA
 * thread emulated, each run seconds long, and the times say nothing about a
 * GPU) a few, whatever a lab's GPU default. */
#define CPU_PATH_REPEAT 3

static int default_repeat(const cml_lab *lab)
{
    int gpu = lab->default_repeat > 0 ? lab->default_repeat : 50;
#ifdef CML_CPU_BACKEND
    return gpu < CPU_PATH_REPEAT ? gpu : CPU_PATH_REPEAT;
#else
    return gpu;
#endif
}

/* "  FLAG            TEXT", a '\n' in text continuing under its start. */
static void option_line(const char *flag, const char *text)
{
    if (strlen(flag) > OPT_WIDTH)
        printf("  %s\n%*s", flag, OPT_WIDTH + 3, "");  /* too long for the column: the text below it */
    else
        printf("  %-*s ", OPT_WIDTH, flag);
    for (const char *p = text; *p; ++p) {
        putchar(*p);
        if (*p == '\n')
            printf("%*s", OPT_WIDTH + 3, "");
    }
    putchar('\n');
}

static void step_line(const cml_lab *lab, const cml_lab_step *s, int list)
{
    int w = lab->name_width > 0 ? lab->name_width : 16;
    if (list && lab->list_files)
        printf("%d\t%s\t%s\t%s\n", s->num, s->ident, s->file, s->title);
    else if (list)
        printf("%d\t%s\t%s\n", s->num, s->ident, s->title);
    else if (lab->list_files)
        printf("  %d  %-*s %-*s %s\n", s->num, w, s->ident, w, s->file, s->title);
    else
        printf("  %d  %-*s %s\n", s->num, w, s->ident, s->title);
}

static void help(const cml_lab *lab)
{
    usage(stdout);
    printf("\n%s\n\n", lab->about);
#ifdef CML_CPU_BACKEND
    printf("This is the CPU path (%s_cpu): every CUDA thread runs emulated on the CPU,\n"
           "so the default sizes and repeats are small, every time is emulated, and\n"
           "nothing is compared with a GPU's limits. On a GPU, run %s.\n\n",
           lab->prog, lab->prog);
#endif
    option_line("--step S", lab->step_help);
    for (int k = 0; k < lab->noptions; ++k)
        option_line(lab->options[k].flag, lab->options[k].help);
    char repeat[128];
#ifdef CML_CPU_BACKEND   /* a lab's own text names its GPU default */
    snprintf(repeat, sizeof repeat, "timed runs per kernel (default %d on the CPU path:\nits times are emulated)",
             default_repeat(lab));
    option_line("--repeat N", repeat);
#else
    snprintf(repeat, sizeof repeat, "timed runs per kernel (default %d)", default_repeat(lab));
    option_line("--repeat N", lab->repeat_help ? lab->repeat_help : repeat);
#endif
    option_line("--json", lab->json_help ? lab->json_help : "print the results as JSON instead of the table");
    option_line("--markdown FILE", "write the results as Markdown: a page, or the marked\n"
                                   "region of a handout (repeat for up to 4 files)");
    option_line("--check-only", lab->check_only_help);
    option_line("--check-every-run", "poison before and check after every timed run too\n"
                                     "(outside the timing; slower)");
    if (lab->counters) {
        option_line("--counters", lab->counters_help);
        option_line("--no-counters", lab->no_counters_help);
    }
#ifdef CML_CPU_BACKEND
    option_line("--sectors", "check the steps, then print each launch's global loads and\n"
                             "stores: requests, 32-byte sectors, sectors per request, its\n"
                             "shared-memory bank conflicts, and per source line the ideal\n"
                             "(emulated: CML_CPU_CHECK=sectors,banks)");
#else
    option_line("--sectors", "check the steps, then print each launch's global loads and\n"
                             "stores: requests, 32-byte sectors and sectors per request,\n"
                             "and its shared-memory bank conflicts, read by Nsight Compute (ncu)");
#endif
#ifdef CML_CPU_BACKEND
    option_line("--picture FILE", "with one --step N: check it, run it again counting every\n"
                                  "access, and draw its worst shared-memory request (32 lanes\n"
                                  "against the 32 banks) and its worst global one (lanes\n"
                                  "against 32-byte sectors) as an SVG (emulated; a wrong\n"
                                  "step is drawn too, marked wrong, and exits 1)");
    option_line("--profile", "on a GPU: what limits one step, read by Nsight Compute;\n"
                             "on the CPU path see --sectors");
#else
    char picture[160];
    snprintf(picture, sizeof picture, "the access picture is made by the CPU path: this prints\n"
                                      "the command (%s_cpu, the same words) and exits 2", lab->prog);
    option_line("--picture FILE", picture);
    option_line("--profile", "check one step (--step N, default the last), then what\n"
                             "limits it, read by Nsight Compute (ncu): time, DRAM bytes\n"
                             "against the step's own, DRAM throughput, L2 hits, sectors\n"
                             "per request, occupancy, issue slots, the top warp stalls");
#endif
    if (lab->sweep_size) {
#ifdef CML_CPU_BACKEND
        option_line("--sweep", "time one step (--step N, default the last) at sizes\n"
                               "doubling from 1 MiB to --sweep-max (default 4M on the\n"
                               "CPU path), emulated: on a GPU the sweep shows where\n"
                               "the L2 cache stops helping");
#else
        option_line("--sweep", "time one step (--step N, default the last) at sizes\n"
                               "doubling from 1 MiB to --sweep-max (default 4G), beside\n"
                               "the copy kernel and cudaMemcpy, L2's size marked");
#endif
        option_line("--sweep-max BYTES", "the largest size of --sweep (e.g. 256M, 2G)");
    }
    for (int k = 0; k < lab->nmodes; ++k)
        option_line(lab->modes[k].flag, lab->modes[k].help);
    option_line("--list", "list the steps");
    option_line("--then WORDS", "afterwards, run again in this process with WORDS (the\noptions above, as if started alone); repeatable");
    option_line("--probe", "exit 0 when a usable GPU is present, 77 otherwise");
    printf("\n%s\nExit status: 0 all checked steps correct, 1 a wrong result or CUDA error,\n"
           "2 bad arguments, 77 no GPU.\n\nSteps:\n",
           lab->notes ? lab->notes : "Data are seeded: set CML_SEED to change them.");
    for (int s = 0; s < lab->nsteps; ++s)
        step_line(lab, &lab->steps[s], 0);
}

/* ------------------------------------------------------------ --picture (options) */

/* --picture: one step, alone but for --step and the lab's sizes. On a GPU
 * build nothing is drawn (the lanes' addresses come from the CPU path): it
 * prints the CPU path's command with the same words and exits 2. */
static void picture_args(const cml_lab_run *r, int argc, char **argv)
{
    const cml_lab *lab = r->lab;
    const char *with = r->args.json ? "--json" : r->sectors ? "--sectors" : r->counters ? "--counters"
                     : r->profile ? "--profile"
                     : r->sweep ? "--sweep" : r->args.nmarkdown ? "--markdown" : r->args.check_only ? "--check-only"
                     : r->host_only ? "a host-only mode" : NULL;
    if (with != NULL) {
        cml_lab_say(r, "--picture draws one step's accesses on its own: not with %s (with --step N and the sizes "
                    "only)", with);
        usage(stderr);
        exit(CML_EXIT_USAGE);
    }
    int n = __builtin_popcount(r->args.steps), step = n == 1 ? __builtin_ctz(r->args.steps) + 1 : 0;
    if (n != 1) {
        cml_lab_say(r, "--picture draws one step: give exactly one, e.g. --step %d (not %s)", lab->nsteps,
                    n == 0 ? "none" : "a list or all");
        usage(stderr);
        exit(CML_EXIT_USAGE);
    }
    if (step < lab->first_gpu_step) {
        cml_lab_say(r, "--picture: step %d runs no kernel (a host step); steps %d-%d do", step, lab->first_gpu_step,
                    lab->nsteps);
        exit(CML_EXIT_USAGE);
    }
    if (CML_LAB_EMULATED)
        return;
    /* the GPU build: the exact command on the CPU path */
    fflush(stdout);
    fprintf(stderr, "%s: the lane picture (--picture) is made by the CPU path, which sees every lane's address; "
            "this GPU build draws nothing. Run:\n ", r->args.prog);
    for (int i = 0; i < argc; ++i) {
        const char *w = argv[i];
        int plain = w[0] != '\0' && strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+") ==
                    strlen(w);
        fprintf(stderr, " %s%s%s%s", plain ? "" : "'", w, i == 0 ? "_cpu" : "", plain ? "" : "'");
    }
    fprintf(stderr, "\n(build it with: cmake --build build --target %s_cpu)\n", r->args.prog);
    exit(CML_EXIT_USAGE);
}

/* ------------------------------------------------------------ options */

static void parse(cml_lab_run *r, int argc, char **argv)
{
    const cml_lab *lab = r->lab;
    cml_runner_init(&r->args, argc > 0 ? argv[0] : NULL, lab->prog, lab->nsteps, default_repeat(lab), usage);
    usage_lab = lab;
    usage_prog = r->args.prog;
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (cml_runner_arg(&r->args, argc, argv, &i))
            continue;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            help(lab);
            exit(CML_EXIT_OK);
        } else if (strcmp(a, "--list") == 0) {
            for (int s = 0; s < lab->nsteps; ++s)
                step_line(lab, &lab->steps[s], 1);
            exit(CML_EXIT_OK);
        } else if (strcmp(a, "--check-every-run") == 0) {
            r->check_every_run = 1;
        } else if (lab->counters && strcmp(a, "--counters") == 0) {
            r->counters = 1;
        } else if (lab->counters && strcmp(a, "--no-counters") == 0) {
            r->no_counters = 1;
        } else if (strcmp(a, "--sectors") == 0) {
            r->sectors = 1;
        } else if (strcmp(a, "--picture") == 0) {
            if (v == NULL || v[0] == '\0' || v[0] == '-')
                cml_runner_bad_arg(&r->args, a, v, "the SVG file to write, like step3.svg");
            r->picture = v;
            ++i;
        } else if (strcmp(a, "--profile") == 0) {
            r->profile = 1;
        } else if (lab->sweep_size && strcmp(a, "--sweep") == 0) {
            r->sweep = 1;
        } else if (lab->sweep_size && strcmp(a, "--sweep-max") == 0) {
            if (!cml_parse_count(v, (size_t)1 << 20, (size_t)1 << 36, &r->sweep_max))
                cml_runner_bad_arg(&r->args, a, v, "bytes from 1M to 64G, like 256M or 2G");
            ++i;
        } else {
            int took = lab->option ? lab->option(r, a, v) : 0;
            if (took == 0)
                cml_runner_unknown(&r->args, a);
            for (int k = 0; k < took && r->nlab_words < CML_LAB_MAX_WORDS; ++k)
                r->lab_words[r->nlab_words++] = argv[i + k];  /* --sectors hands them to its runs */
            i += took - 1;
        }
    }
    if (r->counters && (r->args.check_only || r->args.nmarkdown > 0 || r->host_only)) {
        cml_lab_say(r, "--counters goes alone (with --step, --json and the sizes)");
        usage(stderr);
        exit(CML_EXIT_USAGE);
    }
    if (r->sectors && (r->counters || r->sweep || r->args.check_only || r->args.nmarkdown > 0 || r->host_only)) {
        cml_lab_say(r, "--sectors goes alone (with --step, --json and the sizes)");
        usage(stderr);
        exit(CML_EXIT_USAGE);
    }
    if (r->picture)
        picture_args(r, argc, argv);
    if (r->sweep_max && !r->sweep) {
        cml_lab_say(r, "--sweep-max goes with --sweep");
        usage(stderr);
        exit(CML_EXIT_USAGE);
    }
    if (r->sweep && (r->counters || r->args.check_only || r->host_only)) {
        cml_lab_say(r, "--sweep times one step at many sizes: not with --counters, --check-only or a host mode");
        usage(stderr);
        exit(CML_EXIT_USAGE);
    }
    if (r->profile)
        cml_lab_profile_options(r);
    if (lab->validate)
        lab->validate(r);
}

/* ------------------------------------------------------------ counters */

void cml_lab_counters_add(cml_lab_counters *c, const cml_lab_run *r, int step, const char *kernels, double value)
{
    if (c->n >= CML_LAB_MAX_COUNTER_STEPS)
        return;
    c->steps[c->n].step = step;
    c->steps[c->n].ident = cml_lab_ident(r, step);
    snprintf(c->steps[c->n].kernels, sizeof c->steps[c->n].kernels, "%s", kernels);
    c->steps[c->n].value = value;
    ++c->n;
}

void cml_lab_counters_print_json(const char *lab, const cml_lab_counters *c, FILE *out)
{
    fprintf(out, "{\"lab\": ");
    cml_json_string(out, lab);
    fprintf(out, ", \"metric\": ");
    cml_json_string(out, c->metric);
    fprintf(out, ", \"available\": %s, \"reason\": ", c->available ? "true" : "false");
    cml_json_string(out, c->available ? "" : c->reason);
    fprintf(out, ", \"steps\": [");
    for (int k = 0; k < c->n; ++k) {
        fprintf(out, "%s{\"step\": %d, \"ident\": ", k ? ", " : "", c->steps[k].step);
        cml_json_string(out, c->steps[k].ident);
        fprintf(out, ", \"kernels\": ");
        cml_json_string(out, c->steps[k].kernels);
        if (c->steps[k].value >= 0.0)
            fprintf(out, ", \"value\": %.0f}", c->steps[k].value);
        else
            fprintf(out, ", \"value\": null}");
    }
    fprintf(out, "]}\n");
}

int cml_lab_ncu(const cml_lab_run *r, unsigned steps, const char *const *args, const char *const *metrics,
                int nmetrics, const char *filter, int expected, cml_ncu_counts *c, char *why, size_t len)
{
    char self[4096], list[128] = "";
    const char *argv[24] = {"--check-only", "--step", list};
    int nargs = 3, nsteps = 0;
    for (int s = 1; s <= r->lab->nsteps; ++s)
        if (steps & (1u << (s - 1)))
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", nsteps++ ? "," : "", s);
    if (nsteps == 0) {
        snprintf(why, len, "no step passed its check, so none was measured");
        return 0;
    }
    if (!cml_self_exe(self, sizeof self)) {
        snprintf(why, len, "cannot find this program's own path to run it under ncu");
        return 0;
    }
    for (int k = 0; args && args[k] && nargs < 23; ++k)
        argv[nargs++] = args[k];
    argv[nargs] = NULL;
    if (!cml_ncu_collect(self, argv, metrics, nmetrics, filter, c)) {
        snprintf(why, len, "%s", c->reason);
        return 0;
    }
    if (expected > 0 && c->nkernels != expected) {
        snprintf(why, len, "ncu measured %d launches of the lab's kernels (%s), expected %d: kernels renamed?",
                 c->nkernels, filter, expected);
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------ --sectors */

#define EMULATED CML_LAB_EMULATED
#define EMULATED_TEXT (CML_LAB_EMULATED ? "true" : "false")

/* One ncu run (on the CPU path one run under CML_CPU_CHECK=sectors,banks)
 * gives all six: coalescing, and the bank conflicts beside it. */
static const char *const sector_metrics[] = {CML_NCU_GLOBAL_LD_REQUESTS, CML_NCU_GLOBAL_LD_SECTORS,
                                             CML_NCU_GLOBAL_ST_REQUESTS, CML_NCU_GLOBAL_ST_SECTORS,
                                             CML_NCU_SHARED_LD_CONFLICTS, CML_NCU_SHARED_ST_CONFLICTS};
enum { LD_REQUESTS, LD_SECTORS, ST_REQUESTS, ST_SECTORS, LD_CONFLICTS, ST_CONFLICTS, N_SECTOR_METRICS };

void cml_lab_kernel_name(const char *name, char *buf, size_t len)
{
    if (strncmp(name, "void ", 5) == 0)
        name += 5;
    size_t o = 0;
    int depth = 0;
    for (; *name && !(depth == 0 && *name == '(') && o + 1 < len; ++name) {
        depth += *name == '<' ? 1 : *name == '>' ? -1 : 0;
        if (*name != ' ')
            buf[o++] = *name;
    }
    if (len > 0)
        buf[o] = '\0';
}

static double per_request(double n, double requests) { return requests > 0.0 ? n / requests : 0.0; }

/* One direction of a launch: "ld 31,251 requests, 125,001 sectors, 4.00 per request". */
static void print_direction(const char *op, double requests, double sectors)
{
    char r[32], s[32];
    if (requests < 0.0 || sectors < 0.0)
        printf("%s not measured", op);
    else
        printf("%s %s request%s, %s sector%s, %.2f per request", op, cml_with_commas(requests, r, sizeof r),
               requests == 1.0 ? "" : "s", cml_with_commas(sectors, s, sizeof s), sectors == 1.0 ? "" : "s",
               per_request(sectors, requests));
}

/* "ld 84" or "ld not measured": one direction's shared-memory bank conflicts. */
static void print_conflicts(const char *op, double conflicts)
{
    char c[32];
    printf("%s %s", op, conflicts < 0.0 ? "not measured" : cml_with_commas(conflicts, c, sizeof c));
}

static void json_value(FILE *out, const char *key, double v)
{
    if (v >= 0.0)
        fprintf(out, ", \"%s\": %.0f", key, v);
    else
        fprintf(out, ", \"%s\": null", key);
}

/* A step's launches (the kit's own kernels, cml_*, left out) and, from the
 * CPU path, its source lines: as text, or as JSON objects one a line. */
static void print_step_sectors(const cml_lab_run *r, int step, const cml_ncu_counts *c, int *listed)
{
    for (int k = 0; k < c->nkernels; ++k) {
        char name[64];
        cml_lab_kernel_name(c->kernel[k], name, sizeof name);
        if (strncmp(name, "cml_", 4) == 0)
            continue;
        const double *v = c->value[k];
        if (r->args.json) {
            printf("%s\n  {\"step\": %d, \"ident\": ", (*listed)++ ? "," : "", step);
            cml_json_string(stdout, cml_lab_ident(r, step));
            printf(", \"kernel\": ");
            cml_json_string(stdout, name);
            json_value(stdout, "ld_requests", v[LD_REQUESTS]);
            json_value(stdout, "ld_sectors", v[LD_SECTORS]);
            json_value(stdout, "st_requests", v[ST_REQUESTS]);
            json_value(stdout, "st_sectors", v[ST_SECTORS]);
            json_value(stdout, "ld_bank_conflicts", v[LD_CONFLICTS]);
            json_value(stdout, "st_bank_conflicts", v[ST_CONFLICTS]);
            printf("}");
            continue;
        }
        printf("step %d %s: %s: ", step, cml_lab_ident(r, step), name);
        print_direction("ld", v[LD_REQUESTS], v[LD_SECTORS]);
        printf("; ");
        print_direction("st", v[ST_REQUESTS], v[ST_SECTORS]);
        printf("; shared-memory bank conflicts: ");
        print_conflicts("ld", v[LD_CONFLICTS]);
        printf(", ");
        print_conflicts("st", v[ST_CONFLICTS]);
        printf("\n");
    }
}

static void print_step_lines(const cml_lab_run *r, int step, const cml_ncu_counts *c, int *listed)
{
    for (int k = 0; k < c->nlines; ++k) {
        const cml_ncu_line *l = &c->line[k];
        if (strncmp(l->kernel, "cml_", 4) == 0)
            continue;
        if (r->args.json) {
            printf("%s\n  {\"step\": %d, \"kernel\": ", (*listed)++ ? "," : "", step);
            cml_json_string(stdout, l->kernel);
            printf(", \"where\": ");
            cml_json_string(stdout, l->where);
            printf(", \"op\": \"%s\"", l->store ? "st" : "ld");
            json_value(stdout, "requests", l->requests);
            json_value(stdout, "sectors", l->sectors);
            json_value(stdout, "ideal", l->ideal);
            printf("}");
            continue;
        }
        char n[32], s[32];
        printf("    %s %s %s: %s requests, %s sectors, %.2f per request (ideal %.2f)\n", l->kernel, l->where,
               l->store ? "st" : "ld", cml_with_commas(l->requests, n, sizeof n),
               cml_with_commas(l->sectors, s, sizeof s), per_request(l->sectors, l->requests),
               per_request(l->ideal, l->requests));
    }
}

/* --sectors: each chosen step checked once here, then measured alone in a
 * run of this program under ncu (on the CPU path: CML_CPU_CHECK=sectors,banks),
 * `--check-only --step N` and the lab's own options as given. Text: a line
 * per launch (its global sectors and shared-memory bank conflicts, the
 * latter reported, never compared), then (CPU path) per source line; JSON:
 * {"lab", "emulated",
 * "metrics", "steps": [{"step", "ident", "available", "reason"}],
 * "launches": [...], "lines": [...]}, one launch or line a line. */
static int sectors_only(cml_lab_run *r)
{
    const cml_lab *lab = r->lab;
    static cml_ncu_counts c[32];
    static char why[32][300];
    int measured[32] = {0}, wrong = 0;
    cml_lab_new_report(r);
    int rc = lab->prepare(r);
    if (rc != CML_EXIT_OK)
        return rc;
    /* Steps before the rows (lab 01's probe) are checked by before_rows, as
     * in --check-only, not one by one: all of them pass or none. */
    int first_row = lab->first_row_step > 0 ? lab->first_row_step : lab->first_gpu_step, before_wrong = 0;
    if (lab->before_rows && first_row > lab->first_gpu_step) {
        int keep = r->args.check_only;
        r->args.check_only = 1;
        before_wrong = lab->before_rows(r);
        r->args.check_only = keep;
    }
    for (int s = lab->first_gpu_step; s <= lab->nsteps && s < 32; ++s) {
        if (!cml_lab_selected(r, s))
            continue;
        if (s < first_row) {
            measured[s] = before_wrong == 0;
            wrong += before_wrong != 0;
            if (before_wrong)
                snprintf(why[s], sizeof why[s], "not measured: its check failed (the lines above)");
            continue;
        }
        cml_row row;
        memset(&row, 0, sizeof row);
        if (!cml_lab_check(r, s, &row)) {  /* a wrong step is never measured as if it worked */
            ++wrong;
            snprintf(why[s], sizeof why[s], "not measured: %s", row.note[0] ? row.note : "a wrong result");
            if (row.status == CML_ROW_ERROR) {
                cml_lab_say(r, "step %d: %s", s, row.note);
                return CML_EXIT_FAIL;  /* a sticky error: nothing more can run */
            }
            continue;
        }
        measured[s] = 1;
    }
    if (lab->release)
        lab->release(r);
    const char *const *words = r->lab_words;
    for (int s = 1; s < 32; ++s)
        if (measured[s])
            measured[s] = cml_lab_ncu(r, 1u << (s - 1), words, sector_metrics, N_SECTOR_METRICS, NULL, 0, &c[s],
                                      why[s], sizeof why[s]);
    if (r->args.json) {
        printf("{\"lab\": ");
        cml_json_string(stdout, lab->name);
        printf(", \"emulated\": %s, \"metrics\": [", EMULATED_TEXT);
        for (int m = 0; m < N_SECTOR_METRICS; ++m)
            printf("%s\"%s\"", m ? ", " : "", sector_metrics[m]);
        printf("],\n \"steps\": [");
        int listed = 0;
        for (int s = lab->first_gpu_step; s <= lab->nsteps && s < 32; ++s)
            if (cml_lab_selected(r, s)) {
                printf("%s\n  {\"step\": %d, \"ident\": ", listed++ ? "," : "", s);
                cml_json_string(stdout, cml_lab_ident(r, s));
                printf(", \"available\": %s, \"reason\": ", measured[s] ? "true" : "false");
                cml_json_string(stdout, measured[s] ? "" : why[s]);
                printf("}");
            }
        printf("],\n \"launches\": [");
        listed = 0;
        for (int s = 1; s < 32; ++s)
            if (measured[s])
                print_step_sectors(r, s, &c[s], &listed);
        printf("],\n \"lines\": [");
        listed = 0;
        for (int s = 1; s < 32; ++s)
            if (measured[s])
                print_step_lines(r, s, &c[s], &listed);
        printf("]}\n");
        return wrong ? CML_EXIT_FAIL : CML_EXIT_OK;
    }
    for (int s = lab->first_gpu_step; s <= lab->nsteps && s < 32; ++s) {
        if (!cml_lab_selected(r, s))
            continue;
        if (!measured[s]) {
            printf("step %d %s: sectors not available: %s\n", s, cml_lab_ident(r, s), why[s]);
            continue;
        }
        int none = 0;
        print_step_sectors(r, s, &c[s], &none);
        print_step_lines(r, s, &c[s], &none);
    }
    if (EMULATED)
        printf("(emulated: the CPU path's counts of every global access (CML_CPU_CHECK=sectors), grouped into warp "
               "instructions;\nideal: the fewest 32-byte sectors that hold the bytes the lanes touched; bank "
               "conflicts:\nthe runtime's bank model (CML_CPU_CHECK=banks), wavefronts beyond one per request)\n");
    else
        printf("(Nsight Compute: %s, %s,\n%s and their _st twins; per source line\nand the ideal: %s_cpu "
               "--sectors, the CPU path's counts)\n", sector_metrics[LD_SECTORS], sector_metrics[LD_REQUESTS],
               sector_metrics[LD_CONFLICTS], lab->prog);
    return wrong ? CML_EXIT_FAIL : CML_EXIT_OK;
}

/* ------------------------------------------------------------ --picture */

/* Runs this program again, `--check-only --step N` and the lab's words,
 * with CML_CPU_PICTURE=records (the CPU runtime counts banks and sectors as
 * under CML_CPU_CHECK=banks,sectors, and writes each source line's worst
 * warp instruction there at exit); its output goes to log. Returns its
 * exit status, or -1 with why. */
static int picture_run(const cml_lab_run *r, int step, const char *records, const char *log, char *why, size_t len)
{
    char self[4096], num[16];
    if (!cml_self_exe(self, sizeof self)) {
        snprintf(why, len, "cannot find this program's own path to run it again");
        return -1;
    }
    snprintf(num, sizeof num, "%d", step);
    const char *argv[CML_LAB_MAX_WORDS + 6] = {self, "--check-only", "--step", num};
    int n = 4;
    for (int k = 0; k < r->nlab_words; ++k)
        argv[n++] = r->lab_words[k];
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, len, "cannot start a run of this program (fork failed)");
        return -1;
    }
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_TRUNC);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        unsetenv("CML_CPU_CHECK"); /* the picture's counts alone: no report lines, no race check's status */
        setenv("CML_CPU_PICTURE", records, 1);
        char *words[CML_LAB_MAX_WORDS + 6];
        memcpy(words, argv, sizeof words);  /* execv's type; it changes none of them */
        execv(self, words);
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status)) {
        snprintf(why, len, "the counting run of step %d ended abnormally", step);
        return -1;
    }
    return WEXITSTATUS(status);
}

/* The tail of a run's output (its last lines), to say why it failed. */
static void print_tail(const char *path)
{
    FILE *in = fopen(path, "r");
    if (in == NULL)
        return;
    char text[2048];
    fseek(in, 0, SEEK_END);
    long size = ftell(in);
    fseek(in, size > (long)sizeof text - 1 ? size - (long)sizeof text + 1 : 0, SEEK_SET);
    size_t got = fread(text, 1, sizeof text - 1, in);
    text[got] = '\0';
    fclose(in);
    fprintf(stderr, "%s", text);
}

static void print_picture_line(const char *space, const cml_access *a)
{
    char headline[400], n[32];
    const char *where = strrchr(a->where, '/');
    cml_access_headline(a, headline, sizeof headline);
    printf("  %s: %s %s in %s: %s; the line ran %s times\n", space, where ? where + 1 : a->where,
           a->store ? "st" : "ld", a->kernel, headline, cml_with_commas((double)a->instructions, n, sizeof n));
}

/* --picture FILE (CPU path): the step run again, `--check-only --step N`
 * with every access counted (picture_run: its check is the step's check,
 * and a wrong step is never drawn as if it worked); its worst shared and
 * worst global warp instruction (the kit's own cml_* kernels left out)
 * drawn into FILE (common/src/access_picture.c), and a summary printed. */
static int picture_only(cml_lab_run *r)
{
    const cml_lab *lab = r->lab;
    int step = __builtin_ctz(r->args.steps) + 1;
    const char *tmp = getenv("TMPDIR") != NULL && getenv("TMPDIR")[0] != '\0' ? getenv("TMPDIR") : "/tmp";
    char records[1024], log[1024], why[300] = "";
    snprintf(records, sizeof records, "%s/cml_picture_XXXXXX", tmp);
    snprintf(log, sizeof log, "%s/cml_picture_log_XXXXXX", tmp);
    int fd1 = mkstemp(records), fd2 = fd1 >= 0 ? mkstemp(log) : -1;
    if (fd1 < 0 || fd2 < 0) {
        cml_lab_say(r, "--picture: cannot make a temporary file in %s (TMPDIR)", tmp);
        if (fd1 >= 0) {
            close(fd1);
            unlink(records);
        }
        return CML_EXIT_FAIL;
    }
    close(fd1);
    close(fd2);
    int status = picture_run(r, step, records, log, why, sizeof why);
    cml_access_list list = {NULL, 0};
    /* A wrong result is still drawn (what a kernel that does not work yet
     * touches helps to find why), marked as wrong, and the exit stays 1. */
    int wrong = status == CML_EXIT_FAIL;
    if ((status == 0 || wrong) && !cml_access_read(records, &list, why, sizeof why))
        status = -1;
    if (status == CML_EXIT_FAIL) {
        cml_lab_say(r, "step %d %s is WRONG: its check said what follows; the picture shows what this kernel "
                    "touched, not a working step's access:", step, cml_lab_ident(r, step));
        print_tail(log);
    } else if (wrong) {
        cml_lab_say(r, "step %d %s is wrong or failed, and its run left no accesses to draw (%s); its check said:",
                    step, cml_lab_ident(r, step), why);
        print_tail(log);
    } else if (status != 0) {
        if (why[0] == '\0')
            snprintf(why, sizeof why, "exit %d", status);
        cml_lab_say(r, "--picture: the counting run of step %d failed (%s); its last output:", step, why);
        print_tail(log);
    }
    unlink(records);
    unlink(log);
    if (status != 0 && status != CML_EXIT_FAIL)
        return CML_EXIT_FAIL;
    const cml_access *shared = cml_access_worst(&list, 1, "cml_"), *global = cml_access_worst(&list, 0, "cml_");
    char title[300], none_shared[200], none_global[200], footer[600];
    snprintf(title, sizeof title, "%s step %d (%s)%s: the worst shared-memory and global-memory requests", lab->name,
             step, cml_lab_ident(r, step), wrong ? ", a WRONG result" : "");
    snprintf(none_shared, sizeof none_shared, "Step %d made no shared-memory access: nothing to draw against the banks.",
             step);
    snprintf(none_global, sizeof none_global, "Step %d's kernels made no global-memory load or store.", step);
    int at = snprintf(footer, sizeof footer, "Made by %s --step %d --picture from its run on the CPU path "
                      "(emulated: every access counted, CML_CPU_PICTURE)", r->args.prog, step);
    for (int k = 0; k < r->nlab_words && at > 0 && (size_t)at < sizeof footer; ++k)
        at += snprintf(footer + at, sizeof footer - (size_t)at, "%s%s", k ? " " : ". Sizes: ", r->lab_words[k]);
    FILE *out = fopen(r->picture, "w");
    int written = out != NULL && cml_access_svg(out, title, shared, global, none_shared, none_global, footer) == 0;
    if (out != NULL && fclose(out) != 0)
        written = 0;
    if (!written) {
        cml_lab_say(r, "--picture: cannot write %s", r->picture);
        cml_access_free(&list);
        return CML_EXIT_FAIL;
    }
    printf("step %d %s: the worst accesses, drawn in %s\n", step, cml_lab_ident(r, step), r->picture);
    if (shared)
        print_picture_line("shared", shared);
    else
        printf("  shared: none (the step made no shared-memory access)\n");
    if (global)
        print_picture_line("global", global);
    else
        printf("  global: none\n");
    printf("(emulated: the CPU path's bank model and sector counts; open %s in a browser)\n", r->picture);
    if (wrong)
        printf("step %d's result is wrong (above): the picture is of a kernel that does not work yet\n", step);
    cml_access_free(&list);
    return wrong ? CML_EXIT_FAIL : CML_EXIT_OK;
}

static int counters_only(cml_lab_run *r)
{
    static cml_lab_counters c;
    memset(&c, 0, sizeof c);
    c.metric = r->lab->counters_metric;
    int rc = r->lab->counters(r, &c);
    if (r->args.json)
        cml_lab_counters_print_json(r->lab->name, &c, stdout);
    else if (!c.available)
        printf("counters not available: %s\n", c.reason);
    return rc;
}

/* ------------------------------------------------------------ the run */

void cml_lab_watch_input(cml_lab_run *r, const cml_dbuf *buf, const void *host, const char *name)
{
    if (r->ninputs == CML_LAB_MAX_INPUTS)
        return;
    r->inputs[r->ninputs].buf = buf;
    r->inputs[r->ninputs].name = name;
    r->inputs[r->ninputs].hash = cml_hash_bytes(host, buf->bytes, 0);
    ++r->ninputs;
}

/* The watched inputs still hold what was uploaded. */
static int inputs_unchanged(const cml_lab_run *r, cml_row *row)
{
    for (int k = 0; k < r->ninputs; ++k) {
        uint64_t h = 0;
        cudaError_t err = cml_dbuf_hash(r->inputs[k].buf, &h);
        if (err != cudaSuccess) {
            cml_lab_row_error(row, "CUDA error", err);
            return 0;
        }
        if (h != r->inputs[k].hash) {
            row->status = CML_ROW_WRONG;
            snprintf(row->note, sizeof row->note,
                     "the step changed its input %s: a kernel writes into memory it must only read",
                     r->inputs[k].name);
            return 0;
        }
    }
    return 1;
}

int cml_lab_check(cml_lab_run *r, int step, cml_row *row)
{
    const cml_lab *lab = r->lab;
    cudaError_t err = lab->poison ? lab->poison(r, step) : cudaSuccess;
    if (err == cudaSuccess)
        err = lab->launch(r, step);
    if (err != cudaSuccess) {
        cml_lab_row_error(row, "CUDA error", err);
        return 0;
    }
    return lab->verify(r, step, row) && inputs_unchanged(r, row);
}

typedef struct timed {
    cml_lab_run *r;
    int step;
} timed;

static cudaError_t launch_timed(void *ctx)
{
    timed *t = (timed *)ctx;
    return t->r->lab->launch(t->r, t->step);
}

/* --check-every-run: each timed run between its own two events, poisoned
 * before and verified after, outside the events. Returns 0 with row set
 * when a run fails (a launcher that caches its last answer, say). */
static cudaError_t time_checked(cml_lab_run *r, int step, cml_row *row, cml_timing *tm, int *ok)
{
    enum { MAX_SAMPLES = 4096 };
    static double ms[MAX_SAMPLES];
    int n = r->args.repeat < MAX_SAMPLES ? r->args.repeat : MAX_SAMPLES;
    cudaEvent_t start, stop;
    *ok = 1;
    CML_TRY(cudaEventCreate(&start));
    CML_TRY(cudaEventCreate(&stop));
    cudaError_t err = cudaSuccess;
    for (int k = 0; k < 3 && err == cudaSuccess; ++k)  /* warm-up */
        err = r->lab->launch(r, step);
    for (int k = 0; k < n && err == cudaSuccess && *ok; ++k) {
        err = r->lab->poison ? r->lab->poison(r, step) : cudaSuccess;
        if (err == cudaSuccess)
            err = cudaDeviceSynchronize();  /* the poison is not part of the time */
        if (err == cudaSuccess)
            err = cudaEventRecord(start, 0);
        if (err == cudaSuccess)
            err = r->lab->launch(r, step);
        if (err == cudaSuccess)
            err = cudaEventRecord(stop, 0);
        if (err == cudaSuccess)
            err = cudaEventSynchronize(stop);
        float t = 0.0f;
        if (err == cudaSuccess)
            err = cudaEventElapsedTime(&t, start, stop);
        ms[k] = t;
        if (err == cudaSuccess && !(r->lab->verify(r, step, row) && inputs_unchanged(r, row))) {
            char note[sizeof row->note];
            memcpy(note, row->note, sizeof note);
            int at = snprintf(row->note, sizeof row->note, "timed run %d of %d: ", k + 1, n);
            if (at > 0 && (size_t)at < sizeof row->note)
                memcpy(row->note + at, note, sizeof row->note - (size_t)at - 1);
            row->note[sizeof row->note - 1] = '\0';
            *ok = 0;
        }
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    if (err == cudaSuccess && *ok) {
        tm->runs = n;
        tm->median_ms = cml_median(ms, n);
    }
    return err;
}

int cml_lab_time(cml_lab_run *r, int step, cml_row *row)
{
    timed t = {r, step};
    cml_timing tm;
    int ok = 1;
    cudaError_t err = r->check_every_run ? time_checked(r, step, row, &tm, &ok)
                                         : cml_time_median(launch_timed, &t, 3, r->args.repeat, &tm);
    if (err != cudaSuccess) {
        cml_lab_row_error(row, "CUDA error while timing", err);
        return 0;
    }
    if (!ok)
        return 0;
    row->timed = 1;
    row->ms = tm.median_ms;
    row->rate = r->lab->work(r, step) / (tm.median_ms * 1e6);
    return 1;
}


void cml_lab_new_report(cml_lab_run *r)
{
    const cml_lab *lab = r->lab;
    cml_report_init(&r->rep, lab->name, lab->title, lab->unit ? lab->unit : "GB/s");
    r->rep.emulated = EMULATED;
    r->rep.device = r->dev;
    r->rep.seed = r->seed;
    r->rep.runs = r->args.check_only ? 0 : r->args.repeat;   /* the report says "median of N runs" */
}

/* The speed limit: the same bytes copied device to device, two rows. */
static void ceiling_rows(cml_lab_run *r)
{
    CML_CHECK(cml_measure_copy_ceiling(r->lab->ceiling_bytes(r), r->args.repeat, &r->ceiling));
    r->have_ceiling = 1;
    r->rep.ceiling_rate = r->ceiling.best_gbs;
    snprintf(r->rep.ceiling_name, sizeof r->rep.ceiling_name, "device copy (read + write)");
    const char *names[2] = {"cudaMemcpy device to device", "copy kernel, 16-byte accesses"};
    double rates[2] = {r->ceiling.memcpy_gbs, r->ceiling.kernel_gbs};
    for (int k = 0; k < 2; ++k) {
        cml_row *row = cml_report_add(&r->rep, CML_ROW_CEILING, 0, names[k]);
        if (row == NULL)
            break;
        row->status = CML_ROW_OK;
        row->timed = 1;
        row->rate = rates[k];
        row->ms = 2.0 * (double)r->ceiling.bytes / (rates[k] * 1e6);
    }
}

static void print_check_lines(const cml_lab_run *r)
{
    int w = r->lab->name_width > 0 ? r->lab->name_width : 16;
    for (int i = 0; i < r->rep.nrows; ++i) {
        const cml_row *row = &r->rep.rows[i];
        printf("step %d %-*s %s%s%s\n", row->step, w, row->name, row->status == CML_ROW_OK ? "ok" : "WRONG",
               row->note[0] ? ": " : "", row->note);
    }
}

/* Without a usable GPU: the host part first (it is what the message
 * refers to), then the reason and what works without one. */
static int without_gpu(cml_lab_run *r, const char *why)
{
    const cml_lab *lab = r->lab;
    int shown = lab->host_part ? lab->host_part(r) : 0;
    if (r->counters && r->args.json) {
        static cml_lab_counters c;
        memset(&c, 0, sizeof c);
        c.metric = lab->counters_metric;
        snprintf(c.reason, sizeof c.reason, "%s", why);
        cml_lab_counters_print_json(lab->name, &c, stdout);
    }
    if (r->sectors && r->args.json) {
        printf("{\"lab\": ");
        cml_json_string(stdout, lab->name);
        printf(", \"emulated\": %s, \"available\": false, \"reason\": ", EMULATED_TEXT);
        cml_json_string(stdout, why);
        printf(", \"steps\": [], \"launches\": [], \"lines\": []}\n");
    }
    cml_lab_say(r, "%s", why);
    /* the CPU path runs the same kernels without a GPU (emulated) */
    cml_lab_say(r, "without a GPU, the CPU path runs your kernels (emulated, small sizes): build and run "
                "%s_cpu (cmake --build build --target %s_cpu; ./build/%s_cpu --help)", lab->prog, lab->prog,
                lab->prog);
    if (shown)
        cml_lab_say(r, "the measurements need a GPU; the %s above and the host tests (cmake --workflow --preset "
                    "host) work without one", lab->host_part_name);
    else if (lab->host_part)
        cml_lab_say(r, "the measurements need a GPU; %s and the host tests (cmake --workflow --preset host) work "
                    "without one", lab->host_part_hint);
    else
        cml_lab_say(r, "nothing to run without a GPU; the host tests still work: cmake --workflow --preset host");
    return CML_EXIT_NO_GPU;
}

static int run_once(const cml_lab *lab, void *data, int argc, char **argv)
{
    static cml_lab_run run;
    cml_lab_run *r = &run;
    memset(r, 0, sizeof *r);
    r->lab = lab;
    r->data = data;
    parse(r, argc, argv);
    if (r->profile && EMULATED) {
        cml_lab_say(r, "--profile reads Nsight Compute on a GPU; on the CPU path see --sectors and --picture");
        return CML_EXIT_USAGE;
    }

    unsigned all = lab->nsteps >= 32 ? ~0u : (1u << lab->nsteps) - 1u;
    unsigned gpu_steps = all & ~((1u << (lab->first_gpu_step - 1)) - 1u);
    int gpu_wanted = !r->host_only && (r->args.steps & gpu_steps);
    char why[300];
    int (*probe)(cml_device_info *, char *, size_t) = lab->probe ? lab->probe : cml_device_probe;
    if (!gpu_wanted) {
        if (lab->host_part)
            lab->host_part(r);
        return CML_EXIT_OK;
    }
    int probed = probe(&r->dev, why, sizeof why);
    if (probed == CML_PROBE_NO_GPU)
        return without_gpu(r, why);
    if (probed != CML_PROBE_OK) {   /* a GPU is there but failed: an error, not "no GPU" */
        cml_lab_say(r, "%s", why);
        return CML_EXIT_FAIL;
    }
    char err[200];
    if (!cml_seed(&r->seed, err, sizeof err)) {
        cml_lab_say(r, "%s", err);
        return CML_EXIT_USAGE;
    }
    if (EMULATED && r->args.nmarkdown > 0) {
        cml_lab_say(r, "--markdown writes results pages and handout tables, which hold GPU measurements; on the "
                       "CPU path every time is emulated, so nothing is written");
        return CML_EXIT_USAGE;
    }
    if (r->picture)
        return picture_only(r);
    if (r->sweep)
        return cml_lab_sweep(r);
    if (r->sectors)
        return sectors_only(r);
    if (r->profile)
        return cml_lab_profile(r);
    if (r->counters) {
        int crc = counters_only(r);
        if (EMULATED && !r->args.json)
            printf("(emulated: shared-memory bank conflicts counted by the CPU path with lab 01's bank model "
                   "(CML_CPU_CHECK=banks), not by Nsight Compute)\n");
        return crc;
    }

    cml_lab_new_report(r);
    int rc = lab->prepare(r);
    if (rc != CML_EXIT_OK)
        return rc;

    int wrong = lab->before_rows ? lab->before_rows(r) : 0;
    int first_row = lab->first_row_step > 0 ? lab->first_row_step : lab->first_gpu_step;
    for (int s = first_row; s <= lab->nsteps; ++s) {
        if (!cml_lab_selected(r, s))
            continue;
        cml_row *row = cml_report_add(&r->rep, CML_ROW_STEP, s, cml_lab_ident(r, s));
        int ok = cml_lab_check(r, s, row);
        if (ok && !r->args.check_only)
            ok = cml_lab_time(r, s, row);
        if (!ok) {
            ++wrong;  /* a wrong step is never timed as if it worked */
            if (row->status == CML_ROW_ERROR) {
                cml_lab_say(r, "step %d: %s", s, row->note);
                break;  /* a sticky error poisons every later call */
            }
        }
    }
    if (!r->args.check_only && lab->anchors)
        wrong += lab->anchors(r);
    if (lab->release)
        lab->release(r);
    /* On the CPU path: no copy-ceiling rows, and none of the lab's notes
     * that compare a time with them (finish, after_table). */
    if (!r->args.check_only && !EMULATED) {
        if (r->rep.nrows > 0)
            ceiling_rows(r);
        if (lab->finish)
            lab->finish(r);
    }

    if (r->args.json) {
        cml_report_print_json(&r->rep, stdout);
    } else {
        if (lab->before_table)
            lab->before_table(r);
        if (r->args.check_only) {
            print_check_lines(r);
        } else if (r->rep.nrows > 0) {
            cml_report_print_table(&r->rep, stdout);
            if (lab->table_note)
                printf("%s\n", lab->table_note);
        }
        if (lab->after_table && !EMULATED)
            lab->after_table(r);
        if (EMULATED && !r->args.check_only)
            printf("Left out on the CPU path: the copy-ceiling rows and the lab's comparisons with them (an "
                   "emulated time says\nnothing about a GPU's). Run on a GPU for those.%s\n",
                   lab->counters ? " --counters gives the emulated bank conflicts here." : "");
    }
    fflush(stdout);
    if (cml_runner_write_markdown(&r->args, &r->rep) != CML_EXIT_OK)
        return CML_EXIT_FAIL;
    return wrong ? CML_EXIT_FAIL : CML_EXIT_OK;
}

/* "--then" splits the command line into runs, one after another in this
 * process (one CUDA context): each run parses only its own words, its lab
 * data as main() made it, as if started alone. The grader's compute-sanitizer
 * runs every size of a lab this way: one sanitizer process a tool. A line
 * "run K of N: WORDS" on stdout starts each run; the status is the first
 * that is not 0, and a run that finds no GPU or bad words ends them all. */
int cml_lab_main(const cml_lab *lab, void *data, size_t data_size, int argc, char **argv)
{
    int nruns = 1;
    for (int i = 1; i < argc; ++i)
        nruns += strcmp(argv[i], "--then") == 0;
    if (nruns == 1)
        return run_once(lab, data, argc, argv);
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0 || strcmp(a, "--markdown") == 0 || strcmp(a, "--counters") == 0 ||
            strcmp(a, "--sectors") == 0 || strcmp(a, "--picture") == 0 || strcmp(a, "--profile") == 0) {
            fprintf(stderr, "%s: %s does not go with --then (one JSON document, page, counters, picture or profile "
                    "run a process)\n",
                    argc > 0 ? argv[0] : lab->prog, a);
            return CML_EXIT_USAGE;
        }
    }
    void *fresh = data_size ? malloc(data_size) : NULL;
    char **words = malloc(sizeof *words * (size_t)(argc + 1));
    if ((data_size && fresh == NULL) || words == NULL) {
        fprintf(stderr, "%s: out of host memory\n", argc > 0 ? argv[0] : lab->prog);
        free(fresh);
        free(words);
        return CML_EXIT_FAIL;
    }
    if (data_size)
        memcpy(fresh, data, data_size);
    int status = CML_EXIT_OK, from = 1;
    for (int k = 1; k <= nruns; ++k) {
        int to = from;
        while (to < argc && strcmp(argv[to], "--then") != 0)
            ++to;
        words[0] = argv[0];
        int n = 1;
        printf("run %d of %d:", k, nruns);
        for (int i = from; i < to; ++i) {
            words[n++] = argv[i];
            printf(" %s", argv[i]);
        }
        words[n] = NULL;
        printf("\n");
        fflush(stdout);
        if (data_size)
            memcpy(data, fresh, data_size);
        int rc = run_once(lab, data, n, words);
        fflush(stdout);
        if (status == CML_EXIT_OK)
            status = rc;
        if (rc == CML_EXIT_NO_GPU || rc == CML_EXIT_USAGE)
            break;
        from = to + 1;
    }
    free(fresh);
    free(words);
    return status;
}
