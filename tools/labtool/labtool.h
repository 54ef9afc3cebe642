/* labtool.h - library part of labtool: skeleton generation from a reference
 * solution, the mistake catalogue, mutation and CMake export.
 *
 * Conventions: text inputs are (pointer, length) pairs that need not be
 * NUL-terminated; LF and CRLF line ends are accepted, outputs use LF.
 * Functions that can fail take ERR/ERRLEN and write one line (no trailing
 * newline, no "labtool: " prefix) into it, normally "FILE:LINE: what is
 * wrong".  Output buffers are malloc'd, NUL-terminated, owned by the caller
 * (release with free) and only set on success. */
#ifndef LABTOOL_H
#define LABTOOL_H

#include <stddef.h>

#include "toml_subset.h"

/* Reads the whole file PATH.  Returns a malloc'd buffer with a NUL appended
 * (not counted in *LEN), or NULL with "PATH: reason" in ERR. */
char *lt_read_file(const char *path, size_t *len, char *err, size_t errlen);

/* Writes LEN bytes of DATA to PATH (replacing it).  Returns 0, or -1 with
 * "PATH: reason" in ERR; a partly written file is removed. */
int lt_write_file(const char *path, const char *data, size_t len, char *err, size_t errlen);

/* Generates the student skeleton from the solution SRC (LEN bytes) named
 * SRC_NAME in messages: BEGIN/END SOLUTION regions are dropped except their
 * "//@" stub lines, which are kept without the "//@ " prefix.  Returns 0 and
 * sets *OUT / *OUT_LEN, or -1 with "SRC_NAME:LINE: ..." in ERR. */
int skeleton_generate(const char *src, size_t len, const char *src_name,
                      char **out, size_t *out_len, char *err, size_t errlen);

/* Checks that COMMITTED (CLEN bytes, named COMMITTED_NAME) is exactly the
 * skeleton generated from SRC (named SRC_NAME).  Returns 0 when equal; 1 when
 * they differ, with a multi-line report (first differing line, expected and
 * actual text, the regenerate hint) in MSG and the 1-based line number in
 * *DIFF_LINE (if not NULL); -1 when SRC is invalid, with the error in MSG. */
int skeleton_check(const char *src, size_t len, const char *src_name,
                   const char *committed, size_t clen, const char *committed_name,
                   size_t *diff_line, char *msg, size_t msglen);

/* One entry of the mistake catalogue.  All strings are NUL-terminated and
 * owned by the array returned from mistakes_parse/mistakes_load. */
struct mistake {
    char *name;           /* [a-z0-9_]+, unique in the catalogue */
    char *summary;        /* one line */
    long long step;       /* >= 1 */
    char *caught_by;      /* tests | memcheck | racecheck | synccheck | initcheck | counters */
    char *expect_failing; /* regex over "suite::test" names, or NULL */
    char *expect_message; /* regex over messages / sanitizer output, or NULL */
    char *find;           /* non-empty text to find in the solution */
    char *replace;        /* replacement, possibly empty */
    char *file;           /* the lab file it changes (a plain name), or NULL: the first */
    char *gpu_only;       /* why only a GPU can catch it (one line), or NULL */
    int line;             /* line of the [[mistake]] header */
    int find_line;        /* line of the find key */
};

/* Parses and validates a catalogue TEXT (LEN bytes) named FNAME.  Returns 0
 * and sets *OUT (free with mistakes_free) and *COUNT, or -1 with
 * "FNAME:LINE: ..." in ERR. */
int mistakes_parse(const char *text, size_t len, const char *fname,
                   struct mistake **out, size_t *count, char *err, size_t errlen);

/* mistakes_parse on the contents of the file PATH. */
int mistakes_load(const char *path, struct mistake **out, size_t *count,
                  char *err, size_t errlen);

/* Frees an array returned by mistakes_parse/mistakes_load (NULL is fine). */
void mistakes_free(struct mistake *ms, size_t count);

/* Returns the mistake called NAME in MS[0..COUNT), or NULL.  Borrowed. */
const struct mistake *mistakes_find(const struct mistake *ms, size_t count, const char *name);

/* Applies mistake M (from the catalogue named CATALOGUE) to SRC (LEN bytes,
 * named SRC_NAME; CRLF is read as LF): M->find must occur exactly once
 * (overlapping occurrences count) and is replaced by M->replace.  Returns 0
 * and sets *OUT / *OUT_LEN, or -1 with "CATALOGUE:LINE: ..." in ERR. */
int mutate_apply(const char *src, size_t len, const char *src_name,
                 const struct mistake *m, const char *catalogue,
                 char **out, size_t *out_len, char *err, size_t errlen);

/* Renders M as a CMake script fragment setting MISTAKE_NAME, _SUMMARY, _STEP,
 * _CAUGHT_BY, _EXPECT_FAILING, _EXPECT_MESSAGE and _FILE (empty when absent); the
 * strings are bracket arguments [=[...]=] with enough '=' to hold the value
 * verbatim.  Returns 0 and sets *OUT / *OUT_LEN, or -1 when out of memory. */
int mistake_cmake(const struct mistake *m, char **out, size_t *out_len);

/* The CPU path's source pass (labtool_cpu.c): translates the CUDA file SRC
 * (LEN bytes, named SRC_NAME in #line and messages) into C++ for the CPU
 * runtime in common/cpu/: `K<<<cfg>>>(args)` becomes a call of
 * cml_cpu_launch, `extern __shared__ T x[];` a pointer to the block's
 * dynamic shared memory and `__shared__ T a[N];` a reference to the
 * runtime's bounds-checked shared memory; every line keeps its number.  Returns 0 and sets
 * *OUT / *OUT_LEN, or -1 with "SRC_NAME:LINE: ..." in ERR. */
int cpu_translate(const char *src, size_t len, const char *src_name, char **out, size_t *out_len, char *err,
                  size_t errlen);

#endif
