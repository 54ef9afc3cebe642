#define _POSIX_C_SOURCE 200809L /* gmtime_r */
#include "cml/cml_report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BAR_WIDTH 24
#define NAME_WIDTH "30" /* the longest row name: "copy kernel, 16-byte accesses" */

/* The lab's data and how each row was timed: "<params>, median of N runs"
 * (the lab's words alone when nothing was timed). */
static void described(const cml_report *r, char *buf, size_t len)
{
    if (r->runs > 0)
        snprintf(buf, len, "%s, median of %d runs", r->params, r->runs);
    else
        snprintf(buf, len, "%s", r->params);
}

void cml_report_init(cml_report *r, const char *lab, const char *title, const char *unit)
{
    memset(r, 0, sizeof *r);
    r->lab = lab;
    r->title = title;
    r->unit = unit;
    time_t now = time(NULL);
    struct tm utc;
    gmtime_r(&now, &utc);
    strftime(r->date, sizeof r->date, "%Y-%m-%d", &utc);
}

cml_row *cml_report_add(cml_report *r, cml_row_kind kind, int step, const char *name)
{
    if (r->nrows >= CML_REPORT_MAX_ROWS)
        return NULL;
    cml_row *row = &r->rows[r->nrows++];
    memset(row, 0, sizeof *row);
    row->kind = kind;
    row->step = step;
    row->status = CML_ROW_NOT_RUN;
    snprintf(row->name, sizeof row->name, "%s", name);
    return row;
}

static const char *status_word(cml_row_status s)
{
    switch (s) {
    case CML_ROW_OK: return "ok";
    case CML_ROW_WRONG: return "WRONG";
    case CML_ROW_ERROR: return "ERROR";
    default: return "not run";
    }
}

static void step_label(const cml_row *row, char *buf, size_t len)
{
    if (row->kind == CML_ROW_STEP)
        snprintf(buf, len, "%d", row->step);
    else
        snprintf(buf, len, "%s", row->kind == CML_ROW_ANCHOR ? "lib" : "max");
}

static double share(const cml_report *r, const cml_row *row)
{
    return r->ceiling_rate > 0 && row->timed ? row->rate / r->ceiling_rate : 0.0;
}

/* The CPU path's table: the same rows, every time labelled emulated, no
 * ceiling, no share of one, no bar. */
static void print_emulated_table(const cml_report *r, FILE *out)
{
    char dev[400], data[sizeof r->params + 40];
    cml_device_describe(&r->device, dev, sizeof dev);
    described(r, data, sizeof data);
    fprintf(out, "\n%s: %s\n", r->lab, r->title);
    fprintf(out, "Device: %s -- EMULATED\n%s, seed %llu, %s\n", dev, data, (unsigned long long)r->seed,
            r->date);
    fprintf(out, "The kernels ran on the CPU path (common/cpu): the checks are real, the times are the CPU's\n"
                 "(emulated), not a GPU's, and are compared with no ceiling.\n\n");
    fprintf(out, "step  %-" NAME_WIDTH "s %-7s %12s %10s\n", "kernel", "check", "emulated ms", r->unit);
    for (int i = 0; i < r->nrows; ++i) {
        const cml_row *row = &r->rows[i];
        char label[8];
        step_label(row, label, sizeof label);
        if (row->timed)
            fprintf(out, "%-4s  %-" NAME_WIDTH "s %-7s %12.3f %10.3f  (emulated)\n", label, row->name,
                    status_word(row->status), row->ms, row->rate);
        else
            fprintf(out, "%-4s  %-" NAME_WIDTH "s %-7s %12s %10s\n", label, row->name, status_word(row->status), "-",
                    "-");
        if (row->note[0] && row->status != CML_ROW_OK)
            fprintf(out, "      ^ %s\n", row->note);
    }
    fputc('\n', out);
}

