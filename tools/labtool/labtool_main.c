/* labtool_main.c - command-line front end of labtool.
 * Exit status: 0 success, 1 invalid input (or check-skeleton mismatch),
 * 2 bad usage.  Errors go to stderr as "labtool: FILE:LINE: what is wrong". */
#include "labtool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char USAGE[] =
    "usage: labtool skeleton SOLUTION.cu OUT.cu\n"
    "       labtool check-skeleton SOLUTION.cu COMMITTED.cu\n"
    "       labtool mutate SOLUTION.cu MISTAKES.toml NAME OUT.cu\n"
    "       labtool mutate-lab SOLUTION_DIR MISTAKES.toml NAME OUT_DIR FILE...\n"
    "       labtool mistake-cmake MISTAKES.toml NAME OUT.cmake\n"
    "       labtool list MISTAKES.toml\n"
    "       labtool cpu-translate IN.cu OUT.cpp\n"
    "       labtool --help\n";

static const char HELP[] =
    "\n"
    "  skeleton        write the student skeleton of SOLUTION: lines from a\n"
    "                  '// BEGIN SOLUTION' line to an '// END SOLUTION' line are\n"
    "                  dropped, except '//@ code' lines, which become 'code'.\n"
    "                  Each region needs a '// ... TODO(step N)' comment above it.\n"
    "  check-skeleton  exit 1 if COMMITTED is not the skeleton of SOLUTION\n"
    "  mutate          write SOLUTION with mistake NAME applied (its find text\n"
    "                  must occur exactly once and is replaced)\n"
    "  mutate-lab      copy each FILE of a lab from SOLUTION_DIR to OUT_DIR, with\n"
    "                  mistake NAME applied to the file its 'file' key names (the\n"
    "                  first FILE when it has none)\n"
    "  mistake-cmake   write a CMake fragment setting MISTAKE_NAME, MISTAKE_SUMMARY,\n"
    "                  MISTAKE_STEP, MISTAKE_CAUGHT_BY, MISTAKE_EXPECT_FAILING,\n"
    "                  MISTAKE_EXPECT_MESSAGE and MISTAKE_FILE for mistake NAME\n"
    "  list            print name<TAB>step<TAB>caught_by<TAB>summary per mistake\n"
    "  cpu-translate   write IN.cu as C++ for the CPU path (common/cpu/README.md):\n"
    "                  launches and extern __shared__ rewritten, lines kept\n"
    "\n"
    "Exit status: 0 ok, 1 invalid input or skeleton mismatch, 2 bad usage.\n";

/* Each command returns 0, or 1 with a message in ERR. */
typedef int (*command_fn)(char **args, char *err, size_t errlen);

static int cmd_skeleton(char **args, char *err, size_t errlen)
{
    size_t len, olen;
    char *src = lt_read_file(args[0], &len, err, errlen), *out;
    int rc = 1;
    if (src && skeleton_generate(src, len, args[0], &out, &olen, err, errlen) == 0) {
        rc = lt_write_file(args[1], out, olen, err, errlen) != 0;
        free(out);
    }
    free(src);
    return rc;
}

static int cmd_check_skeleton(char **args, char *err, size_t errlen)
{
    size_t len, clen;
    char *src = lt_read_file(args[0], &len, err, errlen), *committed = NULL;
    int rc = 1;
    if (src && (committed = lt_read_file(args[1], &clen, err, errlen)) != NULL)
        rc = skeleton_check(src, len, args[0], committed, clen, args[1], NULL, err, errlen) != 0;
    free(src);
    free(committed);
    return rc;
}

/* Loads catalogue PATH and looks up NAME; on failure returns NULL with ERR set. */
static const struct mistake *load_one(const char *path, const char *name, struct mistake **ms,
                                      size_t *n, char *err, size_t errlen)
{
    const struct mistake *m;
    size_t i, o;
    if (mistakes_load(path, ms, n, err, errlen) != 0)
        return NULL;
    if ((m = mistakes_find(*ms, *n, name)) != NULL)
        return m;
    snprintf(err, errlen, "%s: no mistake named '%s' (known:", path, name);
    for (i = 0; i < *n && (o = strlen(err)) < errlen; i++)
        snprintf(err + o, errlen - o, "%s %s", i ? "," : "", (*ms)[i].name);
    if ((o = strlen(err)) < errlen)
        snprintf(err + o, errlen - o, "%s)", *n ? "" : " none");
    return NULL;
}

static int cmd_mutate(char **args, char *err, size_t errlen)
{
    struct mistake *ms = NULL;
    size_t n = 0, len, olen;
    const struct mistake *m;
    char *src = lt_read_file(args[0], &len, err, errlen), *out;
    int rc = 1;
    if (src && (m = load_one(args[1], args[2], &ms, &n, err, errlen)) != NULL &&
        mutate_apply(src, len, args[0], m, args[1], &out, &olen, err, errlen) == 0) {
        rc = lt_write_file(args[3], out, olen, err, errlen) != 0;
        free(out);
    }
    mistakes_free(ms, n);
    free(src);
    return rc;
}

