/* steps.c: a lab file's opening comment against its step table. */
#include "cml/cml_steps.h"

#include <stdio.h>
#include <string.h>

/* Appends one problem line to msg (as much as fits) and counts it. */
static void add(char *msg, size_t len, int *problems, const char *line)
{
    ++*problems;
    size_t used = strlen(msg);
    if (used + 1 < len)
        snprintf(msg + used, len - used, "%s\n", line);
}

int cml_check_step_comment(const char *path, const int *nums, const char *const *idents, int n, char *msg,
                           size_t len)
{
    static char text[16384];
    char line[512];
    int problems = 0;
    if (len == 0)
        return -1;
    msg[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(line, sizeof line, "%s: cannot open it", path);
        add(msg, len, &problems, line);
        return problems;
    }
    size_t got = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[got] = '\0';
    char *end = strncmp(text, "/*", 2) == 0 ? strstr(text, "*/") : NULL;
    if (end == NULL) {
        snprintf(line, sizeof line, "%s does not open with a block comment", path);
        add(msg, len, &problems, line);
        return problems;
    }
    *end = '\0';
    for (int k = 0; k < n; ++k) {
        char want[128];
        snprintf(want, sizeof want, "\n *   %d %s ", nums[k], idents[k]);
        if (strstr(text, want) == NULL) {
            snprintf(line, sizeof line, "%s: the opening comment has no line \" *   %d %s ...\"", path, nums[k],
                     idents[k]);
            add(msg, len, &problems, line);
        }
    }
    int lines = 0;
    for (char *p = text; (p = strstr(p, "\n *   ")) != NULL; ++p)
        lines += p[6] >= '1' && p[6] <= '9';
    if (lines != n) {
        snprintf(line, sizeof line, "%s: the opening comment lists %d steps, the table has %d", path, lines, n);
        add(msg, len, &problems, line);
    }
    return problems;
}
