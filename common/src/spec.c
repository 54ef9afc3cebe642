/* A lab's spec (cml_spec.h): its case lists, and the grader's verifier. */
#include "cml/cml_spec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPEC_MAX_STEP 31

cml_case *cml_case_add(cml_cases *list, uint32_t kind, uint64_t a, uint64_t b, uint64_t count, const char *fmt, ...)
{
    if (list->n == list->cap) {
        size_t cap = list->cap ? 2 * list->cap : 32;
        cml_case *v = (cml_case *)realloc(list->v, cap * sizeof *v);
        if (!v)
            return NULL;
        list->v = v;
        list->cap = cap;
    }
    uint32_t *data = (uint32_t *)calloc(count ? count : 1, 4);
    if (!data)
        return NULL;
    cml_case *c = &list->v[list->n++];
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->a = a;
    c->b = b;
    c->count = count;
    c->data = data;
    c->where = CML_IN_BOTH;
    c->group = list->group;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->label, sizeof c->label, fmt, ap);
    va_end(ap);
    return c;
}

void cml_cases_free(cml_cases *list)
{
    for (size_t i = 0; i < list->n; ++i)
        free(list->v[i].data);
    free(list->v);
    memset(list, 0, sizeof *list);
}

int cml_case_runs(const cml_case *c, int step)
{
    return c->steps == 0 || (step >= 0 && step <= SPEC_MAX_STEP && (c->steps >> step) & 1u);
}

/* Keeps the cases of list from `from` on that `where` asks for. */
static void keep_only(cml_cases *list, size_t from, int where)
{
    size_t k = from;
    for (size_t i = from; i < list->n; ++i) {
        if (list->v[i].where & where)
            list->v[k++] = list->v[i];
        else
            free(list->v[i].data);
    }
    list->n = k;
}

int cml_spec_cases(const cml_spec *spec, uint64_t seed, int cpu, int where, cml_cases *list)
{
    memset(list, 0, sizeof *list);
    for (size_t g = 0; g < spec->ngroups; ++g) {
        size_t from = list->n;
        int all = spec->groups[g].where;
        if (all && !(all & where))
            continue; /* a group none of whose cases is wanted: never made */
        list->group = (int)g;
        if (!spec->groups[g].make(list, seed, cpu))
            return 0;
        for (size_t i = from; all && i < list->n; ++i)
            list->v[i].where = all;
        keep_only(list, from, where);
    }
    return 1;
}

int cml_spec_group_cases(const cml_spec *spec, const char *group, uint64_t seed, int cpu, int step,
                         cml_cases *list)
{
    memset(list, 0, sizeof *list);
    for (size_t g = 0; g < spec->ngroups; ++g) {
        if (strcmp(spec->groups[g].name, group) != 0)
            continue;
        list->group = (int)g;
        if (!spec->groups[g].make(list, seed, cpu))
            return 0;
        for (size_t i = 0; spec->groups[g].where && i < list->n; ++i)
            list->v[i].where = spec->groups[g].where;
        size_t k = 0;
        for (size_t i = 0; i < list->n; ++i) {
            if ((list->v[i].where & CML_IN_TESTS) && cml_case_runs(&list->v[i], step))
                list->v[k++] = list->v[i];
            else
                free(list->v[i].data);
        }
        list->n = k;
        return 1;
    }
    return 0; /* no such group: a spelling mistake in the tests */
}

int cml_spec_outside_write(const uint32_t *before, const uint32_t *after, uint64_t guard, const char *name, char *msg,
                           size_t cap)
{
    for (uint64_t k = 0; k < guard; ++k) /* the zone before ends at the output's first word */
        if (before[k] != 0xffffffffu) {
            snprintf(msg, cap, "a write outside %s, %llu floats before %s", name, (unsigned long long)(guard - k), name);
            return 1;
        }
    for (uint64_t k = 0; k < guard; ++k)
        if (after[k] != 0xffffffffu) {
            snprintf(msg, cap, "a write outside %s, %llu floats past %s's end", name, (unsigned long long)(k + 1), name);
            return 1;
        }
    return 0;
}

/* ------------------------------------------------------------------ the verifier */

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; ++s) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", (unsigned)(unsigned char)*s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

