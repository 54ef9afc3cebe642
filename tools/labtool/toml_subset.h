/* toml_subset.h - a reader for the small subset of TOML used by the mistake
 * catalogue.  Accepted: blank lines, '#' comments, [[NAME]] array-of-tables
 * headers (one fixed NAME), and `key = value` pairs with bare keys
 * [A-Za-z0-9_]+ and values that are "basic strings" (escapes \\ \" \n \t),
 * '''multi-line literal strings''' or non-negative decimal integers.
 * Everything it accepts is also valid TOML 1.0 with the same meaning. */
#ifndef TOML_SUBSET_H
#define TOML_SUBSET_H

#include <stddef.h>

enum toml_type { TOML_STRING, TOML_INTEGER };

struct toml_kv {
    char *key;           /* NUL-terminated bare key; owned by the document */
    enum toml_type type;
    char *str;           /* TOML_STRING: NUL-terminated value (never contains
                            NUL or CR); owned by the document, which frees it
                            unless the caller takes it and sets it to NULL */
    long long num;       /* TOML_INTEGER: the value, >= 0 */
    int line;            /* 1-based line of the key */
};

struct toml_table {
    struct toml_kv *kv;  /* pairs in file order, keys unique in the table */
    size_t n, cap;
    int line;            /* 1-based line of the [[NAME]] header */
};

struct toml_doc {
    struct toml_table *tables;  /* tables in file order */
    size_t n, cap;
};

/* Parses TEXT (LEN bytes, need not be NUL-terminated; LF or CRLF line ends)
 * whose only table headers may be [[ARRAY_NAME]].  FNAME is used in messages.
 * On success returns 0 and fills *DOC (caller releases it with toml_free).
 * On failure returns -1, leaves *DOC empty and writes one line
 * "FNAME:LINE: what is wrong" (no trailing newline) into ERR (ERRLEN bytes). */
int toml_parse(const char *text, size_t len, const char *fname,
               const char *array_name, struct toml_doc *doc,
               char *err, size_t errlen);

/* Frees everything owned by DOC and leaves it empty.  DOC may be empty. */
void toml_free(struct toml_doc *doc);

#endif
