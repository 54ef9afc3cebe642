/* runner.c: the command line every lab runner shares (see cml_runner.h). */
#include "cml/cml_runner.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cml/cml_args.h"
#include "cml/cml_check.h"
#include "cml/cml_device.h"

void cml_runner_init(cml_runner_args *a, const char *argv0, const char *fallback, int nsteps, int repeat,
                     void (*usage)(FILE *out))
{
    memset(a, 0, sizeof *a);
    const char *slash = argv0 ? strrchr(argv0, '/') : NULL;
    a->prog = slash ? slash + 1 : (argv0 && argv0[0] ? argv0 : fallback);
    a->usage = usage;
    a->nsteps = nsteps;
    a->steps = nsteps >= 32 ? ~0u : (1u << nsteps) - 1u;
    a->repeat = repeat;
}

void cml_runner_bad_arg(const cml_runner_args *a, const char *opt, const char *value, const char *expect)
{
    fprintf(stderr, "%s: %s '%s' is not valid: expected %s\n", a->prog, opt, value ? value : "", expect);
    a->usage(stderr);
    exit(CML_EXIT_USAGE);
}

void cml_runner_unknown(const cml_runner_args *a, const char *arg)
{
    fprintf(stderr, "%s: unknown argument '%s'\n", a->prog, arg);
    a->usage(stderr);
    exit(CML_EXIT_USAGE);
}

int cml_runner_arg(cml_runner_args *a, int argc, char **argv, int *i)
{
    const char *opt = argv[*i];
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (strcmp(opt, "--probe") == 0) {
        cml_device_info dev;
        char why[256];
        int rc = cml_device_probe(&dev, why, sizeof why);
        if (rc != CML_PROBE_OK) {   /* 77 only where there is no GPU; a GPU that fails is an error */
            printf("%s\n", why);
            exit(rc == CML_PROBE_NO_GPU ? CML_EXIT_NO_GPU : CML_EXIT_FAIL);
        }
        exit(CML_EXIT_OK);
    } else if (strcmp(opt, "--step") == 0) {
        if (!cml_parse_steps(v, a->nsteps, &a->steps)) {
            char expect[160];
            snprintf(expect, sizeof expect, "all, a step 1-%d, a list like 1,3 or a range like 1-%d", a->nsteps,
                     a->nsteps);
            cml_runner_bad_arg(a, opt, v, expect);
        }
    } else if (strcmp(opt, "--repeat") == 0) {
        if (!cml_parse_int(v, 1, 100000, &a->repeat))
            cml_runner_bad_arg(a, opt, v, "a number of runs from 1 to 100000");
    } else if (strcmp(opt, "--markdown") == 0) {
        if (v == NULL || v[0] == '\0' || v[0] == '-')
            cml_runner_bad_arg(a, opt, v, "a file name");
        if (a->nmarkdown == CML_RUNNER_MAX_MARKDOWN)
            cml_runner_bad_arg(a, opt, v, "at most 4 --markdown files");
        a->markdown[a->nmarkdown++] = v;
    } else if (strcmp(opt, "--json") == 0) {
        a->json = 1;
        return 1;
    } else if (strcmp(opt, "--check-only") == 0) {
        a->check_only = 1;
        return 1;
    } else {
        return 0;
    }
    ++*i;  /* the option's value */
    return 1;
}

int cml_runner_write_markdown(const cml_runner_args *a, const cml_report *rep)
{
    for (int k = 0; k < a->nmarkdown; ++k) {
        if (cml_report_write_markdown(rep, a->markdown[k]) != 0) {
            fprintf(stderr, "%s: cannot write %s: %s\n", a->prog, a->markdown[k], strerror(errno));
            return CML_EXIT_FAIL;
        }
    }
    return CML_EXIT_OK;
}
