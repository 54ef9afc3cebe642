/* access_picture.c: a runner's --picture (cml_access_picture.h): the CPU
 * path's worst warp instructions, read from its CML_CPU_PICTURE file and
 * drawn as an SVG. Everything drawn is computed here from the lanes'
 * addresses (banks, words, phases, sectors, lines); the counts beside it
 * (wavefronts, sectors, requests) are the runtime's. Every number a test
 * may check is also a data-* attribute of its element. */
#define _POSIX_C_SOURCE 200809L
#include "cml/cml_access_picture.h"

#include <stdlib.h>
#include <string.h>

enum { WARP = 32, BANKS = 32, WORD = 4, SECTOR = 32, LINE = 128 };

// ------------------------------------------------------------ reading

static int parse_record(char *text, cml_access *a)
{
    memset(a, 0, sizeof *a);
    int have_offsets = 0, have_space = 0;
    char *save = NULL;
    for (char *f = strtok_r(text, "\t", &save); f != NULL; f = strtok_r(NULL, "\t", &save)) {
        char *eq = strchr(f, '=');
        if (eq == NULL)
            continue;
        *eq = '\0';
        const char *k = f, *v = eq + 1;
        if (strcmp(k, "space") == 0) {
            a->shared = strcmp(v, "shared") == 0;
            have_space = a->shared || strcmp(v, "global") == 0;
        } else if (strcmp(k, "op") == 0) {
            a->store = strcmp(v, "st") == 0;
        } else if (strcmp(k, "kernel") == 0) {
            snprintf(a->kernel, sizeof a->kernel, "%s", v);
        } else if (strcmp(k, "where") == 0) {
            snprintf(a->where, sizeof a->where, "%s", v);
        } else if (strcmp(k, "decl") == 0) {
            snprintf(a->decl, sizeof a->decl, "%s", v);
        } else if (strcmp(k, "instructions") == 0) {
            a->instructions = strtoull(v, NULL, 10);
        } else if (strcmp(k, "requests") == 0) {
            a->requests = strtoull(v, NULL, 10);
        } else if (strcmp(k, "wavefronts") == 0 || strcmp(k, "sectors") == 0) {
            a->count = strtoull(v, NULL, 10);
        } else if (strcmp(k, "ideal") == 0) {
            a->ideal = strtoull(v, NULL, 10);
        } else if (strcmp(k, "size") == 0) {
            a->size = atoi(v);
        } else if (strcmp(k, "worst_wavefronts") == 0 || strcmp(k, "worst_sectors") == 0) {
            a->worst_count = strtoll(v, NULL, 10);
        } else if (strcmp(k, "worst_ideal") == 0) {
            a->worst_ideal = strtoll(v, NULL, 10);
        } else if (strcmp(k, "block") == 0) {
            sscanf(v, "%u,%u,%u", &a->block[0], &a->block[1], &a->block[2]);
        } else if (strcmp(k, "warp") == 0) {
            a->warp = (unsigned)strtoul(v, NULL, 10);
        } else if (strcmp(k, "mask") == 0) {
            a->mask = (uint32_t)strtoul(v, NULL, 16);
        } else if (strcmp(k, "base") == 0) {
            a->base = strtoull(v, NULL, 16);
        } else if (strcmp(k, "offsets") == 0) {
            const char *p = v;
            for (int lane = 0; lane < WARP && *p; ++lane) {
                if (*p != '-')
                    a->offset[lane] = strtoll(p, NULL, 10);
                p = strchr(p, ',');
                if (p == NULL)
                    break;
                ++p;
            }
            have_offsets = 1;
        }
    }
    return have_space && have_offsets && a->mask != 0 && (a->size == 1 || a->size == 2 || a->size == 4 ||
                                                           a->size == 8 || a->size == 16);
}

int cml_access_read(const char *path, cml_access_list *list, char *why, size_t len)
{
    list->a = NULL;
    list->n = 0;
    FILE *in = fopen(path, "r");
    if (in == NULL) {
        snprintf(why, len, "cannot read %s", path);
        return 0;
    }
    char line[8192];
    int cap = 0, lineno = 0, header = 0;
    while (fgets(line, sizeof line, in) != NULL) {
        ++lineno;
        line[strcspn(line, "\r\n")] = '\0';
        if (lineno == 1) {
            header = strcmp(line, "cml-cpu picture 1") == 0;
            if (!header)
                break;
            continue;
        }
        if (strncmp(line, "access\t", 7) != 0)
            continue;
        if (list->n == cap) {
            cap = cap ? 2 * cap : 16;
            cml_access *grown = realloc(list->a, (size_t)cap * sizeof *grown);
            if (grown == NULL) {
                fclose(in);
                cml_access_free(list);
                snprintf(why, len, "out of memory reading %s", path);
                return 0;
            }
            list->a = grown;
        }
        if (parse_record(line + 7, &list->a[list->n]))
            ++list->n;
    }
    fclose(in);
    if (!header) {
        cml_access_free(list);
        snprintf(why, len, "%s is not a CML_CPU_PICTURE file (its first line is not \"cml-cpu picture 1\")", path);
        return 0;
    }
    return 1;
}

