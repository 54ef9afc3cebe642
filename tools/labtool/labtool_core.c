/* labtool_core.c - skeleton generation, mistake catalogue, mutation and
 * CMake export.  See labtool.h for the contracts. */
#include "labtool.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BEGIN_MARK "// BEGIN SOLUTION"
#define END_MARK "// END SOLUTION"

static int errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- files --------------------------------------------------------------- */

char *lt_read_file(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    char *d = NULL;
    size_t n = 0, cap = 0;
    if (!f) {
        errf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    for (;;) {
        size_t want, got;
        if (cap - n < 4096) {
            char *nd = realloc(d, cap = cap ? 2 * cap : 65536);
            if (!nd) {
                free(d);
                fclose(f);
                errf(err, errlen, "%s: out of memory", path);
                return NULL;
            }
            d = nd;
        }
        want = cap - n - 1;
        got = fread(d + n, 1, want, f);
        n += got;
        if (got < want)
            break;
    }
    if (ferror(f)) {
        errf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        free(d);
        fclose(f);
        return NULL;
    }
    fclose(f);
    d[n] = '\0';
    *len = n;
    return d;
}

int lt_write_file(const char *path, const char *data, size_t len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "wb");
    int ok;
    if (!f)
        return errf(err, errlen, "%s: cannot create: %s", path, strerror(errno));
    ok = fwrite(data, 1, len, f) == len;
    ok = (fclose(f) == 0) && ok;
    if (!ok) {
        errf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        remove(path);
        return -1;
    }
    return 0;
}

/* ---- growable output buffer ---------------------------------------------- */

struct buf {
    char *d;
    size_t n, cap;
    int oom;
};

static void put(struct buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        char *d;
        while (cap < b->n + n + 1)
            cap *= 2;
        if (!(d = realloc(b->d, cap))) {
            b->oom = 1;
            return;
        }
        b->d = d;
        b->cap = cap;
    }
    memcpy(b->d + b->n, s, n);
    b->n += n;
    b->d[b->n] = '\0';
}

static void puts_(struct buf *b, const char *s) { put(b, s, strlen(s)); }

/* ---- skeleton ------------------------------------------------------------ */

struct line {
    const char *s; /* not NUL-terminated; no '\n' and no CR before it */
    size_t n;
};

static struct line *split_lines(const char *text, size_t len, size_t *count, int *final_nl)
{
    const char *p = text, *end = text + len;
    size_t n = 0, cap = 1, i;
    struct line *ls;
    for (i = 0; i < len; i++)
        cap += text[i] == '\n';
    if (!(ls = malloc(cap * sizeof *ls)))
        return NULL;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        ls[n].s = p;
        ls[n].n = (size_t)((nl ? nl : end) - p);
        if (nl && ls[n].n > 0 && p[ls[n].n - 1] == '\r')
            ls[n].n--;
        n++;
        p = nl ? nl + 1 : end;
    }
    *count = n;
    *final_nl = len > 0 && text[len - 1] == '\n';
    return ls;
}

static size_t indent_of(const struct line *l)
{
    size_t i = 0;
    while (i < l->n && (l->s[i] == ' ' || l->s[i] == '\t'))
        i++;
    return i;
}

static int starts_with(const struct line *l, size_t at, const char *prefix)
{
    size_t k = strlen(prefix);
    return l->n - at >= k && memcmp(l->s + at, prefix, k) == 0;
}

static int is_marker(const struct line *l, const char *marker)
{
    size_t i = indent_of(l);
    if (!starts_with(l, i, marker))
        return 0;
    for (i += strlen(marker); i < l->n; i++)
        if (l->s[i] != ' ' && l->s[i] != '\t')
            return 0;
    return 1;
}

/* Does the line contain "TODO(step N)" with decimal N >= 1? */
static int has_todo(const struct line *l)
{
    static const char pfx[] = "TODO(step ";
    size_t i, k = sizeof pfx - 1;
    for (i = 0; i + k <= l->n; i++) {
        size_t j = i + k;
        int nonzero = 0;
        if (memcmp(l->s + i, pfx, k) != 0)
            continue;
        for (; j < l->n && l->s[j] >= '0' && l->s[j] <= '9'; j++)
            nonzero |= l->s[j] != '0';
        if (nonzero && j < l->n && l->s[j] == ')')
            return 1;
    }
    return 0;
}

