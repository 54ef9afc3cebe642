/* cml_runner.h: the shared options of the runners' command line (--step,
 * --repeat, --json, --markdown, --check-only, --probe): spelling, limits and
 * messages. The runner library (cml_lab_runner.h) parses the rest around
 * these; runners use that, not this header directly. */
#ifndef CML_RUNNER_H
#define CML_RUNNER_H

#include <stdio.h>
#include "cml_report.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CML_RUNNER_MAX_MARKDOWN 4

typedef struct cml_runner_args {
    const char *prog;          /* the program's name, for messages */
    void (*usage)(FILE *out);  /* prints the runner's usage lines */
    int nsteps;                /* steps in the lab's table */
    unsigned steps;            /* --step: bit s-1 for step s (default: all) */
    int repeat;                /* --repeat: timed runs (default: the runner's) */
    int json;                  /* --json */
    int check_only;            /* --check-only */
    const char *markdown[CML_RUNNER_MAX_MARKDOWN]; /* --markdown FILE, in order */
    int nmarkdown;
} cml_runner_args;

/* Fills a with the defaults: every step selected, `repeat` runs, prog from
 * argv0 without its directory (or fallback when argv0 is NULL). */
void cml_runner_init(cml_runner_args *a, const char *argv0, const char *fallback, int nsteps, int repeat,
                     void (*usage)(FILE *out));

/* When argv[*i] is one of the shared options, takes it (and its value,
 * advancing *i) and returns 1; returns 0 for an option the runner handles
 * itself. A bad value prints what was expected and the usage, and exits
 * with CML_EXIT_USAGE; --probe exits with 0 (usable GPU) or CML_EXIT_NO_GPU,
 * after printing the reason. */
int cml_runner_arg(cml_runner_args *a, int argc, char **argv, int *i);

/* "PROG: OPT 'VALUE' is not valid: expected EXPECT", the usage, exit 2. */
void cml_runner_bad_arg(const cml_runner_args *a, const char *opt, const char *value, const char *expect);
/* "PROG: unknown argument 'ARG'", the usage, exit 2. */
void cml_runner_unknown(const cml_runner_args *a, const char *arg);

/* Writes rep to every --markdown file. Returns CML_EXIT_OK, or
 * CML_EXIT_FAIL after saying which file could not be written. */
int cml_runner_write_markdown(const cml_runner_args *a, const cml_report *rep);

#ifdef __cplusplus
}
#endif
#endif /* CML_RUNNER_H */
