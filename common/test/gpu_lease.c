/* The GPU test binaries' part of sharing the GPUs (criterion_main.c). */
#include "gpu_lease.h"
#include "cml/cml_gpu_turn.h"

#include <cuda_runtime_api.h>

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
        cml_gpu_uuid_text((const unsigned char *)p.uuid.bytes, out[got].uuid, sizeof out[got].uuid);
        out[got].total = (unsigned long long)p.totalGlobalMem;
        ++got;
    }
    return got;
}
