/* toml_subset.c - see toml_subset.h for the accepted subset. */
#include "toml_subset.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct parser {
    const char *p, *end, *fname, *array_name;
    int line;
    char *err;
    size_t errlen;
};

static int fail(struct parser *ps, int line, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(ps->err, ps->errlen, "%s:%d: ", ps->fname, line);
    if (n >= 0 && (size_t)n < ps->errlen) {
        va_start(ap, fmt);
        vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int is_key_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_';
}

/* TOML forbids control characters other than tab in strings and comments. */
static int is_ctrl(char c)
{
    unsigned char u = (unsigned char)c;
    return (u < 0x20 && u != '\t') || u == 0x7f;
}

static int at_eol(const struct parser *ps)
{
    return ps->p == ps->end || ps->p[0] == '\n' ||
           (ps->p[0] == '\r' && ps->end - ps->p > 1 && ps->p[1] == '\n');
}

static void skip_ws(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t'))
        ps->p++;
}

static int bad_ctrl(struct parser *ps, const char *where)
{
    return fail(ps, ps->line, "control character 0x%02X in %s", (unsigned)(unsigned char)*ps->p, where);
}

/* Consumes blanks, an optional comment and the line end after WHAT. */
static int end_of_line(struct parser *ps, const char *what)
{
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == '#')
        for (ps->p++; !at_eol(ps); ps->p++)
            if (is_ctrl(*ps->p))
                return bad_ctrl(ps, "a comment");
    if (!at_eol(ps))
        return fail(ps, ps->line, "unexpected text after %s", what);
    if (ps->p < ps->end) {
        ps->p += *ps->p == '\r' ? 2 : 1;
        ps->line++;
    }
    return 0;
}

/* Real TOML must be UTF-8 (tomllib rejects anything else), so we do too. */
static int check_utf8(struct parser *ps)
{
    const unsigned char *s = (const unsigned char *)ps->p, *e = (const unsigned char *)ps->end;
    int line = 1;
    while (s < e) {
        unsigned c = *s, lo = 0x80, hi = 0xBF;
        size_t k, i;
        if (c < 0x80) {
            line += c == '\n';
            s++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF)
            k = 1;
        else if (c >= 0xE0 && c <= 0xEF)
            k = 2, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        else if (c >= 0xF0 && c <= 0xF4)
            k = 3, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        else
            return fail(ps, line, "invalid UTF-8");
        if ((size_t)(e - s) <= k || s[1] < lo || s[1] > hi)
            return fail(ps, line, "invalid UTF-8");
        for (i = 2; i <= k; i++)
            if ((s[i] & 0xC0) != 0x80)
                return fail(ps, line, "invalid UTF-8");
        s += k + 1;
    }
    return 0;
}

/* "basic string" on one line; ps->p is at the opening quote. */
static int parse_basic(struct parser *ps, char **out)
{
    char *s = malloc((size_t)(ps->end - ps->p) + 1), *o = s;
    if (!s)
        return fail(ps, ps->line, "out of memory");
    for (ps->p++;; ps->p++) {
        if (at_eol(ps)) {
            free(s);
            return fail(ps, ps->line, "unterminated string (a \"...\" string must end on its own line)");
        }
        if (*ps->p == '"')
            break;
        if (*ps->p == '\\') {
            ps->p++;
            if (at_eol(ps)) {
                free(s);
                return fail(ps, ps->line, "unterminated string (a \"...\" string must end on its own line)");
            }
            switch (*ps->p) {
            case '\\': *o++ = '\\'; break;
            case '"': *o++ = '"'; break;
            case 'n': *o++ = '\n'; break;
            case 't': *o++ = '\t'; break;
            default:
                free(s);
                return fail(ps, ps->line, "unsupported escape sequence in string (only \\\\ \\\" \\n \\t are supported)");
            }
        } else if (is_ctrl(*ps->p)) {
            free(s);
            return bad_ctrl(ps, "a string");
        } else {
            *o++ = *ps->p;
        }
    }
    ps->p++;
    *o = '\0';
    *out = s;
    return 0;
}