/* args: SOLUTION_DIR MISTAKES.toml NAME OUT_DIR FILE... (NULL-terminated). */
static int cmd_mutate_lab(char **args, char *err, size_t errlen)
{
    struct mistake *ms = NULL;
    size_t n = 0, len, olen, k;
    const struct mistake *m = load_one(args[1], args[2], &ms, &n, err, errlen);
    const char *target;
    int rc = 1, found = 0;
    if (!m)
        return 1;
    target = m->file ? m->file : args[4];
    for (k = 4; args[k]; k++)
        found |= strcmp(args[k], target) == 0;
    if (!found) {
        snprintf(err, errlen, "%s:%d: mistake '%s' changes '%s', which is not one of the lab's files", args[1],
                 m->line, m->name, target);
        mistakes_free(ms, n);
        return 1;
    }
    for (k = 4; args[k]; k++) {
        char in_path[4096], out_path[4096];
        char *src, *out = NULL;
        snprintf(in_path, sizeof in_path, "%s/%s", args[0], args[k]);
        snprintf(out_path, sizeof out_path, "%s/%s", args[3], args[k]);
        if (!(src = lt_read_file(in_path, &len, err, errlen)))
            goto done;
        if (strcmp(args[k], target) == 0) {
            int bad = mutate_apply(src, len, in_path, m, args[1], &out, &olen, err, errlen) != 0;
            free(src);
            if (bad)
                goto done;
        } else {
            out = src;
            olen = len;
        }
        if (lt_write_file(out_path, out, olen, err, errlen) != 0) {
            free(out);
            goto done;
        }
        free(out);
    }
    rc = 0;
done:
    mistakes_free(ms, n);
    return rc;
}

static int cmd_mistake_cmake(char **args, char *err, size_t errlen)
{
    struct mistake *ms = NULL;
    size_t n = 0, olen;
    const struct mistake *m = load_one(args[0], args[1], &ms, &n, err, errlen);
    char *out;
    int rc = 1;
    if (m && mistake_cmake(m, &out, &olen) != 0)
        snprintf(err, errlen, "%s: out of memory", args[2]);
    else if (m) {
        rc = lt_write_file(args[2], out, olen, err, errlen) != 0;
        free(out);
    }
    mistakes_free(ms, n);
    return rc;
}

static int cmd_cpu_translate(char **args, char *err, size_t errlen)
{
    size_t len, olen;
    char *src = lt_read_file(args[0], &len, err, errlen), *out;
    int rc = 1;
    if (src && cpu_translate(src, len, args[0], &out, &olen, err, errlen) == 0) {
        rc = lt_write_file(args[1], out, olen, err, errlen) != 0;
        free(out);
    }
    free(src);
    return rc;
}

static int cmd_list(char **args, char *err, size_t errlen)
{
    struct mistake *ms;
    size_t n, i;
    if (mistakes_load(args[0], &ms, &n, err, errlen) != 0)
        return 1;
    for (i = 0; i < n; i++)
        printf("%s\t%lld\t%s\t%s\n", ms[i].name, ms[i].step, ms[i].caught_by, ms[i].summary);
    mistakes_free(ms, n);
    if (fflush(stdout) != 0) {
        snprintf(err, errlen, "<stdout>: write error");
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        int nargs;
        command_fn fn;
    } cmds[] = {
        {"skeleton", 2, cmd_skeleton},   {"check-skeleton", 2, cmd_check_skeleton},
        {"mutate", 4, cmd_mutate},       {"mistake-cmake", 3, cmd_mistake_cmake},
        {"list", 1, cmd_list},           {"mutate-lab", -5, cmd_mutate_lab},
        {"cpu-translate", 2, cmd_cpu_translate},
    };
    static char err[16384];
    size_t i;

    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
                     strcmp(argv[1], "help") == 0)) {
        fputs(USAGE, stdout);
        fputs(HELP, stdout);
        return 0;
    }
    for (i = 0; argc > 1 && i < sizeof cmds / sizeof cmds[0]; i++) {
        if (strcmp(argv[1], cmds[i].name) != 0)
            continue;
        /* nargs < 0: at least -nargs arguments */
        if (cmds[i].nargs >= 0 ? argc - 2 != cmds[i].nargs : argc - 2 < -cmds[i].nargs) {
            fprintf(stderr, "labtool: '%s' takes %s%d arguments, got %d\n%s", cmds[i].name,
                    cmds[i].nargs < 0 ? "at least " : "", abs(cmds[i].nargs), argc - 2, USAGE);
            return 2;
        }
        if (cmds[i].fn(argv + 2, err, sizeof err) == 0)
            return 0;
        fprintf(stderr, "labtool: %s\n", err);
        return 1;
    }
    if (argc > 1)
        fprintf(stderr, "labtool: unknown command '%s'\n%s", argv[1], USAGE);
    else
        fprintf(stderr, "labtool: no command given\n%s", USAGE);
    return 2;
}