void cml_access_free(cml_access_list *list)
{
    free(list->a);
    list->a = NULL;
    list->n = 0;
}

// ------------------------------------------------------------ what the lanes touch

static int phases_of(const cml_access *a) { return a->size > WORD ? a->size / WORD : 1; }
static int words_of(const cml_access *a) { return a->size > WORD ? a->size / WORD : 1; }
static int active(const cml_access *a, int lane) { return (int)(a->mask >> lane & 1u); }
/* the lane's k-th 4-byte word, counted from the variable's start */
static long long word_of(const cml_access *a, int lane, int k) { return a->offset[lane] / WORD + k; }
static long long bank_of(long long word) { return ((word % BANKS) + BANKS) % BANKS; }

/* One phase of a shared access: each bank's distinct words (sorted) and, per
 * word, how many lanes touch it. */
typedef struct phase {
    int first, lanes;               /* lanes first .. first + lanes - 1 */
    int nwords[BANKS];
    long long word[BANKS][WARP * 4];
    int users[BANKS][WARP * 4];
    int degree;                     /* the most distinct words of one bank (at least 1) */
    int broadcast;                  /* a word touched by two lanes or more */
} phase;

static void fill_phase(const cml_access *a, int p, phase *ph)
{
    memset(ph, 0, sizeof *ph);
    ph->lanes = WARP / phases_of(a);
    ph->first = p * ph->lanes;
    for (int lane = ph->first; lane < ph->first + ph->lanes; ++lane) {
        if (!active(a, lane))
            continue;
        for (int k = 0; k < words_of(a); ++k) {
            long long w = word_of(a, lane, k);
            int b = (int)bank_of(w), at = 0;
            while (at < ph->nwords[b] && ph->word[b][at] < w)
                ++at;
            if (at < ph->nwords[b] && ph->word[b][at] == w) {
                ++ph->users[b][at];
                continue;
            }
            for (int j = ph->nwords[b]; j > at; --j) {
                ph->word[b][j] = ph->word[b][j - 1];
                ph->users[b][j] = ph->users[b][j - 1];
            }
            ph->word[b][at] = w;
            ph->users[b][at] = 1;
            ++ph->nwords[b];
        }
    }
    ph->degree = 1;
    for (int b = 0; b < BANKS; ++b) {
        ph->degree = ph->nwords[b] > ph->degree ? ph->nwords[b] : ph->degree;
        for (int i = 0; i < ph->nwords[b]; ++i)
            ph->broadcast |= ph->users[b][i] > 1;
    }
}

int cml_access_degree(const cml_access *a)
{
    static phase ph;
    int degree = 1;
    for (int p = 0; p < phases_of(a); ++p) {
        fill_phase(a, p, &ph);
        degree = ph.degree > degree ? ph.degree : degree;
    }
    return degree;
}

/* How far apart the lanes' words lie (the last one's - the first's). */
static long long word_span(const cml_access *a)
{
    long long lo = 0, hi = 0;
    int seen = 0;
    for (int lane = 0; lane < WARP; ++lane)
        if (active(a, lane)) {
            long long w = word_of(a, lane, 0);
            lo = seen && lo < w ? lo : w;
            hi = seen && hi > w ? hi : w;
            seen = 1;
        }
    return hi - lo;
}

const cml_access *cml_access_worst(const cml_access_list *list, int shared, const char *skip_prefix)
{
    const cml_access *best = NULL;
    for (int i = 0; i < list->n; ++i) {
        const cml_access *a = &list->a[i];
        if (a->shared != shared || (skip_prefix && strncmp(a->kernel, skip_prefix, strlen(skip_prefix)) == 0))
            continue;
        if (best == NULL) {
            best = a;
            continue;
        }
        /* shared: wavefronts per phase (compared as fractions), then the line's extra wavefronts;
         * global: sectors beyond the ideal, then sectors, then the line's extra sectors */
        long long x0, y0, x1, y1;
        if (shared) {
            x0 = a->worst_count * (best->worst_ideal ? best->worst_ideal : 1);
            y0 = best->worst_count * (a->worst_ideal ? a->worst_ideal : 1);
            x1 = (long long)(a->count - a->ideal);
            y1 = (long long)(best->count - best->ideal);
            if (x0 == y0 && x1 == y1) { /* no conflict either: the wider spread of words (a padded column read) */
                x1 = word_span(a);
                y1 = word_span(best);
            }
        } else {
            x0 = a->worst_count - a->worst_ideal;
            y0 = best->worst_count - best->worst_ideal;
            x1 = x0 == y0 ? a->worst_count : 0;
            y1 = x0 == y0 ? best->worst_count : 0;
            if (x0 == y0 && x1 == y1) {
                x1 = (long long)(a->count - a->ideal);
                y1 = (long long)(best->count - best->ideal);
            }
        }
        if (x0 > y0 || (x0 == y0 && x1 > y1))
            best = a;
    }
    return best;
}