/* '''multi-line literal string'''; ps->p is at the opening quotes. */
static int parse_multiline(struct parser *ps, char **out)
{
    int start = ps->line;
    char *s = malloc((size_t)(ps->end - ps->p) + 1), *o = s;
    if (!s)
        return fail(ps, ps->line, "out of memory");
    ps->p += 3;
    if (ps->p < ps->end && *ps->p == '\n')
        ps->p++, ps->line++;
    else if (ps->end - ps->p > 1 && ps->p[0] == '\r' && ps->p[1] == '\n')
        ps->p += 2, ps->line++;
    for (;;) {
        size_t q = 0;
        if (ps->p == ps->end) {
            free(s);
            return fail(ps, start, "unterminated multi-line string (the ''' opened here is never closed)");
        }
        while (ps->p + q < ps->end && ps->p[q] == '\'')
            q++;
        if (q >= 3) { /* up to two quotes may precede the closing ''' */
            if (q > 5) {
                free(s);
                return fail(ps, ps->line, "too many quotes after a ''' string");
            }
            memset(o, '\'', q - 3);
            o += q - 3;
            ps->p += q;
            break;
        }
        if (q > 0) {
            memset(o, '\'', q);
            o += q;
            ps->p += q;
        } else if (*ps->p == '\n' || (*ps->p == '\r' && at_eol(ps))) {
            *o++ = '\n';
            ps->p += *ps->p == '\r' ? 2 : 1;
            ps->line++;
        } else if (is_ctrl(*ps->p)) {
            free(s);
            return bad_ctrl(ps, "a string");
        } else {
            *o++ = *ps->p++;
        }
    }
    *o = '\0';
    *out = s;
    return 0;
}

static int parse_integer(struct parser *ps, long long *out)
{
    const char *start = ps->p;
    long long v = 0;
    for (; ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9'; ps->p++) {
        int d = *ps->p - '0';
        if (v > (LLONG_MAX - d) / 10)
            return fail(ps, ps->line, "integer is too large");
        v = v * 10 + d;
    }
    if (ps->p - start > 1 && *start == '0')
        return fail(ps, ps->line, "leading zeros are not allowed in integers");
    if (!at_eol(ps) && *ps->p != ' ' && *ps->p != '\t' && *ps->p != '#')
        return fail(ps, ps->line, "only plain non-negative decimal integers are supported");
    *out = v;
    return 0;
}

static int parse_header(struct parser *ps, struct toml_doc *doc)
{
    const char *name;
    size_t len;
    if (ps->end - ps->p < 2 || ps->p[1] != '[')
        return fail(ps, ps->line, "only [[%s]] table headers are supported", ps->array_name);
    ps->p += 2;
    skip_ws(ps);
    for (name = ps->p; ps->p < ps->end && is_key_char(*ps->p); ps->p++)
        ;
    len = (size_t)(ps->p - name);
    skip_ws(ps);
    if (ps->end - ps->p < 2 || ps->p[0] != ']' || ps->p[1] != ']' ||
        len != strlen(ps->array_name) || memcmp(name, ps->array_name, len) != 0)
        return fail(ps, ps->line, "only [[%s]] table headers are supported", ps->array_name);
    ps->p += 2;
    if (doc->n == doc->cap) {
        size_t cap = doc->cap ? 2 * doc->cap : 8;
        struct toml_table *t = realloc(doc->tables, cap * sizeof *t);
        if (!t)
            return fail(ps, ps->line, "out of memory");
        doc->tables = t;
        doc->cap = cap;
    }
    memset(&doc->tables[doc->n], 0, sizeof doc->tables[0]);
    doc->tables[doc->n++].line = ps->line;
    return end_of_line(ps, "the table header");
}

