/* A program for the checks' at-exit contract (CTest runs it under
 * CML_CPU_CHECK and matches its output and exit status):
 *   exit_demo race    a neighbour read without a barrier (one hazard)
 *   exit_demo clean   the same with the barrier (none)
 *   exit_demo banks   4-byte loads 32 words apart (31 conflicts per warp) */
#include <stdio.h>
#include <string.h>

#include "kernels.h"

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "";
    int *in = NULL, *out = NULL;
    if (cudaMalloc((void **)&in, 128 * sizeof(int)) != cudaSuccess ||
        cudaMalloc((void **)&out, 128 * sizeof(int)) != cudaSuccess ||
        cudaMemset(in, 0, 128 * sizeof(int)) != cudaSuccess)
        return 1;
    cudaError_t err = cudaErrorInvalidValue;
    if (strcmp(what, "race") == 0 || strcmp(what, "clean") == 0)
        err = k_neighbour(in, out, strcmp(what, "clean") == 0, 2, 64);
    else if (strcmp(what, "banks") == 0)
        err = k_stride((float *)out, 32, 32, 0, 64);
    if (err != cudaSuccess) {
        fprintf(stderr, "exit_demo %s: %s\n", what, cudaGetErrorString(err));
        return 1;
    }
    return 0;
}