// ------------------------------------------------------------ text

static void xml_text(FILE *out, const char *s)
{
    for (; *s; ++s) {
        switch (*s) {
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '&': fputs("&amp;", out); break;
        case '"': fputs("&quot;", out); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t')
                fputc(*s == '\t' ? ' ' : *s, out);
        }
    }
}

static const char *commas(unsigned long long v, char *buf, size_t len)
{
    char digits[32];
    snprintf(digits, sizeof digits, "%llu", v);
    size_t n = strlen(digits), o = 0;
    for (size_t i = 0; i < n && o + 2 < len; ++i) {
        if (i > 0 && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = '\0';
    return buf;
}

/* "file.cu:LINE" of a record (its directory left out). */
static const char *short_where(const cml_access *a)
{
    const char *slash = strrchr(a->where, '/');
    return slash != NULL ? slash + 1 : a->where;
}

/* The source line's text, trimmed, when the file can be read; "" else. */
static void source_text(const cml_access *a, char *buf, size_t len)
{
    buf[0] = '\0';
    char path[512];
    snprintf(path, sizeof path, "%s", a->where);
    char *colon = strrchr(path, ':');
    if (colon == NULL)
        return;
    *colon = '\0';
    long want = strtol(colon + 1, NULL, 10);
    FILE *in = fopen(path, "r");
    if (in == NULL || want <= 0) {
        if (in != NULL)
            fclose(in);
        return;
    }
    char line[1024];
    long n = 0;
    while (fgets(line, sizeof line, in) != NULL)
        if (++n == want) {
            char *s = line;
            while (*s == ' ' || *s == '\t')
                ++s;
            s[strcspn(s, "\r\n")] = '\0';
            if (strlen(s) > 110)
                strcpy(s + 104, " ...");
            snprintf(buf, len, "%s", s);
            break;
        }
    fclose(in);
}

void cml_access_headline(const cml_access *a, char *buf, size_t len)
{
    if (a->shared) {
        int degree = cml_access_degree(a), phases = phases_of(a);
        char phase_note[96] = "";
        if (phases > 1)
            snprintf(phase_note, sizeof phase_note, " (%d-byte accesses: %d phases of %d lanes, each 1 at best)",
                     a->size, phases, WARP / phases);
        if (degree > 1)
            snprintf(buf, len, "%d-way bank conflict: %lld wavefronts for this request (ideal: %lld wavefront%s)%s",
                     degree, a->worst_count, a->worst_ideal, a->worst_ideal == 1 ? "" : "s", phase_note);
        else
            snprintf(buf, len, "no bank conflict: %lld wavefront%s for this request (ideal: %lld)%s", a->worst_count,
                     a->worst_count == 1 ? "" : "s", a->worst_ideal, phase_note);
    } else {
        snprintf(buf, len, "%lld sectors for this request (ideal: %lld sector%s per request)", a->worst_count,
                 a->worst_ideal, a->worst_ideal == 1 ? "" : "s");
    }
}

// ------------------------------------------------------------ drawing

enum { W = 1000, LEFT = 84, PITCH = 28, CELL = 24, TITLE_H = 40 };

static const char *const style =
    "<style>\n"
    "  text { font-family: 'DejaVu Sans', Verdana, Arial, sans-serif; }\n"
    "  .m { text-anchor: middle; } .e { text-anchor: end; }\n"
    "  .t8 { font-size: 8px; } .t9 { font-size: 9px; } .t10 { font-size: 10px; } .t11 { font-size: 11px; }\n"
    "  .t12 { font-size: 12px; } .t13 { font-size: 13px; } .t14 { font-size: 14px; } .t15 { font-size: 15px; }\n"
    "  .t18 { font-size: 18px; }\n"
    "  .n { fill: #ffffff; font-size: 11px; font-weight: bold; text-anchor: middle; }\n"
    "  .w { stroke-width: 1.3; stroke-opacity: 0.8; }\n"
    "  .s1 { stroke: #2e9e52; } .s2 { stroke: #d9a400; } .s3 { stroke: #ec7a12; }\n"
    "  .s4 { stroke: #de4a26; } .s5 { stroke: #c4213a; } .s6 { stroke: #8e1346; }\n"
    "  .f1 { fill: #2e9e52; } .f2 { fill: #d9a400; } .f3 { fill: #ec7a12; }\n"
    "  .f4 { fill: #de4a26; } .f5 { fill: #c4213a; } .f6 { fill: #8e1346; } .fb { fill: #7b3fc4; }\n"
    "  .bg { fill: #ffffff; }\n"
    "  .fg { fill: #1d1f23; }\n"
    "  .dim { fill: #5c6470; }\n"
    "  .code { fill: #1d1f23; font-family: 'DejaVu Sans Mono', Menlo, Consolas, monospace; }\n"
    "  .lane { fill: #e8eef6; stroke: #6d7f95; }\n"
    "  .idle { fill: none; stroke: #a0a8b4; stroke-dasharray: 3 2; }\n"
    "  .bank { stroke: #6d7f95; }\n"
    "  .empty { fill: #f4f6f9; }\n"
    "  .sector { fill: #f4f6f9; stroke: #6d7f95; }\n"
    "  .fetched { fill: #b9cdec; }\n"
    "  .used { fill: #2f62b3; }\n"
    "  .line128 { fill: none; stroke: #1d1f23; stroke-width: 1.5; }\n"
    "  .wire { stroke: #4f79b8; stroke-opacity: 0.85; stroke-width: 1.2; }\n"
    "  .rule { fill: #c5cbd3; }\n"
    "  @media (prefers-color-scheme: dark) {\n"
    "    .bg { fill: #15171b; }\n"
    "    .fg, .code { fill: #e4e6ea; }\n"
    "    .dim { fill: #a3acb8; }\n"
    "    .lane { fill: #283241; stroke: #8ea2bb; }\n"
    "    .idle { stroke: #6b7482; }\n"
    "    .bank { stroke: #8ea2bb; }\n"
    "    .empty, .sector { fill: #222731; }\n"
    "    .sector { stroke: #8ea2bb; }\n"
    "    .fetched { fill: #3b5687; }\n"
    "    .used { fill: #8db4f2; }\n"
    "    .line128 { stroke: #e4e6ea; }\n"
    "    .wire { stroke: #8db4f2; }\n"
    "    .rule { fill: #3a414d; }\n"
    "  }\n"
    "</style>\n";

/* A bank's colour by its conflict degree, the k of the style's sK (stroke)
 * and fK (fill) classes: 1, 2, 3-4, 5-8, 9-16, 17-32 (mid-tones, readable
 * on light and dark). */
static int degree_class(int degree)
{
    return degree <= 1 ? 1 : degree == 2 ? 2 : degree <= 4 ? 3 : degree <= 8 ? 4 : degree <= 16 ? 5 : 6;
}

static double lane_x(int lane) { return LEFT + lane * PITCH + CELL / 2.0; }

static void text_at(FILE *out, double x, double y, const char *cls, int size, const char *anchor, const char *s)
{
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"%s t%d%s\">", x, y, cls, size,
            anchor == NULL ? "" : strcmp(anchor, "end") == 0 ? " e" : " m");
    xml_text(out, s);
    fputs("</text>\n", out);
}

/* The caption's lines; returns the y below them. */
static double caption(FILE *out, const cml_access *a, double y, const char *space_name, const char *what)
{
    char buf[1200], n1[32], n2[32], n3[32], src[512];
    snprintf(buf, sizeof buf, "%s · %s · %s · %s%s%s", space_name, a->store ? "st (store)" : "ld (load)",
             short_where(a), a->kernel,
             !a->decl[0] ? "" : strncmp(a->decl, "extern", 6) == 0 ? " · " : " · __shared__ ", a->decl);
    text_at(out, 16, y, "fg", 15, NULL, buf);
    cml_access_headline(a, buf, sizeof buf);
    text_at(out, 16, y + 21, "fg", 14, NULL, buf);
    double per = a->requests ? (double)a->count / (double)a->requests : 0.0;
    double ideal = a->requests ? (double)a->ideal / (double)a->requests : 0.0;
    snprintf(buf, sizeof buf, "The line ran %s times (%s requests): %s %s in all, %.2f per request (ideal: %.2f per "
             "request).", commas(a->instructions, n1, sizeof n1), commas(a->requests, n2, sizeof n2),
             commas(a->count, n3, sizeof n3), what, per, ideal);
    text_at(out, 16, y + 40, "dim", 12, NULL, buf);
    snprintf(buf, sizeof buf, "Drawn: its worst request, block (%u,%u,%u), warp %u, %d of 32 lanes, %d-byte accesses.",
             a->block[0], a->block[1], a->block[2], a->warp, __builtin_popcount(a->mask), a->size);
    text_at(out, 16, y + 56, "dim", 12, NULL, buf);
    source_text(a, src, sizeof src);
    if (src[0]) {
        text_at(out, 16, y + 74, "code", 12, NULL, src);
        return y + 90;
    }
    return y + 72;
}

static void panel_attrs_common(FILE *out, const cml_access *a)
{
    fprintf(out, " data-op=\"%s\" data-kernel=\"", a->store ? "st" : "ld");
    xml_text(out, a->kernel);
    fputs("\" data-where=\"", out);
    xml_text(out, short_where(a));
    fprintf(out, "\" data-access-bytes=\"%d\" data-lanes=\"%d\" data-instructions=\"%llu\" data-requests=\"%llu\"",
            a->size, __builtin_popcount(a->mask), a->instructions, a->requests);
}

static void lane_box(FILE *out, const cml_access *a, int lane, double y, int drawn)
{
    double x = LEFT + lane * PITCH;
    if (!drawn)
        return;
    fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"20\" rx=\"3\" class=\"%s\" data-lane=\"%d\" "
            "data-active=\"%d\"/>\n", x, y, CELL, active(a, lane) ? "lane" : "idle", lane, active(a, lane));
    char num[8];
    snprintf(num, sizeof num, "%d", lane);
    text_at(out, x + CELL / 2.0, y + 14, active(a, lane) ? "fg" : "dim", 10, "middle", num);
}

