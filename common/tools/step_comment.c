/* kit_step_comment: checks that a lab file's opening comment lists exactly
 * the steps the lab's manifest puts in that file (cml_steps.h). The build
 * registers one run per student file, for the skeleton and the solution.
 *
 *   kit_step_comment FILE [NUM IDENT]...
 *
 * Exit status 0 when the comment agrees, 1 when it does not (each problem
 * is printed), 2 for bad arguments. */
#include <stdio.h>
#include <stdlib.h>

#include "cml/cml_steps.h"

#define MAX_STEPS 64

int main(int argc, char **argv)
{
    if (argc < 2 || argc % 2 != 0 || (argc - 2) / 2 > MAX_STEPS) {
        fprintf(stderr, "usage: %s FILE [NUM IDENT]... (at most %d steps)\n", argv[0], MAX_STEPS);
        return 2;
    }
    int nums[MAX_STEPS];
    const char *idents[MAX_STEPS];
    int n = 0;
    for (int i = 2; i + 1 < argc; i += 2, ++n) {
        char *end = NULL;
        long num = strtol(argv[i], &end, 10);
        if (end == argv[i] || *end != '\0' || num < 1 || num > 99) {
            fprintf(stderr, "%s: step number '%s' is not valid\n", argv[0], argv[i]);
            return 2;
        }
        nums[n] = (int)num;
        idents[n] = argv[i + 1];
    }
    char msg[4096];
    int problems = cml_check_step_comment(argv[1], nums, idents, n, msg, sizeof msg);
    if (problems != 0) {
        fprintf(stderr, "%s", msg);
        return 1;
    }
    printf("%s: the opening comment lists its %d step(s)\n", argv[1], n);
    return 0;
}