/* The "//" comment block right above line I (stopping at markers) has a TODO. */
static int todo_above(const struct line *ls, size_t i)
{
    while (i-- > 0) {
        const struct line *l = &ls[i];
        if (!starts_with(l, indent_of(l), "//") || is_marker(l, BEGIN_MARK) || is_marker(l, END_MARK))
            return 0;
        if (has_todo(l))
            return 1;
    }
    return 0;
}

int skeleton_generate(const char *src, size_t len, const char *src_name,
                      char **out, size_t *out_len, char *err, size_t errlen)
{
    size_t n, i, open = 0; /* line of the open BEGIN, 0 when none */
    int final_nl;
    struct line *ls = split_lines(src, len, &n, &final_nl);
    char *res = ls ? malloc(len + 1) : NULL, *o = res; /* output never grows */

    if (!res) {
        free(ls);
        return errf(err, errlen, "%s: out of memory", src_name);
    }
    for (i = 0; i < n; i++) {
        const struct line *l = &ls[i];
        size_t ind = indent_of(l), k = ind + 3;
        if (is_marker(l, BEGIN_MARK)) {
            if (open) {
                errf(err, errlen, "%s:%zu: nested BEGIN SOLUTION (the region opened at line %zu is still open)", src_name, i + 1, open);
                goto fail;
            }
            if (!todo_above(ls, i)) {
                errf(err, errlen, "%s:%zu: solution region at line %zu has no TODO(step N) comment right above it", src_name, i + 1, i + 1);
                goto fail;
            }
            open = i + 1;
            continue;
        }
        if (is_marker(l, END_MARK)) {
            if (!open) {
                errf(err, errlen, "%s:%zu: END SOLUTION without an open BEGIN SOLUTION", src_name, i + 1);
                goto fail;
            }
            open = 0;
            continue;
        }
        if (starts_with(l, ind, "//@")) {
            if (!open) {
                errf(err, errlen, "%s:%zu: //@ stub line outside a BEGIN/END SOLUTION region", src_name, i + 1);
                goto fail;
            }
            if (k < l->n && l->s[k] == ' ')
                k++;
            memcpy(o, l->s, ind);
            memcpy(o + ind, l->s + k, l->n - k);
            o += ind + l->n - k;
        } else if (!open) {
            memcpy(o, l->s, l->n);
            o += l->n;
        } else {
            continue;
        }
        if (i + 1 < n || final_nl)
            *o++ = '\n';
    }
    if (open) {
        errf(err, errlen, "%s:%zu: BEGIN SOLUTION is never closed by an END SOLUTION", src_name, open);
        goto fail;
    }
    free(ls);
    *o = '\0';
    *out = res;
    *out_len = (size_t)(o - res);
    return 0;
fail:
    free(ls);
    free(res);
    return -1;
}

/* Writes the line starting at offset START of B (LEN bytes) into DST for a
 * diff report: at most 120 characters, CR and control bytes escaped. */
static void describe_line(const char *b, size_t len, size_t start, char *dst, size_t cap)
{
    const char *nl = start < len ? memchr(b + start, '\n', len - start) : NULL;
    size_t end = nl ? (size_t)(nl - b) : len, i, o = 0, chars = 0;
    if (start >= len) {
        snprintf(dst, cap, "<end of file>");
        return;
    }
    for (i = start; i < end && o + 40 < cap; i++) {
        unsigned char c = (unsigned char)b[i];
        if ((c & 0xC0) != 0x80 && chars++ == 120) /* a UTF-8 lead or ASCII byte */
            break;
        if (c == '\r')
            dst[o++] = '\\', dst[o++] = 'r';
        else if (c < 0x20 && c != '\t')
            o += (size_t)snprintf(dst + o, cap - o, "\\x%02X", (unsigned)c);
        else
            dst[o++] = (char)c;
    }
    snprintf(dst + o, cap - o, "%s%s", i < end ? "..." : "", nl ? "" : " <no newline at end of file>");
}