/* One sentence on a phase, from its busiest bank: which words wait in
 * line there; or, with no conflict, where one lane's word lands. */
static void bank_story(const cml_access *a, const phase *ph, char *buf, size_t len)
{
    int busiest = 0;
    for (int b = 1; b < BANKS; ++b)
        busiest = ph->nwords[b] > ph->nwords[busiest] ? b : busiest;
    int n = ph->nwords[busiest];
    if (n > 1) {
        int at = snprintf(buf, len, "Bank %d holds %d different words (", busiest, n);
        for (int i = 0; i < n && at > 0 && (size_t)at < len; ++i) {
            if (n > 6 && i == 4) {
                at += snprintf(buf + at, len - (size_t)at, "... ");
                i = n - 1;
            }
            at += snprintf(buf + at, len - (size_t)at, "%s%lld", i && !(n > 6 && i == n - 1) ? ", " : "",
                           ph->word[busiest][i]);
        }
        if (at > 0 && (size_t)at < len)
            snprintf(buf + at, len - (size_t)at, "): they are served one after another, %d wavefronts.", n);
        return;
    }
    int lane = ph->first + 1 < ph->first + ph->lanes && active(a, ph->first + 1) ? ph->first + 1 : ph->first;
    long long w = word_of(a, lane, 0);
    int users = 0;
    for (int b = 0; b < BANKS; ++b)
        for (int i = 0; i < ph->nwords[b]; ++i)
            users = ph->users[b][i] > users ? ph->users[b][i] : users;
    if (users > 1)
        snprintf(buf, len, "Every bank holds at most one word; %d lanes share one word (a broadcast): one wavefront.",
                 users);
    else
        snprintf(buf, len, "Every bank holds at most one word: e.g. lane %d %s word %lld, bank %lld (%lld mod 32). "
                 "One wavefront.", lane, a->store ? "writes" : "reads", w, bank_of(w), w);
}

