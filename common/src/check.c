#include "cml/cml_check.h"

#include <stdio.h>
#include <stdlib.h>

void cml_check_fail(cudaError_t err, const char *expr, const char *file, int line)
{
    fprintf(stderr, "%s:%d: CUDA error in `%s`: %s: %s\n", file, line, expr,
            cudaGetErrorName(err), cudaGetErrorString(err));
    exit(CML_EXIT_FAIL);
}
