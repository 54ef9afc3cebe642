/* A stand-in GPU test binary for test_gpu_lease.c: two fake GPUs of 8 GiB
 * (GPU_LEASE_FAKE_GPUS=1: one), and one test that writes which GPU and how
 * many jobs cml_criterion_main gave it to $GPU_LEASE_OUT, then holds its
 * slot until the file $GPU_LEASE_OUT.release exists. */
#define _DEFAULT_SOURCE /* usleep */
#include <criterion/criterion.h>
#include <criterion/options.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu_lease.h"

int cml_criterion_gpu_inventory(cml_gpu_info *out, int max)
{
    const char *one = getenv("GPU_LEASE_FAKE_GPUS");
    int n = one && strcmp(one, "1") == 0 ? 1 : 2;
    for (int d = 0; d < n && d < max; ++d) {
        snprintf(out[d].uuid, sizeof out[d].uuid, "GPU-00000000-0000-0000-0000-00000000000%d", d);
        out[d].total = 8ull << 30;
    }
    return n;
}

Test(gpu_lease_fake, holds_its_slot)
{
    const char *path = getenv("GPU_LEASE_OUT");
    cr_assert(path != NULL);
    char tmp[600], release[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    snprintf(release, sizeof release, "%s.release", path);
    FILE *f = fopen(tmp, "w");
    cr_assert(f != NULL);
    const char *dev = getenv("CUDA_VISIBLE_DEVICES");
    fprintf(f, "%s %zu\n", dev ? dev : "(unset)", criterion_options.jobs);
    fclose(f);
    cr_assert(rename(tmp, path) == 0);   /* whole, or not there */
    while (access(release, F_OK) != 0)
        usleep(10000);
}