void cml_report_print_table(const cml_report *r, FILE *out)
{
    if (r->emulated) {
        print_emulated_table(r, out);
        return;
    }
    char dev[400], data[sizeof r->params + 40];
    cml_device_describe(&r->device, dev, sizeof dev);
    described(r, data, sizeof data);
    fprintf(out, "\n%s: %s\n", r->lab, r->title);
    fprintf(out, "GPU: %s\n%s, seed %llu, %s\n", dev, data, (unsigned long long)r->seed, r->date);
    fprintf(out, "100%% = %s, %.1f %s, measured in this run\n\n", r->ceiling_name, r->ceiling_rate, r->unit);
    fprintf(out, "step  %-" NAME_WIDTH "s %-7s %10s %10s %6s  %s\n", "kernel", "check", "median ms", r->unit,
            "% max", "");
    for (int i = 0; i < r->nrows; ++i) {
        const cml_row *row = &r->rows[i];
        char label[8], bar[BAR_WIDTH + 3];
        step_label(row, label, sizeof label);
        if (row->timed) {
            double f = share(r, row);
            int fill = (int)(f * BAR_WIDTH + 0.5);
            if (fill > BAR_WIDTH) fill = BAR_WIDTH;
            bar[0] = '|';
            for (int k = 0; k < BAR_WIDTH; ++k)
                bar[1 + k] = k < fill ? '#' : (k == BAR_WIDTH - 1 ? '|' : '.');
            if (f > 1.0)
                bar[BAR_WIDTH] = '>';
            bar[BAR_WIDTH + 1] = '\0';
            fprintf(out, "%-4s  %-" NAME_WIDTH "s %-7s %10.3f %10.1f %5.0f%%  %s\n", label, row->name,
                    status_word(row->status), row->ms, row->rate, 100.0 * f, bar);
        } else {
            fprintf(out, "%-4s  %-" NAME_WIDTH "s %-7s %10s %10s %6s\n", label, row->name,
                    status_word(row->status), "-", "-", "-");
        }
        if (row->note[0] && row->status != CML_ROW_OK)
            fprintf(out, "      ^ %s\n", row->note);
    }
    fputc('\n', out);
}

void cml_json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; s && *s; ++s) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

void cml_report_print_json(const cml_report *r, FILE *out)
{
    static const char *kinds[] = {"step", "anchor", "ceiling"};
    fprintf(out, "{\"lab\": ");
    cml_json_string(out, r->lab);
    fprintf(out, ", \"title\": ");
    cml_json_string(out, r->title);
    fprintf(out, ", \"date\": ");
    cml_json_string(out, r->date);
    fprintf(out, ", \"gpu\": ");
    cml_json_string(out, r->device.name);
    fprintf(out, ", \"compute_capability\": \"%d.%d\", \"sm_count\": %d, \"params\": ",
            r->device.cc_major, r->device.cc_minor, r->device.sm_count);
    char data[sizeof r->params + 40];
    described(r, data, sizeof data);
    cml_json_string(out, data);
    fprintf(out, ", \"emulated\": %s", r->emulated ? "true" : "false");
    fprintf(out, ", \"seed\": %llu, \"unit\": ", (unsigned long long)r->seed);
    cml_json_string(out, r->unit);
    fprintf(out, ", \"ceiling\": {\"name\": ");
    cml_json_string(out, r->ceiling_name);
    fprintf(out, ", \"rate\": %.3f}, \"rows\": [", r->ceiling_rate);
    for (int i = 0; i < r->nrows; ++i) {
        const cml_row *row = &r->rows[i];
        fprintf(out, "%s\n  {\"kind\": \"%s\", \"step\": %d, \"name\": ", i ? "," : "", kinds[row->kind],
                row->step);
        cml_json_string(out, row->name);
        fprintf(out, ", \"status\": \"%s\", \"correct\": %s", status_word(row->status),
                row->status == CML_ROW_OK ? "true" : "false");
        if (row->timed && r->emulated)  /* the CPU's time: no share of any ceiling */
            fprintf(out, ", \"median_ms\": %.6f, \"rate\": %.3f", row->ms, row->rate);
        else if (row->timed)
            fprintf(out, ", \"median_ms\": %.6f, \"rate\": %.3f, \"fraction_of_ceiling\": %.4f", row->ms,
                    row->rate, share(r, row));
        fprintf(out, ", \"note\": ");
        cml_json_string(out, row->note);
        fputc('}', out);
    }
    fprintf(out, "\n]");
    if (r->extra_json)
        fprintf(out, ", \"extra\": %s", r->extra_json);
    fprintf(out, "}\n");
}

