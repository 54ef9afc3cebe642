/* The GPU test binaries' part of sharing the GPUs (criterion_main.c). */
#include "gpu_lease.h"

#include <cuda_runtime_api.h>
#include <stdio.h>

int cml_criterion_gpu_inventory(cml_gpu_info *out, int max)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess)
        return 0;
    int got = 0;
    for (int d = 0; d < n && got < max; ++d) {
        struct cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, d) != cudaSuccess)
            continue;
        const unsigned char *u = (const unsigned char *)p.uuid.bytes;
        snprintf(out[got].uuid, sizeof out[got].uuid,
                 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3],
                 u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
        out[got].total = (unsigned long long)p.totalGlobalMem;
        ++got;
    }
    return got;
}