/* Shared memory: per phase, its lanes above the 32 banks, a line from each
 * lane to each word it touches; a bank's distinct words side by side on its
 * top edge (lanes on one word meet at one point: a broadcast), the bank
 * filled by how many distinct words it holds (the conflict degree). */
static double shared_panel(FILE *out, const cml_access *a, double y)
{
    static phase ph;
    int phases = phases_of(a), degree = cml_access_degree(a), drawn_wavefronts = 0, broadcast = 0;
    for (int p = 0; p < phases; ++p) {
        fill_phase(a, p, &ph);
        drawn_wavefronts += ph.degree;
        broadcast |= ph.broadcast;
    }
    fprintf(out, "<g class=\"panel\" data-space=\"shared\"");
    panel_attrs_common(out, a);
    fprintf(out, " data-degree=\"%d\" data-phases=\"%d\" data-wavefronts=\"%llu\" data-ideal=\"%llu\" "
            "data-worst-wavefronts=\"%lld\" data-worst-ideal=\"%lld\" data-drawn-wavefronts=\"%d\" "
            "data-broadcast=\"%d\" data-variable=\"",
            degree, phases, a->count, a->ideal, a->worst_count, a->worst_ideal, drawn_wavefronts, broadcast);
    xml_text(out, a->decl);
    fputs("\">\n", out);
    y = caption(out, a, y, "Shared memory", "wavefronts");
    for (int p = 0; p < phases; ++p) {
        fill_phase(a, p, &ph);
        double ly = y + (phases > 1 ? 16 : 4), by = ly + 20 + 84;
        if (phases > 1) {
            char buf[160];
            snprintf(buf, sizeof buf, "phase %d of %d: lanes %d-%d (%d wavefront%s)", p + 1, phases, ph.first,
                     ph.first + ph.lanes - 1, ph.degree, ph.degree == 1 ? "" : "s");
            text_at(out, 16, y + 8, "fg", 12, NULL, buf);
        }
        fprintf(out, "<g class=\"phase\" data-phase=\"%d\" data-degree=\"%d\" data-first-lane=\"%d\" data-lanes=\"%d\">\n",
                p, ph.degree, ph.first, ph.lanes);
        text_at(out, LEFT - 8, ly + 14, "dim", 11, "end", "lane");
        text_at(out, LEFT - 8, by + 22, "dim", 11, "end", "bank");
        /* the wires first, under the boxes */
        for (int lane = ph.first; lane < ph.first + ph.lanes; ++lane) {
            if (!active(a, lane))
                continue;
            for (int k = 0; k < words_of(a); ++k) {
                long long w = word_of(a, lane, k);
                int b = (int)bank_of(w), slot = 0;
                while (slot < ph.nwords[b] && ph.word[b][slot] != w)
                    ++slot;
                double x2 = LEFT + b * PITCH + (slot + 0.5) * CELL / ph.nwords[b];
                fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"w s%d\" data-lane=\"%d\" "
                        "data-bank=\"%d\" data-word=\"%lld\"%s/>\n",
                        lane_x(lane), ly + 20, x2, by, degree_class(ph.nwords[b]), lane, b, w,
                        ph.users[b][slot] > 1 ? " data-broadcast=\"1\"" : "");
            }
        }
        for (int lane = 0; lane < WARP; ++lane)
            lane_box(out, a, lane, ly, lane >= ph.first && lane < ph.first + ph.lanes);
        for (int b = 0; b < BANKS; ++b) {
            double x = LEFT + b * PITCH;
            int n = ph.nwords[b];
            if (n > 0)
                fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"30\" rx=\"2\" class=\"bank f%d\" "
                        "data-bank=\"%d\" data-words=\"%d\"/>\n", x, by, CELL, degree_class(n), b, n);
            else
                fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"30\" rx=\"2\" class=\"bank empty\" "
                        "data-bank=\"%d\" data-words=\"0\"/>\n", x, by, CELL, b);
            char num[32];
            if (n > 0) {
                snprintf(num, sizeof num, "%d", n);
                fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"n\">%s</text>\n", x + CELL / 2.0, by + 20, num);
            }
            snprintf(num, sizeof num, "%d", b);
            text_at(out, x + CELL / 2.0, by + 42, "dim", 9, "middle", num);
            if (n == 1 && ph.word[b][0] < 100000) { /* its one word, under it */
                snprintf(num, sizeof num, "w%lld", ph.word[b][0]);
                text_at(out, x + CELL / 2.0, by + 53, "dim", 8, "middle", num);
            }
            for (int i = 0; i < n; ++i) { /* a word two lanes or more share: a dot where they meet */
                if (ph.users[b][i] > 1)
                    fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" class=\"fb\" data-bank=\"%d\" "
                            "data-word=\"%lld\" data-lanes=\"%d\"/>\n",
                            x + (i + 0.5) * CELL / n, by, b, ph.word[b][i], ph.users[b][i]);
            }
        }
        char say[300];
        bank_story(a, &ph, say, sizeof say);
        text_at(out, LEFT, by + 70, "fg", 12, NULL, say);
        fputs("</g>\n", out);
        y = by + 84;
    }
    /* the legend */
    static const int shown[] = {1, 2, 4, 8, 16, 32};
    static const char *const label[] = {"1 word: no conflict", "2-way", "3-4-way", "5-8-way", "9-16-way", "17-32-way"};
    double x = 16;
    for (int k = 0; k < 6; ++k) {
        fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"12\" class=\"f%d\"/>\n", x, y,
                degree_class(shown[k]));
        text_at(out, x + 19, y + 10, "fg", 11, NULL, label[k]);
        x += 19 + 8.0 * (double)strlen(label[k]) + 14;
    }
    fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" class=\"fb\"/>\n", x + 5, y + 6);
    text_at(out, x + 14, y + 10, "fg", 11, NULL, "a word read by 2+ lanes: broadcast, no extra cost");
    text_at(out, 16, y + 28, "dim", 11, NULL,
            "A bank's number = how many different 4-byte words its lanes touch in one phase: each costs a wavefront. "
            "Banks counted from the variable's start.");
    fputs("</g>\n", out);
    return y + 44;
}

