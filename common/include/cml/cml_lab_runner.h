/* cml_lab_runner.h: a lab's runner as a description plus callbacks.
 *
 * The library owns what every runner does the same way: the command line
 * (--step, --repeat, --json, --markdown, --check-only, --check-every-run,
 * --counters, --no-counters, --sectors, --profile, --sweep, --list, --probe, --help), the help text, the device probe
 * and the no-GPU message, the seed, the check-then-time loop over the
 * steps, the copy-ceiling rows, the table, JSON and Markdown, the counters'
 * JSON, and the exit codes (CML_EXIT_*: 0 ok, 1 wrong result or CUDA
 * error, 2 bad arguments, 77 no GPU). A lab's run.c fills a cml_lab and
 * calls cml_lab_main from main().
 *
 * Order of a run: options -> probe -> [host part, no-GPU message] -> seed
 * -> prepare -> before_rows -> for each selected row step: poison, launch,
 * verify, inputs unchanged, then time (unless --check-only) -> anchors -> release -> ceiling rows -> finish ->
 * output (before_table, the table or check lines or JSON, after_table) ->
 * Markdown files.
 */
#ifndef CML_LAB_RUNNER_H
#define CML_LAB_RUNNER_H

#include <stdint.h>
#include <stdio.h>
#include <cuda_runtime_api.h>

#include "cml_buffer.h"
#include "cml_ceiling.h"
#include "cml_device.h"
#include "cml_ncu.h"
#include "cml_report.h"
#include "cml_runner.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One row of the lab's step table. Build the array from the generated
 * X-macro: static const cml_lab_step steps[] = {BANKS_STEPS(CML_LAB_STEP)}; */
typedef struct cml_lab_step {
    int num;
    const char *ident;
    const char *file;    /* the student file the step is in */
    const char *title;
} cml_lab_step;
#define CML_LAB_STEP(num, ident, file, title) {num, #ident, file, title},

/* A lab's identity from its generated step header (STEM_STEPS,
 * STEM_NUM_STEPS, STEM_FIRST_GPU_STEP), inside the cml_lab initializer:
 *   CML_LAB_STEP_TABLE(BANKS);
 *   static const cml_lab lab = {CML_LAB_IDENTITY(BANKS, "01_shared_banks", "banks"), ...}; */
#define CML_LAB_STEP_TABLE(STEM) static const cml_lab_step cml_lab_steps_[] = {STEM##_STEPS(CML_LAB_STEP)}
#define CML_LAB_IDENTITY(STEM, lab_name, stem)                                                      \
    .name = lab_name, .prog = stem "_run", .steps = cml_lab_steps_, .nsteps = STEM##_NUM_STEPS,     \
    .first_gpu_step = STEM##_FIRST_GPU_STEP

/* A list field and its count from one array: CML_LAB_LIST(options, opts)
 * sets .options and .noptions (likewise modes). */
#define CML_LAB_LIST(field, array) .field = array, .n##field = (int)(sizeof array / sizeof array[0])

/* The GPU part's callbacks under their conventional names in a lab's run.c
 * (prepare, poison, launch, verify, work, release, ceiling_bytes: see cml_lab). */
#define CML_LAB_GPU_PART                                                                            \
    .prepare = prepare, .poison = poison, .launch = launch, .verify = verify, .work = work,          \
    .release = release, .ceiling_bytes = ceiling_bytes

/* A lab's own option in the help: "  FLAG            HELP"; a '\n' in help
 * continues on the next line under the first. */
typedef struct cml_lab_option {
    const char *flag;    /* "--n COUNT" */
    const char *help;
} cml_lab_option;

#define CML_LAB_MAX_COUNTER_STEPS 32

/* Counters of one run (--counters): one value per step, summed over the
 * step's kernels, of one metric. */
typedef struct cml_lab_counters {
    const char *metric;          /* the ncu metric name */
    int available;
    char reason[300];            /* why not, when !available */
    int n;
    struct {
        int step;
        const char *ident;
        char kernels[96];        /* which launches the value covers */
        double value;            /* < 0: no value */
    } steps[CML_LAB_MAX_COUNTER_STEPS];
} cml_lab_counters;

