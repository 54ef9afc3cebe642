/* cml_device.h: is there a usable GPU, and what is it. */
#ifndef CML_DEVICE_H
#define CML_DEVICE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cml_device_info {
    int id;
    char name[256];
    int cc_major, cc_minor;
    int sm_count;
    size_t global_mem_bytes;
    int l2_bytes;
    int runtime_version, driver_version;
} cml_device_info;

/* Looks for device 0 (CUDA_VISIBLE_DEVICES chooses which GPU that is) and
 * proves it usable by running a tiny kernel built into the kit. Returns 1
 * and fills *info when usable. Otherwise writes a one-line reason into
 * reason[len] and returns
 *   0  (CML_PROBE_NO_GPU) when CUDA has no device here: no GPU, no driver,
 *      a driver older than the runtime, none visible. Only this may skip a
 *      GPU test; the reason starts with "no CUDA device: ".
 *  -1  (CML_PROBE_FAILED) when a GPU is there but the probe failed on it:
 *      out of memory (a GPU full of other work), a launch failure, no code
 *      for it in this build. The reason starts with "the GPU is not usable: "
 *      and names the CUDA error: a test fails with it, a runner stops.
 * This initializes CUDA: never call it in a process that forks afterwards. */
enum { CML_PROBE_FAILED = -1, CML_PROBE_NO_GPU = 0, CML_PROBE_OK = 1 };
int cml_device_probe(cml_device_info *info, char *reason, size_t len);

/* "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB, L2 50 MiB)" into buf. */
void cml_device_describe(const cml_device_info *info, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