/* Global memory: the lanes above the 128-byte lines they touch (only those,
 * in address order; a gap marks lines left out between them), each line
 * four 32-byte sectors: a touched sector is fetched whole (light), the
 * bytes the lanes use are dark. */
static double global_panel(FILE *out, const cml_access *a, double y)
{
    long long lines[2 * WARP];
    int nlines = 0;
    unsigned char touched[2 * WARP][4] = {{0}};
    unsigned char used[2 * WARP][LINE];
    memset(used, 0, sizeof used);
    for (int lane = 0; lane < WARP; ++lane) {
        if (!active(a, lane))
            continue;
        for (long long byte = a->offset[lane]; byte < a->offset[lane] + a->size; ++byte) {
            long long l = byte / LINE;
            int at = 0;
            while (at < nlines && lines[at] < l)
                ++at;
            if (at == nlines || lines[at] != l) {
                if (nlines == 2 * WARP)
                    continue;
                memmove(&lines[at + 1], &lines[at], (size_t)(nlines - at) * sizeof lines[0]);
                memmove(&touched[at + 1], &touched[at], (size_t)(nlines - at) * sizeof touched[0]);
                memmove(&used[at + 1], &used[at], (size_t)(nlines - at) * sizeof used[0]);
                memset(touched[at], 0, sizeof touched[at]);
                memset(used[at], 0, sizeof used[at]);
                lines[at] = l;
                ++nlines;
            }
            touched[at][byte % LINE / SECTOR] = 1;
            used[at][byte % LINE] = 1;
        }
    }
    int sectors = 0, bytes_used = 0, gaps = 0;
    for (int i = 0; i < nlines; ++i) {
        for (int s = 0; s < 4; ++s)
            sectors += touched[i][s];
        for (int b = 0; b < LINE; ++b)
            bytes_used += used[i][b];
        gaps += i > 0 && lines[i] != lines[i - 1] + 1;
    }
    double per = a->requests ? (double)a->count / (double)a->requests : 0.0;
    double ideal = a->requests ? (double)a->ideal / (double)a->requests : 0.0;
    fprintf(out, "<g class=\"panel\" data-space=\"global\"");
    panel_attrs_common(out, a);
    fprintf(out, " data-sectors=\"%llu\" data-ideal=\"%llu\" data-sectors-per-request=\"%.2f\" "
            "data-ideal-per-request=\"%.2f\" data-worst-sectors=\"%lld\" data-worst-ideal=\"%lld\" "
            "data-drawn-sectors=\"%d\" data-lines=\"%d\" data-bytes-used=\"%d\" data-bytes-fetched=\"%d\">\n",
            a->count, a->ideal, per, ideal, a->worst_count, a->worst_ideal, sectors, nlines, bytes_used, sectors * SECTOR);
    y = caption(out, a, y, "Global memory", "sectors");
    char buf[200];
    const char *moved = a->store ? "written" : "fetched"; /* a store moves whole sectors too */
    snprintf(buf, sizeof buf, "%d bytes used of %d %s (%d sector%s of 32 bytes in %d line%s of 128 bytes)",
             bytes_used, sectors * SECTOR, moved, sectors, sectors == 1 ? "" : "s", nlines, nlines == 1 ? "" : "s");
    text_at(out, 16, y, "fg", 12, NULL, buf);
    double ly = y + 12, sy = ly + 20 + 96;
    const double span = WARP * PITCH - (PITCH - CELL), gap_w = 14, pad = 4;
    double lw = (span - gaps * gap_w - (nlines - 1) * pad) / (nlines > 0 ? nlines : 1);
    if (lw > 200)
        lw = 200;
    double total = nlines * lw + gaps * gap_w + (nlines - 1) * pad;
    double x0 = LEFT + (span - total) / 2, xs[2 * WARP];
    for (int i = 0; i < nlines; ++i) {
        xs[i] = x0;
        x0 += lw + pad + (i + 1 < nlines && lines[i + 1] != lines[i] + 1 ? gap_w : 0);
    }
    text_at(out, LEFT - 8, ly + 14, "dim", 11, "end", "lane");
    text_at(out, LEFT - 8, sy + 22, "dim", 11, "end", "memory");
    for (int lane = 0; lane < WARP; ++lane) {
        if (!active(a, lane))
            continue;
        long long first = a->offset[lane], l = first / LINE;
        int i = 0;
        while (i < nlines && lines[i] != l)
            ++i;
        if (i == nlines)
            continue;
        double mid = (double)(first % LINE) + a->size / 2.0;
        double x2 = xs[i] + lw * (mid > LINE ? LINE : mid) / LINE;
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"wire\" "
                "data-lane=\"%d\" data-offset=\"%lld\" data-sector=\"%lld\"/>\n",
                lane_x(lane), ly + 20, x2, sy, lane, first, first / SECTOR);
    }
    for (int lane = 0; lane < WARP; ++lane)
        lane_box(out, a, lane, ly, 1);
    for (int i = 0; i < nlines; ++i) {
        fprintf(out, "<g class=\"line\" data-line=\"%lld\" data-offset=\"%lld\">\n", lines[i], lines[i] * LINE);
        for (int s = 0; s < 4; ++s) {
            double x = xs[i] + s * lw / 4;
            int n = 0;
            for (int b = s * SECTOR; b < (s + 1) * SECTOR; ++b)
                n += used[i][b];
            fprintf(out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"30\" class=\"sector%s\" "
                    "data-sector=\"%lld\" data-touched=\"%d\" data-bytes-used=\"%d\"/>\n",
                    x, sy, lw / 4, touched[i][s] ? " fetched" : "", lines[i] * 4 + s, touched[i][s], n);
            for (int b = s * SECTOR; b < (s + 1) * SECTOR; ++b) { /* runs of used bytes */
                if (!used[i][b] || (b > s * SECTOR && used[i][b - 1]))
                    continue;
                int e = b;
                while (e < (s + 1) * SECTOR && used[i][e])
                    ++e;
                fprintf(out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"14\" class=\"used\"/>\n",
                        xs[i] + lw * b / LINE, sy + 8, lw * (e - b) / LINE);
            }
        }
        fprintf(out, "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"30\" class=\"line128\"/>\n", xs[i], sy, lw);
        char label[32];
        snprintf(label, sizeof label, "+%lld", lines[i] * LINE);
        if (lw >= 44)
            text_at(out, xs[i] + lw / 2, sy + 44, "dim", 10, "middle", label);
        else
            fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"dim t9\" transform=\"rotate(60 %.1f %.1f)\">%s"
                    "</text>\n", xs[i] + lw / 2, sy + 38, xs[i] + lw / 2, sy + 38, label);
        if (i > 0 && lines[i] != lines[i - 1] + 1)
            text_at(out, xs[i] - gap_w / 2 - pad / 2, sy + 20, "dim", 12, "middle", "…");
        fputs("</g>\n", out);
    }
    y = sy + (lw >= 44 ? 60 : 84);
    fprintf(out, "<rect x=\"16\" y=\"%.1f\" width=\"18\" height=\"12\" class=\"sector fetched\"/>\n", y);
    snprintf(buf, sizeof buf, "sector %s (32 bytes)", moved);
    text_at(out, 40, y + 10, "fg", 11, NULL, buf);
    fprintf(out, "<rect x=\"200\" y=\"%.1f\" width=\"18\" height=\"12\" class=\"used\"/>\n", y);
    text_at(out, 224, y + 10, "fg", 11, NULL, "bytes the lanes use");
    fprintf(out, "<rect x=\"360\" y=\"%.1f\" width=\"18\" height=\"12\" class=\"line128\"/>\n", y);
    text_at(out, 384, y + 10, "fg", 11, NULL, "128-byte line (labels: bytes from the first)");
    char ideal_note[200]; /* the coalesced case at this request's access size */
    snprintf(ideal_note, sizeof ideal_note, "Ideal: the fewest sectors that hold the bytes used (32 lanes x %d consecutive "
             "bytes = %d bytes = %d sectors). Only touched lines are drawn; ... marks lines skipped.", a->size,
             32 * a->size, (32 * a->size + SECTOR - 1) / SECTOR);
    text_at(out, 16, y + 28, "dim", 11, NULL, ideal_note);
    fputs("</g>\n", out);
    return y + 44;
}

