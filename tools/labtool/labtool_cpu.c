/* labtool_cpu.c - the source pass of the CPU execution path (common/cpu/):
 * turns a CUDA C++ file into C++ that g++ compiles against the CPU runtime's
 * cuda_runtime.h, keeping every line where it was (compiler messages, the
 * runtime's reports and addr2line point at the student's own lines).
 *
 * Two rewrites, nothing else (everything else is done by the header):
 *   K<<<grid, block[, smem[, stream]]>>>(args)
 *       -> cml_cpu_launch(K, "K", __FILE__, __LINE__, cml_cpu_cfg(grid, block...), args)
 *      K is found by scanning back from <<< over a name, '::' and nested
 *      template arguments (k<512, T>, ns::k, a launch inside a macro). No
 *      macro can do this: <<< is not a token a macro can catch.
 *   extern __shared__ [__align__(n)] T name[];
 *       -> T *name = (T *)cml_cpu_dynamic_shared();      (inside a function)
 *       -> #define name ((T *)cml_cpu_dynamic_shared())  (at file scope)
 * Comments, string and character literals are copied untouched. */
#include "labtool.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *p;
    size_t len, cap;
    int oom;
} sbuf;

static void put(sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (b->len + n + 1 > cap)
            cap *= 2;
        char *np = realloc(b->p, cap);
        if (np == NULL) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void puts_(sbuf *b, const char *s) { put(b, s, strlen(s)); }

static int is_ident(int c) { return isalnum((unsigned char)c) || c == '_'; }

static int line_of(const char *src, size_t at)
{
    int line = 1;
    for (size_t i = 0; i < at; ++i)
        line += src[i] == '\n';
    return line;
}

/* Index just past the comment or literal starting at i, or i when there is
 * none there. */
static size_t skip_opaque(const char *s, size_t len, size_t i)
{
    if (i + 1 < len && s[i] == '/' && s[i + 1] == '/') {
        while (i < len && s[i] != '\n')
            ++i;
        return i;
    }
    if (i + 1 < len && s[i] == '/' && s[i + 1] == '*') {
        i += 2;
        while (i + 1 < len && !(s[i] == '*' && s[i + 1] == '/'))
            ++i;
        return i + 2 <= len ? i + 2 : len;
    }
    if (s[i] == '"' || (s[i] == '\'' && !(i > 0 && isxdigit((unsigned char)s[i - 1]) && i + 1 < len &&
                                          isxdigit((unsigned char)s[i + 1])))) {
        /* (a digit separator 1'000 is not a character literal) */
        char q = s[i++];
        while (i < len && s[i] != q && s[i] != '\n') {
            if (s[i] == '\\' && i + 1 < len)
                ++i;
            ++i;
        }
        return i < len ? i + 1 : len;
    }
    return i;
}

static size_t back_ws(const char *s, size_t j)
{
    while (j > 0 && isspace((unsigned char)s[j - 1]))
        --j;
    return j;
}

/* Start of the kernel expression that ends just before position p (<<<):
 * name, ns::name, name<args...>, with nested <> in the arguments. Returns
 * (size_t)-1 when there is no name. */
static size_t kernel_start(const char *s, size_t p)
{
    size_t j = back_ws(s, p);
    for (;;) {
        if (j > 0 && s[j - 1] == '>') {
            int depth = 0;
            while (j > 0) {
                char c = s[--j];
                if (c == '>')
                    ++depth;
                else if (c == '<' && --depth == 0)
                    break;
            }
            if (depth != 0)
                return (size_t)-1;
            j = back_ws(s, j);
        }
        size_t end = j;
        while (j > 0 && is_ident(s[j - 1]))
            --j;
        if (j == end || isdigit((unsigned char)s[j]))
            return (size_t)-1;
        size_t k = back_ws(s, j);
        if (k >= 2 && s[k - 1] == ':' && s[k - 2] == ':') {
            j = back_ws(s, k - 2);
            continue;
        }
        return j;
    }
}

/* Position of the >>> closing the configuration that starts at i, outside
 * brackets, comments and literals; (size_t)-1 when missing. */
static size_t config_end(const char *s, size_t len, size_t i)
{
    int depth = 0;
    while (i < len) {
        size_t k = skip_opaque(s, len, i);
        if (k != i) {
            i = k;
            continue;
        }
        char c = s[i];
        if (c == '(' || c == '[' || c == '{')
            ++depth;
        else if (c == ')' || c == ']' || c == '}')
            --depth;
        else if (depth == 0 && c == '>' && i + 2 < len && s[i + 1] == '>' && s[i + 2] == '>')
            return i;
        else if (c == ';' && depth == 0)
            return (size_t)-1;
        ++i;
    }
    return (size_t)-1;
}

/* Appends text as the body of a C string literal on one line. */
static void put_name(sbuf *b, const char *s, size_t n)
{
    int space = 0;
    for (size_t i = 0; i < n; ++i) {
        char c = s[i];
        if (isspace((unsigned char)c)) {
            space = 1;
            continue;
        }
        if (space && b->len > 0 && b->p[b->len - 1] != '"')
            put(b, " ", 1);
        space = 0;
        if (c == '"' || c == '\\')
            put(b, "\\", 1);
        put(b, &c, 1);
    }
}

static void put_newlines(sbuf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; ++i)
        if (s[i] == '\n')
            put(b, "\n", 1);
}

/* Rewrites the declaration `extern __shared__ ... name[];` spanning
 * [from, semi]. Returns 0, or -1 when it is not of that form. */
