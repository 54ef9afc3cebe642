/* cml_steps.h: checks that a lab file's opening comment lists the steps of
 * the lab's step table (the one list the runner, tests and grader use), so
 * the two cannot drift. Used by the labs' host tests. */
#ifndef CML_STEPS_H
#define CML_STEPS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Reads the block comment that opens the file at path and checks that it
 * has a line " *   N IDENT ..." for each of the n steps (nums[k], idents[k])
 * and no other numbered step line. Returns the number of problems found
 * (0: the comment agrees); each is described, one per line, in msg. */
int cml_check_step_comment(const char *path, const int *nums, const char *const *idents, int n, char *msg,
                           size_t len);

#ifdef __cplusplus
}
#endif
#endif /* CML_STEPS_H */
