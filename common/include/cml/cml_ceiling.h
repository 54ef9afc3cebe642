/* cml_ceiling.h: the device-copy bandwidth, the speed limit of memory-bound
 * labs, measured in the same run as the kernels it is compared with. */
#ifndef CML_CEILING_H
#define CML_CEILING_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cml_copy_ceiling {
    size_t bytes;           /* bytes copied per run (read once, written once) */
    double memcpy_gbs;      /* cudaMemcpy device-to-device, (read + write) / s */
    double kernel_gbs;      /* the kit's 16-byte-per-thread copy kernel */
    double best_gbs;        /* the larger: the ceiling labs are compared with */
} cml_copy_ceiling;

/* Copies bytes (rounded down to a multiple of 16) between two fresh device
 * buffers with cudaMemcpy and with a copy kernel, median of repeat runs each
 * after a warm-up. GB/s count bytes read plus bytes written (1 GB = 1e9 B). */
cudaError_t cml_measure_copy_ceiling(size_t bytes, int repeat, cml_copy_ceiling *c);

/* The same, each timed run `batch` copies enqueued back to back (small
 * sizes: the time of the copies, not of one launch's latency). Fails
 * (cudaErrorUnknown) when the kernel's copy is not the source's bytes. */
cudaError_t cml_measure_copy_ceiling_batched(size_t bytes, int repeat, int batch, cml_copy_ceiling *c);

#ifdef __cplusplus
}
#endif
#endif
