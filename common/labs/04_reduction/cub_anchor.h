/* cub_anchor.h: CUB's DeviceReduce::Sum, the library speed the lab's steps
 * are compared with (a known-good implementation; not for students' code). */
#ifndef REDUCTION_CUB_ANCHOR_H
#define REDUCTION_CUB_ANCHOR_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sums in[0..n) into out[0] on the default stream. temp/temp_bytes: device
 * workspace; call first with temp = NULL to learn the size needed. */
cudaError_t red_cub_sum_int(void *temp, size_t *temp_bytes, const int *in, size_t n, int *out);
cudaError_t red_cub_sum_float(void *temp, size_t *temp_bytes, const float *in, size_t n, float *out);

#ifdef __cplusplus
}
#endif
#endif