int skeleton_check(const char *src, size_t len, const char *src_name,
                   const char *committed, size_t clen, const char *committed_name,
                   size_t *diff_line, char *msg, size_t msglen)
{
    char *gen, expected[600], actual[600];
    size_t glen, o = 0, k, line = 1, start = 0;
    if (skeleton_generate(src, len, src_name, &gen, &glen, msg, msglen) != 0)
        return -1;
    while (o < glen && o < clen && gen[o] == committed[o])
        o++;
    if (o == glen && o == clen) {
        free(gen);
        return 0;
    }
    for (k = 0; k < o; k++)
        if (gen[k] == '\n')
            line++, start = k + 1;
    describe_line(gen, glen, start, expected, sizeof expected);
    describe_line(committed, clen, start, actual, sizeof actual);
    free(gen);
    if (diff_line)
        *diff_line = line;
    snprintf(msg, msglen,
             "%s differs from the skeleton generated from %s at line %zu\n"
             "  expected: %s\n  actual:   %s\n"
             "  A student's edits make this kit check fail, by design: check your work with\n"
             "  `cmake --workflow --preset progress` instead. Kit maintainers who changed the\n"
             "  solution: docs/adding-a-lab.md says how to regenerate the skeleton.",
             committed_name, src_name, line, expected, actual);
    return 1;
}

/* ---- mistake catalogue --------------------------------------------------- */

enum { K_NAME, K_SUMMARY, K_STEP, K_CAUGHT_BY, K_EXPECT_FAILING, K_EXPECT_MESSAGE, K_FIND, K_REPLACE, K_FILE, K_GPU_ONLY, K_COUNT };
static const char *const KEYS[K_COUNT] = {"name", "summary", "step", "caught_by",
                                          "expect_failing", "expect_message", "find", "replace", "file", "gpu_only"};
static const char *const CAUGHT_BY[] = {"tests", "memcheck", "racecheck", "synccheck", "initcheck", "counters"};

static int to_mistake(struct toml_table *t, const char *fname, struct mistake *m, char *err, size_t errlen)
{
    struct toml_kv *kv[K_COUNT] = {0};
    const char *name;
    size_t i;
    int k, ok = 0;

    for (i = 0; i < t->n; i++) {
        struct toml_kv *p = &t->kv[i];
        for (k = 0; k < K_COUNT && strcmp(p->key, KEYS[k]) != 0; k++)
            ;
        if (k == K_COUNT)
            return errf(err, errlen, "%s:%d: unknown key '%s' (a [[mistake]] has name, summary, step, caught_by, expect_failing, expect_message, find, replace, file, gpu_only)", fname, p->line, p->key);
        if ((k == K_STEP) != (p->type == TOML_INTEGER))
            return errf(err, errlen, "%s:%d: '%s' must be %s", fname, p->line, p->key, k == K_STEP ? "an integer" : "a string");
        kv[k] = p;
    }
    if (!kv[K_NAME])
        return errf(err, errlen, "%s:%d: this [[mistake]] has no 'name' key", fname, t->line);
    name = kv[K_NAME]->str;
    for (i = 0; name[i]; i++)
        if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') || name[i] == '_'))
            break;
    if (i == 0 || name[i])
        return errf(err, errlen, "%s:%d: mistake name \"%s\" must match [a-z0-9_]+", fname, kv[K_NAME]->line, name);
    for (k = 0; k < K_COUNT; k++)
        if (!kv[k] && k != K_EXPECT_FAILING && k != K_EXPECT_MESSAGE && k != K_FILE && k != K_GPU_ONLY)
            return errf(err, errlen, "%s:%d: mistake '%s' has no '%s' key", fname, t->line, name, KEYS[k]);
    if (!kv[K_SUMMARY]->str[0] || strchr(kv[K_SUMMARY]->str, '\n'))
        return errf(err, errlen, "%s:%d: the summary of mistake '%s' must be one non-empty line", fname, kv[K_SUMMARY]->line, name);
    if (kv[K_STEP]->num < 1)
        return errf(err, errlen, "%s:%d: the step of mistake '%s' must be >= 1", fname, kv[K_STEP]->line, name);
    for (i = 0; i < sizeof CAUGHT_BY / sizeof CAUGHT_BY[0]; i++)
        ok |= strcmp(kv[K_CAUGHT_BY]->str, CAUGHT_BY[i]) == 0;
    if (!ok)
        return errf(err, errlen, "%s:%d: mistake '%s': caught_by must be one of tests, memcheck, racecheck, synccheck, initcheck, counters", fname, kv[K_CAUGHT_BY]->line, name);
    if (!kv[K_EXPECT_FAILING] && strcmp(kv[K_CAUGHT_BY]->str, "tests") == 0)
        return errf(err, errlen, "%s:%d: mistake '%s' is caught_by = \"tests\" and so needs an 'expect_failing' key", fname, t->line, name);
    if (!kv[K_FIND]->str[0])
        return errf(err, errlen, "%s:%d: the find text of mistake '%s' is empty", fname, kv[K_FIND]->line, name);
    if (kv[K_GPU_ONLY] && (!kv[K_GPU_ONLY]->str[0] || strchr(kv[K_GPU_ONLY]->str, '\n')))
        return errf(err, errlen, "%s:%d: gpu_only of mistake '%s' must say in one line why the CPU path cannot catch it", fname, kv[K_GPU_ONLY]->line, name);
    if (kv[K_GPU_ONLY] && strcmp(kv[K_CAUGHT_BY]->str, "tests") != 0)
        return errf(err, errlen, "%s:%d: gpu_only of mistake '%s' goes with caught_by = \"tests\" only", fname, kv[K_GPU_ONLY]->line, name);
    if (kv[K_FILE] && (!kv[K_FILE]->str[0] || strpbrk(kv[K_FILE]->str, "/\\\n") || kv[K_FILE]->str[0] == '.'))
        return errf(err, errlen, "%s:%d: the file of mistake '%s' must be a plain file name in the lab's folder", fname, kv[K_FILE]->line, name);

    m->step = kv[K_STEP]->num;
    m->line = t->line;
    m->find_line = kv[K_FIND]->line;
    {
        char **dst[K_COUNT] = {&m->name, &m->summary, NULL, &m->caught_by, &m->expect_failing,
                               &m->expect_message, &m->find, &m->replace, &m->file, &m->gpu_only};
        for (k = 0; k < K_COUNT; k++)
            if (dst[k] && kv[k]) { /* take ownership from the document */
                *dst[k] = kv[k]->str;
                kv[k]->str = NULL;
            }
    }
    return 0;
}