static int describe(const cml_spec *spec, const cml_cases *list)
{
    printf("{\"lab\": ");
    json_string(stdout, spec->lab);
    printf(", \"host_copies_in\": ");
    json_string(stdout, spec->host_copies_in ? spec->host_copies_in : "");
    printf(",\n \"cases\": [");
    for (size_t i = 0; i < list->n; ++i) {
        const cml_case *c = &list->v[i];
        printf("%s\n  {\"kind\": %" PRIu32 ", \"a\": %" PRIu64 ", \"b\": %" PRIu64 ", \"count\": %" PRIu64
               ", \"out_bytes\": %" PRIu64 ", \"limit\": %d, \"counters_only\": %d, \"group\": ",
               i ? "," : "", c->kind, c->a, c->b, c->count, spec->out_bytes(c), c->limit ? 1 : 0,
               c->where == CML_FOR_COUNTERS);
        json_string(stdout, spec->groups[c->group].name);
        printf(", \"label\": ");
        json_string(stdout, c->label);
        printf(", \"steps\": [");
        for (int s = 0, first = 1; s <= SPEC_MAX_STEP && c->steps; ++s)
            if ((c->steps >> s) & 1u) {
                printf("%s%d", first ? "" : ", ", s);
                first = 0;
            }
        printf("]}");
    }
    printf("],\n \"timing\": {");
    for (int s = 1, first = 1; s <= SPEC_MAX_STEP; ++s) {
        cml_spec_timing t;
        memset(&t, 0, sizeof t);
        if (!spec->timing || !spec->timing(s, &t))
            continue;
        printf("%s\n  \"%d\": {\"kind\": %" PRIu32 ", \"a\": %" PRIu64 ", \"b\": %" PRIu64 ", \"count\": %" PRIu64
               ", \"fill\": %" PRIu32 ", \"traffic\": %" PRIu64 ", \"flops\": %" PRIu64
               ", \"close_rel\": %.17g, \"close_abs\": %.17g, \"label\": ",
               first ? "" : ",", s, t.kind, t.a, t.b, t.count, t.fill, t.traffic, t.flops, t.close_rel, t.close_abs);
        json_string(stdout, t.label);
        printf("}");
        first = 0;
    }
    printf("}}\n");
    return ferror(stdout) ? 1 : 0;
}

