/* gpu_lease.h: what cml_criterion_main learns of the GPUs before it runs a
 * GPU test binary's tests (common/test/gpu_lease.c, linked into the CUDA
 * build's GPU test binaries only; the CPU path's and the host tests have
 * none, and their main does nothing of this). */
#ifndef CML_GPU_LEASE_H
#define CML_GPU_LEASE_H

#ifdef __cplusplus
extern "C" {
#endif

#define CML_LEASE_MAX_GPUS 16

typedef struct cml_gpu_info {
    char uuid[48];             /* "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6": a CUDA_VISIBLE_DEVICES value */
    unsigned long long total;  /* bytes of device memory */
} cml_gpu_info;

/* The visible GPUs (at most max), or 0 where CUDA has none. Initializes
 * CUDA: cml_criterion_main calls it in a child process only. */
int cml_criterion_gpu_inventory(cml_gpu_info *out, int max);

#ifdef __cplusplus
}
#endif
#endif