typedef struct cml_lab cml_lab;

#define CML_LAB_MAX_INPUTS 4
#define CML_LAB_MAX_WORDS 16

/* The state of one run, handed to every callback. */
typedef struct cml_lab_run {
    const cml_lab *lab;
    cml_runner_args args;        /* prog, steps, repeat, json, check_only, markdown */
    int counters;                /* --counters: check, then the counter lines (or JSON) only */
    int no_counters;             /* --no-counters */
    int host_only;               /* set by a lab option (lab 01's --model): no GPU part */
    int check_every_run;         /* --check-every-run: re-poison and verify every timed repeat */
    int sweep;                   /* --sweep (labs with sweep_size) */
    int sectors;                 /* --sectors: check, then each launch's global sectors and requests */
    int profile;                 /* --profile: check one step, then what limits it (cml_lab_profile) */
    const char *lab_words[CML_LAB_MAX_WORDS + 1]; /* the lab's own options as given (sizes), NULL-ended */
    int nlab_words;
    size_t sweep_max;            /* --sweep-max BYTES: the largest size swept (0: the default) */
    const char *picture;         /* --picture FILE: one step's worst accesses drawn as an SVG (CPU path) */
    struct {                     /* device inputs a kernel must leave alone (cml_lab_watch_input) */
        const cml_dbuf *buf;
        const char *name;
        uint64_t hash;
    } inputs[CML_LAB_MAX_INPUTS];
    int ninputs;
    uint64_t seed;
    cml_device_info dev;
    cml_report rep;
    int have_ceiling;
    cml_copy_ceiling ceiling;    /* when have_ceiling */
    void *data;                  /* the lab's own options and data (cml_lab_main's data) */
} cml_lab_run;

struct cml_lab {
    /* identity */
    const char *name;            /* "04_reduction" */
    const char *prog;            /* "reduction_run", when argv[0] says nothing */
    const char *title;           /* the report's title */
    const char *unit;            /* NULL: "GB/s" */
    const cml_lab_step *steps;   /* the step table, steps[k].num == k + 1 */
    int nsteps;
    int first_gpu_step;          /* steps below it are host-only (lab 01's model) */
    int first_row_step;          /* 0: first_gpu_step; steps before it run in before_rows */
    int default_repeat;          /* 0: 50 */
    int name_width;              /* step-name column of the help and check lines (16 when 0) */
    int list_files;              /* the help's and --list's step lines name the student file */

    /* help */
    const char *usage;           /* the lines after "usage: PROG ", '\n' + 7 spaces between lines */
    const char *about;           /* the paragraph after the usage */
    const char *step_help;       /* after "--step S": "steps to run: all (default), 3, 1,4,7 or 2-5" */
    const cml_lab_option *options;  /* the lab's sizes and types, listed after --step */
    int noptions;
    const char *repeat_help;     /* NULL: "timed runs per kernel (default R)" */
    const char *json_help;       /* NULL: "print the results as JSON instead of the table" */
    const char *check_only_help;
    const char *counters_help;   /* with counters(): --counters and --no-counters */
    const char *no_counters_help;
    const cml_lab_option *modes; /* listed after --no-counters (lab 01's --model) */
    int nmodes;
    const char *notes;           /* before "Exit status: ..."; NULL: "Data are seeded: set CML_SEED to change them." */

    /* The lab's own options: 0 when opt is not one, 1 when it was a flag,
     * 2 when it took value too. A bad value: cml_runner_bad_arg(&r->args, ...). */
    int (*option)(cml_lab_run *r, const char *opt, const char *value);
    /* After parsing: a combination that cannot work -> print and exit 2. Optional. */
    void (*validate)(cml_lab_run *r);

    /* Without a GPU, or with no GPU step chosen: print the host part
     * (lab 01's model table) when the mode shows it. Returns 1 when
     * something was printed. Optional. */
    int (*host_part)(cml_lab_run *r);
    const char *host_part_name;  /* "model": "the model above ... work without one" */
    const char *host_part_hint;  /* when not printed: "`banks_run --model`" */

