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
 * and fills *info when usable; returns 0 and writes a one-line reason
 * starting with "no CUDA device: " into reason[len] otherwise. This
 * initializes CUDA: never call it in a process that forks afterwards. */
int cml_device_probe(cml_device_info *info, char *reason, size_t len);

/* "NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, 79.1 GiB, L2 50 MiB)" into buf. */
void cml_device_describe(const cml_device_info *info, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
