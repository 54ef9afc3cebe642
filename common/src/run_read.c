/* run_read.c: a command's whole output (see cml_run_read in cml_ncu.h). Plain
 * C with no CUDA header, so that kit_sectors_agree links it alone. */
#define _POSIX_C_SOURCE 200809L
#include "cml/cml_ncu.h"

#include <stdio.h>
#include <stdlib.h>

char *cml_run_read(const char *cmd, int *status)
{
    FILE *pipe = popen(cmd, "r");
    if (pipe == NULL)
        return NULL;
    size_t cap = 1 << 16, len = 0, got;
    char *text = malloc(cap);
    while (text != NULL && (got = fread(text + len, 1, cap - len - 1, pipe)) > 0) {
        len += got;
        if (len + 1 == cap) {
            char *bigger = realloc(text, cap * 2);
            if (bigger == NULL) {
                free(text);
                text = NULL;
                break;
            }
            text = bigger;
            cap *= 2;
        }
    }
    *status = pclose(pipe);
    if (text != NULL)
        text[len] = '\0';
    return text;
}
