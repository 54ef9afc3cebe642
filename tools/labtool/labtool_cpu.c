/* labtool_cpu.c - the source pass of the CPU execution path (common/cpu/):
 * turns a CUDA C++ file into C++ that g++ compiles against the CPU runtime's
 * cuda_runtime.h, keeping every line where it was (compiler messages, the
 * runtime's reports and addr2line point at the student's own lines).
 *
 * Three rewrites, nothing else (everything else is done by the header):
 *   K<<<grid, block[, smem[, stream]]>>>(args)
 *       -> cml_cpu_launch(CML_CPU_KERNEL(K), "K", __FILE__, __LINE__, cml_cpu_cfg(grid, block...), args)
 *      (CML_CPU_KERNEL, in cuda_runtime.h: K's address where it has one,
 *      else a call that deduces K's template arguments from the args)
 *      K is found by scanning back from <<< over a name, '::' and nested
 *      template arguments (k<512, T>, ns::k, a launch inside a macro). No
 *      macro can do this: <<< is not a token a macro can catch.
 *   extern __shared__ [__align__(n)] T name[];
 *       -> T *name = (T *)cml_cpu_dynamic_shared();      (inside a function)
 *       -> #define name ((T *)cml_cpu_dynamic_shared())  (at file scope)
 *   [volatile|static] __shared__ [__align__(n)] T a[D1][D2]..., *p, x;
 *       -> static thread_local auto &a = cml_cpu_static_shared_ref<T[D1][D2], n>("T a[D1][D2]"); ...
 *      (in a function or at namespace scope) the worker's copy of the
 *      variable in the runtime's shared memory, ending where a guard page
 *      starts, so that an index past the end of an array's flat extent
 *      faults and is reported; the checks count that memory as shared and
 *      ignore the thread-local block, where only the references live now.
 *      A static reference, not a local one: a lambda that captures [=]
 *      uses it as it would the array, instead of copying the array.
 *      Declarations of another form (an initializer, a struct defined in
 *      place, a function pointer) keep the header's macro (a thread_local,
 *      unchecked).
 *   [static] __device__|__constant__ [__align__(n)] T [*]a[D]... [= INIT], ...;   (at namespace scope)
 *       -> static cml_cpu_symbol<T[D]> cml_cpu_sym_a = {INIT}; CML_CPU_SYMBOL(a, "__device__ T a[D]"); ...
 *      the variable in pages of its own that the runtime closes to host
 *      code (cuda_runtime.h, cml_cpu_runtime.c "symbols"); `a` a reference
 *      to it. Other forms (const, templates, extern, ...: see
 *      rewrite_device_var) stay ordinary globals, open to host code.
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
 * (size_t)-1 when there is no name. Names pasted with ## count as one. */
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
        /* a name pasted in a macro's body: T##_kernel<<<...>>> */
        if (k >= 2 && s[k - 1] == '#' && s[k - 2] == '#') {
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

/* 1 when position i lies on a preprocessor directive's line (continued
 * lines included), e.g. in the body of a #define that stamps out kernels. */
static int in_directive(const char *s, size_t i)
{
    size_t k = i;
    for (;;) {
        while (k > 0 && s[k - 1] != '\n')
            --k;
        /* the line before ends in a backslash: this line continues it */
        if (k >= 2 && s[k - 2] == '\\') {
            k -= 1;
            continue;
        }
        break;
    }
    while (s[k] == ' ' || s[k] == '\t')
        ++k;
    return s[k] == '#';
}

/* The first position in [from, to) that is not white space, a comment or
 * a preprocessor directive's line (`#pragma unroll` before a declaration). */
static size_t skip_gap(const char *s, size_t from, size_t to)
{
    while (from < to) {
        size_t k = skip_opaque(s, to, from);
        if (k != from && (s[from] == '/')) {
            from = k;
        } else if (isspace((unsigned char)s[from]) || (s[from] == '\\' && from + 1 < to && s[from + 1] == '\n')) {
            ++from; /* (a macro body's line continuation counts as white space) */
        } else if (s[from] == '#' && in_directive(s, from)) {
            while (from < to && !(s[from] == '\n' && s[from - 1] != '\\'))
                ++from;
        } else {
            break;
        }
    }
    return from;
}

/* What a '{' opens: code (a function body, a block, a lambda), a namespace
 * or linkage block, or a class; an initializer list is what encloses it. */
enum { SCOPE_CODE = 1, SCOPE_NAMESPACE = 2, SCOPE_CLASS = 3 };

/* Where the word w first occurs in [from, to) outside comments and
 * literals (offset + 1), or 0. */
static int word_in(const char *s, size_t from, size_t to, const char *w)
{
    size_t n = strlen(w);
    for (size_t k = from; k + n <= to; ++k) {
        size_t past = skip_opaque(s, to, k);
        if (past != k) {
            k = past - 1;
            continue;
        }
        if (strncmp(s + k, w, n) == 0 && (k == from || !is_ident(s[k - 1])) && (k + n == to || !is_ident(s[k + n])))
            return (int)(k - from) + 1;
    }
    return 0;
}

static int scope_of_brace(const char *s, size_t brace, int enclosing)
{
    size_t head = brace;
    while (head > 0 && s[head - 1] != ';' && s[head - 1] != '{' && s[head - 1] != '}')
        --head;
    size_t last = back_ws(s, brace);
    char before = last > head ? s[last - 1] : '\0';
    if (before == '\0' || before == '=' || before == ',' || before == '(' || before == '[' || before == '{' ||
        word_in(s, head, brace, "return"))
        return enclosing; /* an initializer (or a braced argument) */
    /* namespace x {, extern "C" { (not extern "C" void f() {) */
    if (word_in(s, head, brace, "namespace") || before == '"')
        return SCOPE_NAMESPACE;
    static const char *const keys[] = {"struct", "class", "union", "enum"};
    for (int k = 0; k < 4; ++k) {
        int at = word_in(s, head, brace, keys[k]);
        if (at && memchr(s + head + at, '(', brace - (head + at)) == NULL)
            return SCOPE_CLASS;
    }
    return SCOPE_CODE;
}

/* The parenthesized group after an attribute keyword (`__align__ (16)`,
 * `alignas(T)`): from `from`, past blanks, a '(' and its matching ')' before
 * `end`. Sets *open to the '(' and returns the ')', or (size_t)-1. */
static size_t paren_group(const char *s, size_t from, size_t end, size_t *open)
{
    while (from < end && isspace((unsigned char)s[from]))
        ++from;
    if (from >= end || s[from] != '(')
        return (size_t)-1;
    *open = from;
    int d = 0;
    for (size_t close = from; close < end; ++close) {
        d += s[close] == '(' ? 1 : s[close] == ')' ? -1 : 0;
        if (d == 0)
            return close;
    }
    return (size_t)-1;
}

/* Rewrites the static shared array declaration whose `__shared__` is at
 * position at (declaration text [from, semi), `;` at semi) into references
 * to the runtime's guarded shared memory (see the file comment). Returns 0,
 * or -1 when it is not `[qualifiers] __shared__ [qualifiers] T a[..]..., b[..]...;`
 * (a scalar, a pointer, an initializer: left to the header's macro). */
static int rewrite_static_shared(sbuf *b, const char *s, size_t from, size_t at, size_t semi)
{
    char type[600] = "", align[120] = "0";
    size_t t = 0;
    /* qualifiers before __shared__: volatile/const kept, static dropped */
    for (size_t k = from; k < at;) {
        if (isspace((unsigned char)s[k])) {
            ++k;
            continue;
        }
        size_t e = k;
        while (e < at && is_ident(s[e]))
            ++e;
        if (e == k)
            return -1;
        if ((e - k == 8 && strncmp(s + k, "volatile", 8) == 0) || (e - k == 5 && strncmp(s + k, "const", 5) == 0)) {
            if (t + (e - k) + 2 >= sizeof type)
                return -1;
            memcpy(type + t, s + k, e - k);
            t += e - k;
            type[t++] = ' ';
        } else if (!(e - k == 6 && strncmp(s + k, "static", 6) == 0)) {
            return -1;
        }
        k = e;
    }
    /* after __shared__: [__align__(n)|alignas(n)] TYPE declarators */
    size_t i = at + 10, decl_end = semi;
    for (;;) {
        while (i < decl_end && isspace((unsigned char)s[i]))
            ++i;
        size_t kw = strncmp(s + i, "__align__", 9) == 0 ? 9 : strncmp(s + i, "alignas", 7) == 0 ? 7 : 0;
        if (kw == 0 || is_ident(s[i + kw]))
            break;
        size_t open = 0, close = paren_group(s, i + kw, decl_end, &open);
        if (close == (size_t)-1 || close - open + 1 >= sizeof align)
            return -1;
        memcpy(align, s + open, close - open + 1);
        align[close - open + 1] = '\0';
        i = close + 1;
    }
    /* the declarators: split at commas outside (), [], {} and <> */
    size_t starts[32], ends[32];
    int n = 0, depth = 0, angle = 0;
    size_t d0 = i;
    for (size_t k = i; k <= decl_end; ++k) {
        char c = k < decl_end ? s[k] : ',';
        if (c == '(' || c == '[' || c == '{')
            ++depth;
        else if (c == ')' || c == ']' || c == '}')
            --depth;
        else if (depth == 0 && c == '<')
            ++angle;
        else if (depth == 0 && c == '>' && angle > 0)
            --angle;
        else if (depth == 0 && (c == '=' || c == '&' || c == '('))
            return -1;
        else if (depth == 0 && angle == 0 && c == ',') {
            if (n == 32)
                return -1;
            starts[n] = d0;
            ends[n++] = k;
            d0 = k + 1;
        }
    }
    /* each declarator: [*...] NAME [[..]...]; the first one's text before
     * its stars and NAME is the type */
    size_t name_at[32], name_end[32], dims_at[32];
    char stars[32][8];
    for (int k = 0; k < n; ++k) {
        size_t e = ends[k];
        while (e > starts[k] && isspace((unsigned char)s[e - 1]))
            --e;
        size_t first_bracket = e;
        int ang = 0;
        for (size_t q = starts[k]; q < e; ++q) {
            if (s[q] == '<')
                ++ang;
            else if (s[q] == '>' && ang > 0)
                --ang;
            else if (s[q] == '[' && ang == 0) {
                first_bracket = q;
                break;
            }
        }
        if (first_bracket < e && s[e - 1] != ']')
            return -1;
        size_t ne = back_ws(s, first_bracket), na = ne;
        while (na > starts[k] && is_ident(s[na - 1]))
            --na;
        if (na == ne || isdigit((unsigned char)s[na]))
            return -1;
        /* the stars before NAME */
        size_t st = na;
        int ns = 0;
        for (;;) {
            st = back_ws(s, st);
            if (st > starts[k] && s[st - 1] == '*' && ns < 7) {
                --st;
                ++ns;
            } else {
                break;
            }
        }
        memset(stars[k], '*', (size_t)ns);
        stars[k][ns] = '\0';
        name_at[k] = na;
        name_end[k] = ne;
        dims_at[k] = first_bracket;
        ends[k] = e;
        if (k == 0) {
            size_t te = back_ws(s, st);
            if (te <= starts[0])
                return -1;
            for (size_t c = starts[0]; c < te && t + 2 < sizeof type; ++c) {
                char ch = isspace((unsigned char)s[c]) ? ' ' : s[c];
                if (!(ch == ' ' && (t == 0 || type[t - 1] == ' ')))
                    type[t++] = ch;
            }
            if (t + 2 >= sizeof type)
                return -1;
            type[t] = '\0';
        } else if (back_ws(s, st) > starts[k]) {
            return -1; /* a type again, or a qualifier: not a plain declarator */
        }
    }
    char line[6000];
    for (int k = 0; k < n; ++k) {
        char dims[700] = "", name[200] = "", shown[3400] = "";
        size_t dl = ends[k] - dims_at[k], nl = name_end[k] - name_at[k];
        if (dl >= sizeof dims || nl >= sizeof name)
            return -1;
        memcpy(dims, s + dims_at[k], dl);
        memcpy(name, s + name_at[k], nl);
        for (char *c = dims; *c; ++c)
            if (*c == '\n' || *c == '\r' || *c == '\t')
                *c = ' ';
        /* the declaration as the report shows it, as a string literal */
        sbuf lit = {0};
        char decl[1600];
        snprintf(decl, sizeof decl, "%s %s%s%s", type, stars[k], name, dims);
        put_name(&lit, decl, strlen(decl));
        snprintf(shown, sizeof shown, "%s", lit.p != NULL ? lit.p : "");
        free(lit.p);
        snprintf(line, sizeof line, "static thread_local auto &%s = cml_cpu_static_shared_ref<%s%s%s, %s>(\"%s\");%s",
                 name, type, stars[k], dims, align, shown, k + 1 < n ? " " : "");
        puts_(b, line);
    }
    put_newlines(b, s + from, semi + 1 - from);
    return 0;
}

/* Appends s[from, to) on one line: comments dropped, white space runs as
 * one space, no leading or trailing space. */
static void put_flat(sbuf *b, const char *s, size_t from, size_t to)
{
    int space = 0, any = 0;
    for (size_t k = from; k < to;) {
        size_t past = skip_opaque(s, to, k);
        if (past != k && s[k] == '/') {
            space = 1;
            k = past;
            continue;
        }
        if (isspace((unsigned char)s[k]) || (s[k] == '\\' && k + 1 < to && s[k + 1] == '\n')) {
            space = 1;
            ++k;
            continue;
        }
        if (space && any)
            put(b, " ", 1);
        space = 0;
        any = 1;
        size_t end = past != k ? past : k + 1; /* a literal whole */
        put(b, s + k, end - k);
        k = end;
    }
}

/* 1 when an `extern` declaration of the file names `name` with __device__
 * or __constant__ (its definition must then keep its form and linkage). */
static int declared_extern(const char *s, size_t len, const char *name, size_t n)
{
    for (size_t k = 0; k + 6 < len; ++k) {
        size_t past = skip_opaque(s, len, k);
        if (past != k) {
            k = past - 1;
            continue;
        }
        if (strncmp(s + k, "extern", 6) != 0 || (k > 0 && is_ident(s[k - 1])) || is_ident(s[k + 6]))
            continue;
        size_t e = k;
        while (e < len && s[e] != ';' && s[e] != '{')
            ++e;
        char w[260];
        if (n + 1 > sizeof w)
            return 1;
        memcpy(w, name, n);
        w[n] = '\0';
        if ((word_in(s, k, e, "__device__") || word_in(s, k, e, "__constant__")) && word_in(s, k, e, w))
            return 1;
    }
    return 0;
}

/* The end (its ';') of the file-scope declaration starting at from, or
 * (size_t)-1 when what starts there is no variable declaration with an
 * optional initializer: a '{' before any '=' (a function body, a class),
 * or the end of the text. */
static size_t declaration_end(const char *s, size_t len, size_t from)
{
    int depth = 0, seen_eq = 0;
    for (size_t k = from; k < len;) {
        size_t past = skip_opaque(s, len, k);
        if (past != k) {
            k = past;
            continue;
        }
        char c = s[k];
        if (c == '{' && depth == 0 && !seen_eq)
            return (size_t)-1;
        if (c == '(' || c == '[' || c == '{')
            ++depth;
        else if (c == ')' || c == ']' || c == '}') {
            if (--depth < 0)
                return (size_t)-1;
        } else if (c == '=' && depth == 0)
            seen_eq = 1;
        else if (c == ';' && depth == 0)
            return k;
        ++k;
    }
    return (size_t)-1;
}

/* Rewrites the file-scope declaration [from, semi) that has __device__ or
 * __constant__ among its specifiers,
 *     [static] __device__|__constant__ [__align__(n)] T [*]NAME [DIMS] [= INIT], ...;
 * into one holder and one reference per declarator (CML_CPU_SYMBOL,
 * cuda_runtime.h):
 *     static cml_cpu_symbol<T [*][DIMS]> cml_cpu_sym_NAME = {INIT}; CML_CPU_SYMBOL(NAME, "__device__ T NAME[DIMS]");
 * so that the runtime can close the variable to host code. INIT is kept
 * as written (its lines too). Returns 0, or -1 for any other form, which
 * is left as it is (an ordinary global, open to host code): const and
 * constexpr variables (usable in constant expressions; host code cannot
 * store into them), templates, extern declarations (and the definitions
 * they name), __managed__, `auto`, arrays of unknown bound, function
 * pointers, direct initialization, a type defined in place, directives
 * inside. */
static int rewrite_device_var(sbuf *b, const char *s, size_t len, size_t from, size_t semi)
{
    static const char *const refused[] = {"extern",   "template",     "typedef", "using",     "constexpr",
                                          "const",    "inline",       "thread_local", "__shared__", "__managed__",
                                          "__global__", "__host__",   "operator", "friend",   "auto",
                                          "decltype", "register",     "mutable",  "virtual",  "consteval",
                                          "constinit", "__restrict__", NULL};
    for (int k = 0; refused[k] != NULL; ++k)
        if (word_in(s, from, semi, refused[k]))
            return -1;
    for (size_t k = from; k < semi;) {
        size_t past = skip_opaque(s, semi, k);
        if (past != k) {
            k = past;
            continue;
        }
        if (s[k] == '#')
            return -1;
        ++k;
    }
    /* the declarators: split at commas outside (), [], {} and, before an
     * '=', outside <> */
    enum { MAXD = 32 };
    size_t starts[MAXD], ends[MAXD], eqs[MAXD];
    int n = 0, depth = 0, angle = 0;
    size_t d0 = from, eq = 0;
    for (size_t k = from; k <= semi;) {
        size_t past = k < semi ? skip_opaque(s, semi, k) : k;
        if (past != k) {
            k = past;
            continue;
        }
        char c = k < semi ? s[k] : ',';
        if (c == '(' || c == '[' || c == '{')
            ++depth;
        else if (c == ')' || c == ']' || c == '}')
            --depth;
        else if (depth == 0 && eq == 0 && c == '<')
            ++angle;
        else if (depth == 0 && eq == 0 && c == '>' && angle > 0)
            --angle;
        else if (depth == 0 && angle == 0 && c == '=' && eq == 0)
            eq = k;
        else if (depth == 0 && angle == 0 && c == ',') {
            if (n == MAXD)
                return -1;
            starts[n] = d0;
            ends[n] = k;
            eqs[n++] = eq ? eq : k;
            d0 = k + 1;
            eq = 0;
        }
        ++k;
    }
    if (depth != 0)
        return -1;
    /* each declarator: [*...] NAME [[..]...] before its '=' */
    size_t name_at[MAXD], name_end[MAXD], dims_at[MAXD], dims_end[MAXD], stars_at[MAXD], type_end = from;
    for (int k = 0; k < n; ++k) {
        size_t e = back_ws(s, eqs[k]);
        dims_end[k] = e;
        while (e > starts[k] && s[e - 1] == ']') {
            int d = 0;
            size_t q = e;
            while (q > starts[k]) {
                char c = s[--q];
                d += c == ']' ? 1 : c == '[' ? -1 : 0;
                if (d == 0)
                    break;
            }
            if (d != 0 || s[q] != '[')
                return -1;
            size_t inner = q + 1;
            while (inner < e - 1 && isspace((unsigned char)s[inner]))
                ++inner;
            if (inner == e - 1)
                return -1; /* T a[]: its size comes from the initializer */
            e = back_ws(s, q);
        }
        dims_at[k] = e;
        size_t na = e;
        while (na > starts[k] && is_ident(s[na - 1]))
            --na;
        if (na == e || isdigit((unsigned char)s[na]) || e - na >= 200)
            return -1;
        name_at[k] = na;
        name_end[k] = e;
        size_t st = back_ws(s, na);
        while (st > starts[k] && s[st - 1] == '*')
            st = back_ws(s, st - 1);
        stars_at[k] = st;
        if (k == 0)
            type_end = st;
        else if (st > starts[k] && back_ws(s, st) > starts[k])
            return -1; /* a type again, or a qualifier: not a plain declarator */
        if (declared_extern(s, len, s + na, e - na))
            return -1;
    }
    /* the specifiers and the type: __device__, __constant__, static,
     * __align__(n) and alignas(n) dropped (the holder is page-aligned) */
    sbuf type = {0};
    int space = 0, memory = 0, constant = 0;
    for (size_t k = from; k < type_end;) {
        size_t past = skip_opaque(s, type_end, k);
        if (past != k) {
            if (s[k] != '/') { /* a literal in the type: not a plain declaration */
                free(type.p);
                return -1;
            }
            k = past;
            space = 1;
            continue;
        }
        if (isspace((unsigned char)s[k])) {
            space = 1;
            ++k;
            continue;
        }
        size_t w = k;
        while (w < type_end && is_ident(s[w]))
            ++w;
        if (w > k) {
            size_t wl = w - k;
            if ((wl == 10 && strncmp(s + k, "__device__", 10) == 0) ||
                (wl == 12 && strncmp(s + k, "__constant__", 12) == 0) || (wl == 6 && strncmp(s + k, "static", 6) == 0)) {
                memory += wl != 6;
                constant |= wl == 12;
                k = w;
                space = 1;
                continue;
            }
            if ((wl == 9 && strncmp(s + k, "__align__", 9) == 0) || (wl == 7 && strncmp(s + k, "alignas", 7) == 0)) {
                size_t open = 0, close = paren_group(s, w, type_end, &open);
                if (close == (size_t)-1) {
                    free(type.p);
                    return -1;
                }
                k = close + 1;
                space = 1;
                continue;
            }
        } else {
            w = k + 1;
            if (strchr("()[]{}=;\"'", s[k]) != NULL) {
                free(type.p);
                return -1;
            }
        }
        if (space && type.len > 0)
            put(&type, " ", 1);
        space = 0;
        put(&type, s + k, w - k);
        k = w;
    }
    if (memory == 0 || type.len == 0 || type.oom) {
        free(type.p);
        return -1;
    }
    int newlines = 0;
    for (size_t k = from; k <= semi; ++k)
        newlines += s[k] == '\n';
    for (int k = 0; k < n; ++k) {
        sbuf decl = {0}, shown = {0};
        /* T [*...][DIMS] and the declaration as reports show it */
        puts_(&decl, type.p);
        put_flat(&decl, s, stars_at[k] > starts[k] ? stars_at[k] : starts[k], name_at[k]);
        put_flat(&decl, s, dims_at[k], dims_end[k]);
        puts_(&shown, constant ? "__constant__ " : "__device__ ");
        puts_(&shown, type.p);
        puts_(&shown, " ");
        put_flat(&shown, s, stars_at[k] > starts[k] ? stars_at[k] : starts[k], name_at[k]);
        put(&shown, s + name_at[k], name_end[k] - name_at[k]);
        put_flat(&shown, s, dims_at[k], dims_end[k]);
        puts_(b, "static cml_cpu_symbol<");
        puts_(b, decl.p != NULL ? decl.p : "");
        puts_(b, "> cml_cpu_sym_");
        put(b, s + name_at[k], name_end[k] - name_at[k]);
        if (eqs[k] < ends[k]) {
            /* the initializer as written, lines included: {INIT} initializes
             * the holder's one member */
            puts_(b, " = {");
            put(b, s + eqs[k] + 1, ends[k] - (eqs[k] + 1));
            for (size_t q = eqs[k] + 1; q < ends[k]; ++q)
                newlines -= s[q] == '\n';
            puts_(b, "}");
        }
        puts_(b, "; CML_CPU_SYMBOL(");
        put(b, s + name_at[k], name_end[k] - name_at[k]);
        puts_(b, ", \"");
        put_name(b, shown.p != NULL ? shown.p : "", shown.len);
        puts_(b, k + 1 < n ? "\"); " : "\");");
        free(decl.p);
        free(shown.p);
    }
    free(type.p);
    for (; newlines > 0; --newlines)
        put(b, "\n", 1);
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
    /* what each open '{' is: code (where a __shared__ array is rewritten)
     * or a namespace, linkage block or class */
    unsigned char scope[512];
    int depth = 0;
    size_t stmt = 0; /* where the current statement starts */
#define SCOPE (depth > 0 ? scope[(depth <= 512 ? depth : 512) - 1] : SCOPE_NAMESPACE)
#define IN_CODE (SCOPE == SCOPE_CODE)
    while (i < len) {
        size_t k = skip_opaque(src, len, i);
        if (k != i) {
            i = k;
            continue;
        }
        char c = src[i];
        if (c == '{' || c == ';' || c == '}')
            stmt = i + 1;
        if (c == '{') {
            int kind = scope_of_brace(src, i, SCOPE);
            if (depth < 512)
                scope[depth] = (unsigned char)kind;
            ++depth;
        } else if (c == '}') {
            --depth;
        } else if (c == '_' && (i == 0 || !is_ident(src[i - 1])) && i + 10 <= len &&
                   strncmp(src + i, "__shared__", 10) == 0 && (i + 10 == len || !is_ident(src[i + 10])) &&
                   SCOPE != SCOPE_CLASS) {
            size_t from = skip_gap(src, stmt, i);
            size_t semi = i + 10;
            while (semi < len && src[semi] != ';' && src[semi] != '{' && src[semi] != '}')
                ++semi;
            /* a label or a line of another directive before it: not a plain
             * declaration; in a macro's body (kernels stamped out by a
             * #define), only a declaration on one line (the rewrite keeps
             * lines, and a macro's lines end in backslashes) */
            int directive = in_directive(src, i);
            if (semi < len && src[semi] == ';' && from >= copied && !memchr(src + from, '#', i - from) &&
                !memchr(src + from, ':', i - from) && !(directive && memchr(src + from, '\n', semi - from))) {
                size_t mark = b.len;
                put(&b, src + copied, from - copied);
                if (rewrite_static_shared(&b, src, from, i, semi) == 0) {
                    copied = i = stmt = semi + 1;
                    continue;
                }
                b.len = mark; /* not an array declaration: copied as it is */
                if (b.p != NULL)
                    b.p[b.len] = '\0';
            }
        } else if (c == '_' && SCOPE == SCOPE_NAMESPACE && (i == 0 || !is_ident(src[i - 1])) &&
                   ((i + 10 <= len && strncmp(src + i, "__device__", 10) == 0 && (i + 10 == len || !is_ident(src[i + 10]))) ||
                    (i + 12 <= len && strncmp(src + i, "__constant__", 12) == 0 &&
                     (i + 12 == len || !is_ident(src[i + 12])))) &&
                   !in_directive(src, i)) {
            /* a file-scope __device__ or __constant__ variable: storage the
             * runtime closes to host code (rewrite_device_var) */
            size_t from = skip_gap(src, stmt, i);
            size_t semi = from >= copied ? declaration_end(src, len, from) : (size_t)-1;
            if (semi != (size_t)-1) {
                size_t mark = b.len;
                put(&b, src + copied, from - copied);
                if (rewrite_device_var(&b, src, len, from, semi) == 0) {
                    copied = i = stmt = semi + 1;
                    continue;
                }
                b.len = mark; /* another form: copied as it is */
                if (b.p != NULL)
                    b.p[b.len] = '\0';
            }
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
            puts_(&b, "cml_cpu_launch(CML_CPU_KERNEL(");
            put(&b, src + s, i - s);
            puts_(&b, "), \"");
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
                if (semi >= len || rewrite_extern_shared(&b, src, i, j + 10, semi, !IN_CODE) != 0) {
                    snprintf(err, errlen, "%s:%d: expected 'extern __shared__ TYPE NAME[];'", src_name,
                             line_of(src, i));
                    free(b.p);
                    return -1;
                }
                copied = i = stmt = semi + 1;
                continue;
            }
        }
        ++i;
    }
#undef IN_CODE
#undef SCOPE
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
