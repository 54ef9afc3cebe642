/* red_big.h: the data of lab 04's test past 2^31 elements, made on the
 * device, and their sum, by the kit's own kernels (red_big.cu). */
#ifndef REDUCTION_RED_BIG_H
#define REDUCTION_RED_BIG_H

#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The stream of the kit's generator (cml_rng.h) the head's words come from. */
#define RED_BIG_STREAM 700

/* in[0..head) the words cml_fill_int(in, head, -1, 1, seed, RED_BIG_STREAM)
 * makes, each -1, 0 or 1; in[head..n) each +1. Launched on the default
 * stream. */
cudaError_t cml_red_big_make_on_device(int *in, size_t n, size_t head, uint64_t seed);
/* The exact sum of in[0..n) in 64 bits (waits for it). */
cudaError_t cml_red_big_sum_on_device(const int *in, size_t n, int64_t *sum);

#ifdef __cplusplus
}
#endif
#endif