    /* GPU part. prepare: data, device buffers, r->rep.params; returns
     * CML_EXIT_OK or an exit status. */
    int (*prepare)(cml_lab_run *r);
    /* Steps first_gpu_step .. first_row_step - 1; returns how many failed. Optional. */
    int (*before_rows)(cml_lab_run *r);
    /* One checked run of a row step, in two halves around launch: poison
     * the outputs (optional), then verify: fetch, guards, compare. verify
     * fills row->status (CML_ROW_ERROR for a CUDA error) and row->note and
     * returns 1 when correct. A step is never timed when it fails; with
     * --check-every-run every timed repeat is poisoned and verified too
     * (outside the timed region). Then the watched inputs are checked. */
    cudaError_t (*poison)(cml_lab_run *r, int step);
    int (*verify)(cml_lab_run *r, int step, cml_row *row);
    /* The work to time: enqueue one run of step (no sync). */
    cudaError_t (*launch)(cml_lab_run *r, int step);
    /* Units of the report's unit per run (bytes for GB/s): rate = work / ms / 1e6. */
    double (*work)(const cml_lab_run *r, int step);
    /* Library anchors (CUB), after the steps, unless --check-only; returns failures. Optional. */
    int (*anchors)(cml_lab_run *r);
    /* Frees the device data before the ceiling is measured. Optional. */
    void (*release)(cml_lab_run *r);
    /* Bytes the copy ceiling copies (read once, written once). */
    size_t (*ceiling_bytes)(const cml_lab_run *r);
    /* After the ceiling, unless --check-only: counters, notes, extra JSON/Markdown. Optional. */
    void (*finish)(cml_lab_run *r);
    /* Printed around the table (or the check lines: r->args.check_only). Optional. */
    void (*before_table)(cml_lab_run *r);
    const char *table_note;      /* the line under the table */
    void (*after_table)(cml_lab_run *r);

    /* --counters: check what it needs, read the counters into *c and print
     * one line per step (unless r->args.json). Returns an exit status. The
     * library prints "counters not available: REASON" or the JSON. NULL:
     * the lab has no --counters. */
    int (*counters)(cml_lab_run *r, cml_lab_counters *c);
    const char *counters_metric; /* the ncu metric --counters reports (c->metric starts as this) */

    /* --sweep (optional): set the lab's sizes so that one run of step
     * moves about `bytes` bytes (its work(): read + written, or read for a
     * reduction), in the shape of the lab's headline size; prepare then
     * makes the data. Returns 1, or 0 when no size of the step moves that
     * many (a step whose work does not grow with a size: never). The library sweeps one step (--step N, default the last) from
     * 1 MiB to 4 GiB (--sweep-max) beside the copy kernel and cudaMemcpy on
     * the same bytes, and marks the GPU's L2 size (cml_lab_sweep). */
    int (*sweep_size)(cml_lab_run *r, int step, double bytes);

    /* Tests only: a stand-in for cml_device_probe. NULL in every runner. */
    int (*probe)(cml_device_info *info, char *reason, size_t len);
};

/* Runs the lab: parses argv, probes, runs and prints as above. data is
 * handed to the callbacks as r->data. Returns the exit status (--help,
 * --list, --probe and bad arguments exit from inside). "--then" starts
 * another run in the same process with the words after it, data as it was
 * (data_size bytes, copied back before each run; 0: the lab keeps no
 * options there). */
int cml_lab_main(const cml_lab *lab, void *data, size_t data_size, int argc, char **argv);

/* A message on stderr, "PROG: ..." and a newline, after flushing stdout so
 * that it never lands inside a line of a table. */
