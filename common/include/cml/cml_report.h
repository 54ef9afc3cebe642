/* cml_report.h: a lab's results as a table a person reads at a glance, as
 * JSON for programs, and as a Markdown page for docs/results/. */
#ifndef CML_REPORT_H
#define CML_REPORT_H

#include <stdint.h>
#include <stdio.h>
#include "cml_device.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CML_REPORT_MAX_ROWS 32

typedef enum { CML_ROW_STEP, CML_ROW_ANCHOR, CML_ROW_CEILING } cml_row_kind;
typedef enum { CML_ROW_OK, CML_ROW_WRONG, CML_ROW_ERROR, CML_ROW_NOT_RUN } cml_row_status;

typedef struct cml_row {
    cml_row_kind kind;
    int step;                 /* step number for CML_ROW_STEP, else 0 */
    char name[48];
    cml_row_status status;
    int timed;                /* 1 when ms/rate hold a measurement */
    double ms;                /* median time of one run */
    double rate;              /* in the report's unit, e.g. GB/s */
    char note[200];           /* why it is wrong, what the anchor is, ... */
} cml_row;

typedef struct cml_report {
    const char *lab;          /* "04_reduction" */
    const char *title;        /* "Reduction: sum of n elements" */
    const char *unit;         /* "GB/s" */
    char params[200];         /* the lab's data: "n = 268435456 int (1.00 GiB read)" */
    int runs;                 /* timed runs a step, each row the median of them; 0: none (--check-only) */
    char date[32];            /* YYYY-MM-DD, filled by cml_report_init */
    uint64_t seed;
    cml_device_info device;
    double ceiling_rate;      /* the rate the % column is relative to */
    char ceiling_name[64];
    cml_row rows[CML_REPORT_MAX_ROWS];
    int nrows;
    const char *extra_markdown; /* optional text after the Markdown table (caller owns) */
    const char *extra_json;     /* optional JSON value written as "extra" (caller owns) */
    int emulated;               /* 1 on the CPU path (common/cpu): every time is the CPU's,
                                   labelled emulated, never a share of a ceiling */
} cml_report;

/* Zeroes r, sets the date (UTC) and the fixed fields. */
void cml_report_init(cml_report *r, const char *lab, const char *title, const char *unit);
/* Appends a row and returns it (NULL when full). */
cml_row *cml_report_add(cml_report *r, cml_row_kind kind, int step, const char *name);

/* The terminal table: a line per row with status, time, rate, the % of the
 * ceiling and a bar. */
void cml_report_print_table(const cml_report *r, FILE *out);
/* s as a JSON string literal, quotes and escapes included (NULL: ""). */
void cml_json_string(FILE *out, const char *s);

/* The same data as one JSON object. */
void cml_report_print_json(const cml_report *r, FILE *out);
/* The results as Markdown (a "note" column when any row has a note, then
 * extra_markdown). When path exists and holds the lines
 * "<!-- results:begin -->" and "<!-- results:end -->", only the text between
 * them is replaced (a lab handout); otherwise the whole file is written (a
 * docs/results/ page). Returns 0 on success, -1 with errno set otherwise. */
int cml_report_write_markdown(const cml_report *r, const char *path);

/* The same for any Markdown a runner writes: when path exists and holds
 * the lines "<!-- MARKER:begin -->" and "<!-- MARKER:end -->", write(out,
 * 0, ctx) replaces only the text between them; otherwise write(out, 1,
 * ctx) writes the whole file (a page: its heading too). Returns 0, or -1
 * with errno set. */
int cml_markdown_write(const char *path, const char *marker, void (*write)(FILE *out, int whole, const void *ctx),
                       const void *ctx);

#ifdef __cplusplus
}
#endif
#endif