static int rewrite_extern_shared(sbuf *b, const char *s, size_t from, size_t decl, size_t semi, int file_scope)
{
    char type[512], name[256];
    size_t t = 0;
    /* The declaration without __align__(n) and without the [] at the end. */
    size_t i = decl, end = semi;
    while (end > i && isspace((unsigned char)s[end - 1]))
        --end;
    if (end < i + 2 || s[end - 1] != ']')
        return -1;
    --end;
    while (end > i && isspace((unsigned char)s[end - 1]))
        --end;
    if (s[end - 1] != '[')
        return -1;
    --end;
    while (end > i && isspace((unsigned char)s[end - 1]))
        --end;
    size_t name_end = end;
    while (end > i && is_ident(s[end - 1]))
        --end;
    if (end == name_end || name_end - end >= sizeof name)
        return -1;
    memcpy(name, s + end, name_end - end);
    name[name_end - end] = '\0';
    while (i < end && t + 2 < sizeof type) {
        if (strncmp(s + i, "__align__", 9) == 0) {
            i += 9;
            while (i < end && s[i] != ')')
                ++i;
            ++i;
            continue;
        }
        char c = isspace((unsigned char)s[i]) ? ' ' : s[i];
        if (!(c == ' ' && (t == 0 || type[t - 1] == ' ')))
            type[t++] = c;
        ++i;
    }
    while (t > 0 && type[t - 1] == ' ')
        --t;
    type[t] = '\0';
    if (t == 0)
        return -1;
    char line[1400];
    if (file_scope)
        snprintf(line, sizeof line, "#define %s ((%s *)cml_cpu_dynamic_shared())", name, type);
    else
        snprintf(line, sizeof line, "%s *%s = (%s *)cml_cpu_dynamic_shared();", type, name, type);
    puts_(b, line);
    put_newlines(b, s + from, semi + 1 - from);
    return 0;
}

int cpu_translate(const char *src, size_t len, const char *src_name, char **out, size_t *out_len, char *err,
                  size_t errlen)
{
    sbuf b = {0};
    char head[4200];
    /* The CPU runtime's header first (nvcc includes cuda_runtime.h into
     * every .cu by itself), then the student's lines, numbered as theirs. */
    snprintf(head, sizeof head, "#include <cuda_runtime.h>\n#line 1 \"%s\"\n", src_name);
    puts_(&b, head);
    size_t copied = 0, i = 0;
    int depth = 0;
    while (i < len) {
        size_t k = skip_opaque(src, len, i);
        if (k != i) {
            i = k;
            continue;
        }
        char c = src[i];
        if (c == '{') {
            ++depth;
        } else if (c == '}') {
            --depth;
        } else if (c == '<' && i + 2 < len && src[i + 1] == '<' && src[i + 2] == '<') {
            size_t s = kernel_start(src, i);
            size_t q = config_end(src, len, i + 3);
            if (s == (size_t)-1 || s < copied) {
                snprintf(err, errlen, "%s:%d: '<<<' without a kernel name before it", src_name, line_of(src, i));
                free(b.p);
                return -1;
            }
            if (q == (size_t)-1) {
                snprintf(err, errlen, "%s:%d: '<<<' without a matching '>>>'", src_name, line_of(src, i));
                free(b.p);
                return -1;
            }
            size_t a = q + 3;
            while (a < len && isspace((unsigned char)src[a]))
                ++a;
            if (a >= len || src[a] != '(') {
                snprintf(err, errlen, "%s:%d: '>>>' must be followed by the kernel's arguments in ( )", src_name,
                         line_of(src, q));
                free(b.p);
                return -1;
            }
            size_t after = a + 1, peek = after;
            while (peek < len && isspace((unsigned char)src[peek]))
                ++peek;
            put(&b, src + copied, s - copied);
            puts_(&b, "cml_cpu_launch(");
            put(&b, src + s, i - s);
            puts_(&b, ", \"");
            put_name(&b, src + s, i - s);
            puts_(&b, "\", __FILE__, __LINE__, cml_cpu_cfg(");
            put(&b, src + i + 3, q - (i + 3));
            puts_(&b, ")");
            put_newlines(&b, src + q + 3, a - (q + 3));
            if (peek >= len || src[peek] != ')')
                puts_(&b, ", ");
            copied = i = after;
            continue;
        } else if (c == 'e' && (i == 0 || !is_ident(src[i - 1])) && i + 6 < len &&
                   strncmp(src + i, "extern", 6) == 0 && !is_ident(src[i + 6])) {
            size_t j = i + 6;
            while (j < len && isspace((unsigned char)src[j]))
                ++j;
            if (j + 10 < len && strncmp(src + j, "__shared__", 10) == 0 && !is_ident(src[j + 10])) {
                size_t semi = j + 10;
                while (semi < len && src[semi] != ';')
                    ++semi;
                put(&b, src + copied, i - copied);
                if (semi >= len || rewrite_extern_shared(&b, src, i, j + 10, semi, depth == 0) != 0) {
                    snprintf(err, errlen, "%s:%d: expected 'extern __shared__ TYPE NAME[];'", src_name,
                             line_of(src, i));
                    free(b.p);
                    return -1;
                }
                copied = i = semi + 1;
                continue;
            }
        }
        ++i;
    }
    put(&b, src + copied, len - copied);
    if (b.oom) {
        free(b.p);
        snprintf(err, errlen, "%s: out of memory", src_name);
        return -1;
    }
    if (b.p == NULL)
        put(&b, "", 0);
    *out = b.p;
    *out_len = b.len;
    return 0;
}