void cml_lab_say(const cml_lab_run *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* One checked run of step (poison, launch, verify, watched inputs), as the
 * library does before timing; for a lab's own modes (--counters). */
int cml_lab_check(cml_lab_run *r, int step, cml_row *row);

/* 1 on the CPU path (common/cpu): the kernels run on the CPU, every time is
 * the CPU's and labelled emulated, and nothing is compared with a ceiling. */
#ifdef CML_CPU_BACKEND
#define CML_LAB_EMULATED 1
#else
#define CML_LAB_EMULATED 0
#endif

/* A fresh r->rep for a run (or a size of --sweep): the lab's name, title
 * and unit (GB/s unless the lab says), the device, the seed, emulated. */
void cml_lab_new_report(cml_lab_run *r);

/* Times a step that passed its check: the median of --repeat runs after a
 * warm-up, into row (ms, rate). Returns 0 with row set to ERROR, or to
 * WRONG when a repeat checked with --check-every-run fails. */
int cml_lab_time(cml_lab_run *r, int step, cml_row *row);

/* --sweep (common/src/lab_sweep.c): the chosen step from 1 MiB to
 * --sweep-max bytes, doubling, each size prepared, checked, timed and
 * released, beside the copy kernel and cudaMemcpy on the same bytes
 * (measured at each size, in this run); the table, JSON ("sweep") or
 * Markdown page. On the CPU path the step alone, every time emulated, to
 * 4 MiB by default. Returns the exit status. */
int cml_lab_sweep(cml_lab_run *r);

/* Watch a device input: every checked run then fails ("changed its input
 * NAME") when the buffer's payload no longer hashes as host does (host:
 * the buf->bytes uploaded into it). Call after the upload, in prepare. */
void cml_lab_watch_input(cml_lab_run *r, const cml_dbuf *buf, const void *host, const char *name);

/* 1 when step s was chosen with --step. */
int cml_lab_selected(const cml_lab_run *r, int step);
/* The step's identifier ("tile"). */
const char *cml_lab_ident(const cml_lab_run *r, int step);

/* Fills row for a CUDA error (status CML_ROW_ERROR, the error in the note). */
void cml_lab_row_error(cml_row *row, const char *what, cudaError_t err);

/* Runs this program again under Nsight Compute: `--check-only --step
 * LIST ARGS...` with LIST the steps in `steps`, reading `metrics` of the
 * kernels that match filter. expected: launches expected (0: any).
 * Returns 1 with *c filled; 0 with the reason in why. */
int cml_lab_ncu(const cml_lab_run *r, unsigned steps, const char *const *args, const char *const *metrics,
                int nmetrics, const char *filter, int expected, cml_ncu_counts *c, char *why, size_t len);

/* --profile (common/src/lab_profile.c): one step (--step N, default the
 * lab's last) checked once, then run alone under Nsight Compute
 * (`--check-only --step N` and the lab's own options, as --sectors does),
 * reading one fixed list of metrics per launch of the lab's kernels (the
 * kit's own cml_* kernels left out): time, DRAM bytes against the bytes
 * the step must move (work(), for a lab in GB/s), DRAM throughput, L2 hit
 * rate, sectors per request, occupancy and its limit, issue slots, the top
 * warp stalls; each row with what it tells. Text, --json, or --markdown
 * (a page, or the region between <!-- profile:begin --> and
 * <!-- profile:end -->). A metric this ncu does not know is left out and
 * named, never shown as 0. Returns the exit status. */
int cml_lab_profile(cml_lab_run *r);
/* --profile's command line, after parsing: alone (with --step N, --json,
 * --markdown and the sizes), one GPU step; leaves that step alone in
 * r->args.steps, or says why not and exits 2. */
void cml_lab_profile_options(cml_lab_run *r);

/* A kernel's name as ncu prints it ("void k<256u, int>(const T1 *, T1 *,
 * unsigned long)") or the CPU path does ("k<256u,int>"), the same way for
 * both: no return type, no parameters, no spaces. */
void cml_lab_kernel_name(const char *name, char *buf, size_t len);

/* Appends a step's value to *c (ident from the step table). */
void cml_lab_counters_add(cml_lab_counters *c, const cml_lab_run *r, int step, const char *kernels, double value);
/* The counters as one JSON object: {"lab", "metric", "available",
 * "reason", "steps": [{"step", "ident", "kernels", "value"}]}. */
void cml_lab_counters_print_json(const char *lab, const cml_lab_counters *c, FILE *out);

/* 4063232 -> "4,063,232" into buf; returns buf. */
const char *cml_with_commas(double v, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* CML_LAB_RUNNER_H */