static double none_panel(FILE *out, const char *space, const char *text, double y)
{
    fprintf(out, "<g class=\"panel\" data-space=\"%s\" data-none=\"1\">\n", space);
    text_at(out, 16, y, "fg", 15, NULL, strcmp(space, "shared") == 0 ? "Shared memory" : "Global memory");
    text_at(out, 16, y + 20, "dim", 13, NULL, text);
    fputs("</g>\n", out);
    return y + 44;
}

int cml_access_svg(FILE *out, const char *title, const cml_access *shared, const cml_access *global,
                   const char *none_shared, const char *none_global, const char *footer)
{
    /* drawn into memory first: the height is known at the end */
    char *body = NULL;
    size_t body_len = 0;
    FILE *mem = open_memstream(&body, &body_len);
    if (mem == NULL)
        return -1;
    double y = TITLE_H + 14;
    y = shared ? shared_panel(mem, shared, y) : none_panel(mem, "shared", none_shared, y);
    fprintf(mem, "<rect x=\"16\" y=\"%.1f\" width=\"%d\" height=\"1\" class=\"rule\"/>\n", y - 8, W - 32);
    y = global ? global_panel(mem, global, y + 14) : none_panel(mem, "global", none_global, y + 14);
    text_at(mem, 16, y + 4, "dim", 11, NULL, footer);
    fclose(mem);
    int height = (int)y + 16;
    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "role=\"img\">\n", W, height, W, height);
    fputs("<title>", out);
    xml_text(out, title);
    fputs("</title>\n", out);
    fputs(style, out);
    fprintf(out, "<rect class=\"bg\" x=\"0\" y=\"0\" width=\"%d\" height=\"%d\"/>\n", W, height);
    text_at(out, 16, 28, "fg", 18, NULL, title);
    fwrite(body, 1, body_len, out);
    free(body);
    fputs("</svg>\n", out);
    return ferror(out) ? -1 : 0;
}