static int write_data(const cml_cases *list, const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "verify: cannot write %s: %s\n", path, strerror(errno));
        return 1;
    }
    for (size_t i = 0; i < list->n; ++i)
        if (fwrite(list->v[i].data, 4, list->v[i].count, f) != list->v[i].count)
            break;
    if (fclose(f) != 0 || ferror(stdout)) {
        fprintf(stderr, "verify: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

static int read_exact(FILE *f, void *p, size_t n) { return fread(p, 1, n, f) == n; }

/* Reads past a record another run judges (at most `most` bytes of output
 * and of input). 0 when the file ends or is malformed there. */
static int skip_record(FILE *f, uint64_t most)
{
    int32_t err = 0, terr = 0;
    uint64_t nb = 0, ib = 0;
    uint32_t nrep = 1;
    return read_exact(f, &err, 4) && read_exact(f, &nb, 8) && nb <= most && fseek(f, (long)nb, SEEK_CUR) == 0 &&
           read_exact(f, &ib, 8) && ib <= most && fseek(f, (long)ib, SEEK_CUR) == 0 && read_exact(f, &nrep, 4) &&
           nrep == 0 && read_exact(f, &terr, 4);
}

/* One checked case's record of a harness output file (harness.h): its
 * verdict line on stdout. 0 when the file ends or is malformed there. */
static int judge_record(const cml_spec *spec, FILE *f, const cml_case *c, int step)
{
    int32_t err = 0, terr = 0;
    uint64_t nb = 0, ib = 0;
    uint32_t nrep = 0;
    uint64_t most = spec->out_bytes(c);
    if (!read_exact(f, &err, 4) || !read_exact(f, &nb, 8) || nb > (most > 4 ? most : 4))
        return 0;
    unsigned char *out = (unsigned char *)malloc(nb ? nb : 1);
    unsigned char *after = (unsigned char *)malloc(c->count ? 4 * c->count : 1);
    int ok = out && after && read_exact(f, out, nb) && read_exact(f, &ib, 8) && ib == 4 * c->count &&
             read_exact(f, after, ib) && read_exact(f, &nrep, 4) && nrep == 0 && read_exact(f, &terr, 4);
    if (ok) {
        char msg[1024] = "";
        if (err != 0)
            printf("error %" PRId32 "\n", err);
        else if (!spec->judge(c, step, out, nb, msg, sizeof msg))
            printf("wrong\t%s\n", msg[0] ? msg : "wrong output");
        else if (memcmp(after, c->data, ib) != 0)
            printf("changed\n");
        else
            printf("right\n");
    }
    free(out);
    free(after);
    return ok;
}

static int judge(const cml_spec *spec, const cml_cases *list, const char *path, const char *entries)
{
    size_t n = 1;
    for (const char *p = entries; *p; ++p)
        n += *p == ',';
    int *steps = (int *)calloc(n, sizeof *steps);
    size_t *idx = (size_t *)calloc(n, sizeof *idx), k = 0, skip = (size_t)-1;
    if (!steps || !idx)
        return 2;
    for (const char *p = entries; *p && k < n;) {
        char *end;
        long s = strtol(p, &end, 10);
        size_t i = list->n;
        if (end != p && *end == ':' && end[1] == 'x') { /* a record another seed's run judges */
            i = skip;
            end += 2;
        } else if (end != p && *end == ':' && end[1] >= '0' && end[1] <= '9') {
            i = (size_t)strtoull(end + 1, &end, 10);
        }
        if (s < 1 || s > SPEC_MAX_STEP || (i >= list->n && i != skip) || (*end != ',' && *end != '\0')) {
            fprintf(stderr, "verify: bad entry in '%s' (STEP:CASE or STEP:x, CASE below %zu)\n", entries, list->n);
            return 2;
        }
        steps[k] = (int)s;
        idx[k++] = (size_t)i;
        p = *end ? end + 1 : end;
    }
    FILE *f = fopen(path, "rb");
    char magic[4];
    uint32_t version = 0, ncases = 0;
    int good = f && read_exact(f, magic, 4) && memcmp(magic, "CMLO", 4) == 0 && read_exact(f, &version, 4) &&
               version == 2 && read_exact(f, &ncases, 4) && ncases == k;
    const uint64_t most = (uint64_t)4 << 30; /* harness.h's largest case (HN_MAX_COUNT words) */
    for (size_t j = 0; j < k; ++j) {
        if (idx[j] == skip) {
            good = good && skip_record(f, most);
            continue;
        }
        good = good && judge_record(spec, f, &list->v[idx[j]], steps[j]);
        if (!good)
            printf("missing\n");
    }
    if (f)
        fclose(f);
    free(steps);
    free(idx);
    return ferror(stdout) ? 1 : 0;
}

static int usage(const char *prog)
{
    fprintf(stderr,
            "usage: %s describe SEED [--cpu]\n"
            "       %s data SEED [--cpu] FILE\n"
            "       %s judge SEED [--cpu] OUTPUT STEP:CASE[,STEP:CASE...]\n"
            "The kit's verifier of this lab's cases (common/include/cml/cml_spec.h).\n",
            prog, prog, prog);
    return 2;
}

int cml_spec_main(const cml_spec *spec, int argc, char **argv)
{
    if (argc < 3)
        return usage(argv[0]);
    char *end;
    errno = 0;
    unsigned long long seed = strtoull(argv[2], &end, 0);
    if (errno || *end || end == argv[2]) {
        fprintf(stderr, "%s: the seed must be a number, not '%s'\n", argv[0], argv[2]);
        return 2;
    }
    int at = 3, cpu = 0;
    if (at < argc && strcmp(argv[at], "--cpu") == 0) {
        cpu = 1;
        ++at;
    }
    const char *cmd = argv[1];
    int want = strcmp(cmd, "describe") == 0 ? 0 : strcmp(cmd, "data") == 0 ? 1 : strcmp(cmd, "judge") == 0 ? 2 : -1;
    if (want < 0 || argc - at != (int[]){0, 1, 2}[want])
        return usage(argv[0]);
    cml_cases list;
    if (!cml_spec_cases(spec, (uint64_t)seed, cpu, CML_IN_GRADER | CML_FOR_COUNTERS, &list)) {
        fprintf(stderr, "%s: out of memory making the cases\n", argv[0]);
        return 2;
    }
    int rc = want == 0 ? describe(spec, &list) : want == 1 ? write_data(&list, argv[at])
                                                           : judge(spec, &list, argv[at], argv[at + 1]);
    cml_cases_free(&list);
    return rc;
}