static int parse_pair(struct parser *ps, struct toml_doc *doc)
{
    struct toml_kv kv;
    struct toml_table *t;
    const char *key = ps->p;
    size_t klen, i;
    int rc;

    memset(&kv, 0, sizeof kv);
    kv.line = ps->line;
    while (ps->p < ps->end && is_key_char(*ps->p))
        ps->p++;
    klen = (size_t)(ps->p - key);
    skip_ws(ps);
    if (ps->p == ps->end || *ps->p != '=')
        return fail(ps, kv.line, "expected '=' after the key '%.*s' (keys must be bare [A-Za-z0-9_]+)", (int)klen, key);
    ps->p++;
    skip_ws(ps);
    if (doc->n == 0)
        return fail(ps, kv.line, "key '%.*s' is outside any [[%s]] table", (int)klen, key, ps->array_name);
    t = &doc->tables[doc->n - 1];
    for (i = 0; i < t->n; i++)
        if (strlen(t->kv[i].key) == klen && memcmp(t->kv[i].key, key, klen) == 0)
            return fail(ps, kv.line, "duplicate key '%.*s' (already set at line %d)", (int)klen, key, t->kv[i].line);

    if (ps->p < ps->end && *ps->p == '"') {
        if (ps->end - ps->p > 2 && ps->p[1] == '"' && ps->p[2] == '"')
            return fail(ps, kv.line, "\"\"\" strings are not supported; use '''...'''");
        rc = parse_basic(ps, &kv.str);
    } else if (ps->end - ps->p > 2 && memcmp(ps->p, "'''", 3) == 0) {
        rc = parse_multiline(ps, &kv.str);
    } else if (ps->p < ps->end && *ps->p >= '0' && *ps->p <= '9') {
        kv.type = TOML_INTEGER;
        rc = parse_integer(ps, &kv.num);
    } else {
        return fail(ps, kv.line, "unsupported value for '%.*s' (expected \"string\", '''string''' or a non-negative integer)", (int)klen, key);
    }
    if (rc != 0)
        return rc;
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 8;
        struct toml_kv *k = realloc(t->kv, cap * sizeof *k);
        if (!k) {
            free(kv.str);
            return fail(ps, kv.line, "out of memory");
        }
        t->kv = k;
        t->cap = cap;
    }
    kv.key = malloc(klen + 1);
    if (!kv.key) {
        free(kv.str);
        return fail(ps, kv.line, "out of memory");
    }
    memcpy(kv.key, key, klen);
    kv.key[klen] = '\0';
    t->kv[t->n++] = kv;
    return end_of_line(ps, "the value");
}

int toml_parse(const char *text, size_t len, const char *fname,
               const char *array_name, struct toml_doc *doc,
               char *err, size_t errlen)
{
    struct parser ps;
    ps.p = text;
    ps.end = text + len;
    ps.fname = fname;
    ps.array_name = array_name;
    ps.line = 1;
    ps.err = err;
    ps.errlen = errlen;
    memset(doc, 0, sizeof *doc);
    if (check_utf8(&ps) != 0)
        return -1;
    while (ps.p < ps.end) {
        int rc;
        skip_ws(&ps);
        if (at_eol(&ps) || *ps.p == '#')
            rc = end_of_line(&ps, "the comment");
        else if (*ps.p == '[')
            rc = parse_header(&ps, doc);
        else if (is_key_char(*ps.p))
            rc = parse_pair(&ps, doc);
        else
            rc = fail(&ps, ps.line, "expected a bare key, a [[%s]] header or a comment", array_name);
        if (rc != 0) {
            toml_free(doc);
            return -1;
        }
    }
    return 0;
}

void toml_free(struct toml_doc *doc)
{
    size_t i, j;
    for (i = 0; i < doc->n; i++) {
        for (j = 0; j < doc->tables[i].n; j++) {
            free(doc->tables[i].kv[j].key);
            free(doc->tables[i].kv[j].str);
        }
        free(doc->tables[i].kv);
    }
    free(doc->tables);
    memset(doc, 0, sizeof *doc);
}