int mistakes_parse(const char *text, size_t len, const char *fname,
                   struct mistake **out, size_t *count, char *err, size_t errlen)
{
    struct toml_doc doc;
    struct mistake *ms;
    size_t i, j, n;

    if (toml_parse(text, len, fname, "mistake", &doc, err, errlen) != 0)
        return -1;
    n = doc.n;
    if (!(ms = calloc(n ? n : 1, sizeof *ms))) {
        toml_free(&doc);
        return errf(err, errlen, "%s: out of memory", fname);
    }
    for (i = 0; i < n; i++) {
        if (to_mistake(&doc.tables[i], fname, &ms[i], err, errlen) != 0)
            goto fail;
        for (j = 0; j < i; j++)
            if (strcmp(ms[j].name, ms[i].name) == 0) {
                errf(err, errlen, "%s:%d: duplicate mistake name '%s' (first used by the [[mistake]] at line %d)", fname, ms[i].line, ms[i].name, ms[j].line);
                goto fail;
            }
    }
    toml_free(&doc);
    *out = ms;
    *count = n;
    return 0;
fail:
    toml_free(&doc);
    mistakes_free(ms, n);
    return -1;
}

int mistakes_load(const char *path, struct mistake **out, size_t *count, char *err, size_t errlen)
{
    size_t len;
    char *text = lt_read_file(path, &len, err, errlen);
    int rc;
    if (!text)
        return -1;
    rc = mistakes_parse(text, len, path, out, count, err, errlen);
    free(text);
    return rc;
}

void mistakes_free(struct mistake *ms, size_t count)
{
    size_t i;
    for (i = 0; ms && i < count; i++) {
        free(ms[i].name);
        free(ms[i].summary);
        free(ms[i].caught_by);
        free(ms[i].expect_failing);
        free(ms[i].file);
        free(ms[i].expect_message);
        free(ms[i].find);
        free(ms[i].replace);
        free(ms[i].gpu_only);
    }
    free(ms);
}