/* A note in a Markdown table cell: '|' would end the cell. */
static void md_cell(FILE *out, const char *s)
{
    for (; *s; ++s) {
        if (*s == '|')
            fputc('\\', out);
        fputc(*s, out);
    }
}

static void markdown_body(const cml_report *r, FILE *out)
{
    char dev[400], data[sizeof r->params + 40];
    cml_device_describe(&r->device, dev, sizeof dev);
    described(r, data, sizeof data);
    fprintf(out, "Measured on %s, %s. %s, seed %llu. Written by the lab's runner; "
            "100%% is %s at %.1f %s, measured in the same run.\n\n",
            dev, r->date, data, (unsigned long long)r->seed, r->ceiling_name, r->ceiling_rate, r->unit);
    int notes = 0;
    for (int i = 0; i < r->nrows; ++i)
        notes |= r->rows[i].note[0] != '\0';
    fprintf(out, "| step | kernel | check | median ms | %s | of max |%s\n", r->unit, notes ? " note |" : "");
    fprintf(out, "|---:|---|---|---:|---:|---:|%s\n", notes ? "---|" : "");
    for (int i = 0; i < r->nrows; ++i) {
        const cml_row *row = &r->rows[i];
        char label[8];
        step_label(row, label, sizeof label);
        if (row->timed)
            fprintf(out, "| %s | %s | %s | %.3f | %.1f | %.0f%% |", label, row->name,
                    status_word(row->status), row->ms, row->rate, 100.0 * share(r, row));
        else
            fprintf(out, "| %s | %s | %s | - | - | - |", label, row->name, status_word(row->status));
        if (notes) {
            fputc(' ', out);
            md_cell(out, row->note);
            fputs(" |", out);
        }
        fputc('\n', out);
    }
    if (r->extra_markdown)
        fprintf(out, "\n%s", r->extra_markdown);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return NULL;
    char *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = (n + 4096 + 1) * 2;
            char *grown = (char *)realloc(buf, cap);
            if (grown == NULL) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = grown;
        }
        size_t got = fread(buf + n, 1, 4096, f);
        n += got;
        if (got < 4096)
            break;
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

int cml_markdown_write(const char *path, const char *marker, void (*write)(FILE *out, int whole, const void *ctx),
                       const void *ctx)
{
    char begin[64], end[64];
    snprintf(begin, sizeof begin, "<!-- %s:begin -->\n", marker);
    snprintf(end, sizeof end, "<!-- %s:end -->", marker);
    size_t len = 0;
    char *old = slurp(path, &len);
    char *b = old ? strstr(old, begin) : NULL;
    char *e = b ? strstr(b, end) : NULL;
    FILE *out = fopen(path, "wb");
    if (out == NULL) {
        int saved = errno;
        free(old);
        errno = saved;
        return -1;
    }
    if (b && e) {
        fwrite(old, 1, (size_t)(b - old) + strlen(begin), out);
        write(out, 0, ctx);
        fputs(e, out);
    } else {
        write(out, 1, ctx);
    }
    free(old);
    return fclose(out) == 0 ? 0 : -1;
}

static void write_results(FILE *out, int whole, const void *ctx)
{
    const cml_report *r = (const cml_report *)ctx;
    if (whole)
        fprintf(out, "# %s on %s\n\n%s.\n\n", r->lab, r->device.name, r->title);
    markdown_body(r, out);
}

int cml_report_write_markdown(const cml_report *r, const char *path)
{
    return cml_markdown_write(path, "results", write_results, r);
}