const struct mistake *mistakes_find(const struct mistake *ms, size_t count, const char *name)
{
    size_t i;
    for (i = 0; i < count; i++)
        if (strcmp(ms[i].name, name) == 0)
            return &ms[i];
    return NULL;
}

/* ---- mutation and CMake export ------------------------------------------- */

int mutate_apply(const char *src, size_t len, const char *src_name,
                 const struct mistake *m, const char *catalogue,
                 char **out, size_t *out_len, char *err, size_t errlen)
{
    size_t flen = strlen(m->find), rlen = strlen(m->replace), slen = 0, i, hits = 0, at = 0;
    char *s = malloc(len + 1), *res;
    if (!s)
        return errf(err, errlen, "%s: out of memory", src_name);
    for (i = 0; i < len; i++) /* CRLF -> LF, so that multi-line finds match */
        if (!(src[i] == '\r' && i + 1 < len && src[i + 1] == '\n'))
            s[slen++] = src[i];
    for (i = 0; i + flen <= slen; i++)
        if (memcmp(s + i, m->find, flen) == 0 && hits++ == 0)
            at = i;
    if (hits != 1) {
        free(s);
        return errf(err, errlen, "%s:%d: mistake '%s': its find text occurs %zu times in %s but must occur exactly once (catalogue and solution have drifted apart)",
                    catalogue, m->find_line, m->name, hits, src_name);
    }
    if (!(res = malloc(slen - flen + rlen + 1))) {
        free(s);
        return errf(err, errlen, "%s: out of memory", src_name);
    }
    memcpy(res, s, at);
    memcpy(res + at, m->replace, rlen);
    memcpy(res + at + rlen, s + at + flen, slen - at - flen);
    *out_len = slen - flen + rlen;
    res[*out_len] = '\0';
    free(s);
    *out = res;
    return 0;
}

/* Would "]" + N*"=" + "]" first occur in V + that closer exactly at the end? */
static int bracket_fits(const char *v, size_t vlen, size_t n)
{
    size_t i, j, clen = n + 2;
    for (i = 0; i < vlen; i++) {
        for (j = 0; j < clen; j++) {
            size_t at = i + j, c = at - vlen;
            char have = at < vlen ? v[at] : (c == 0 || c == clen - 1) ? ']' : '=';
            if (have != ((j == 0 || j == clen - 1) ? ']' : '='))
                break;
        }
        if (j == clen)
            return 0;
    }
    return 1;
}

static void put_set(struct buf *b, const char *var, const char *v)
{
    size_t n = 1, vlen, i;
    v = v ? v : "";
    vlen = strlen(v);
    while (!bracket_fits(v, vlen, n))
        n++;
    puts_(b, "set(");
    puts_(b, var);
    puts_(b, " [");
    for (i = 0; i < n; i++)
        puts_(b, "=");
    /* CMake drops a newline right after the opening bracket: add one more */
    puts_(b, v[0] == '\n' ? "[\n" : "[");
    put(b, v, vlen);
    puts_(b, "]");
    for (i = 0; i < n; i++)
        puts_(b, "=");
    puts_(b, "])\n");
}

int mistake_cmake(const struct mistake *m, char **out, size_t *out_len)
{
    struct buf b = {NULL, 0, 0, 0};
    char step[48];
    puts_(&b, "# Generated by labtool mistake-cmake from the mistake catalogue; do not edit.\n");
    put_set(&b, "MISTAKE_NAME", m->name);
    put_set(&b, "MISTAKE_SUMMARY", m->summary);
    snprintf(step, sizeof step, "set(MISTAKE_STEP %lld)\n", m->step);
    puts_(&b, step);
    put_set(&b, "MISTAKE_CAUGHT_BY", m->caught_by);
    put_set(&b, "MISTAKE_EXPECT_FAILING", m->expect_failing);
    put_set(&b, "MISTAKE_EXPECT_MESSAGE", m->expect_message);
    put_set(&b, "MISTAKE_FILE", m->file);
    put_set(&b, "MISTAKE_GPU_ONLY", m->gpu_only);
    if (b.oom) {
        free(b.d);
        return -1;
    }
    *out = b.d;
    *out_len = b.n;
    return 0;
}
