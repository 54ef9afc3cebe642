/* cub_anchor.h: CUB's DeviceRadixSort::SortKeys and DeviceMergeSort::
 * SortKeys, the library speeds the lab's steps are compared with (known-good
 * implementations; not for students' code). */
#ifndef SHARED_SORT_CUB_ANCHOR_H
#define SHARED_SORT_CUB_ANCHOR_H

#include <stddef.h>
#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sorts in[0..n) into out[0..n) on the default stream, by all 32 bits.
 * temp/temp_bytes: device workspace; call first with temp = NULL to learn
 * the size needed. */
cudaError_t ss_cub_radix_sort(void *temp, size_t *temp_bytes, const unsigned *in, unsigned *out, size_t n);
/* The same with CUB's merge sort: in copied to out, then sorted in place
 * there (the copy, 8n bytes, is part of what is timed). */
cudaError_t ss_cub_merge_sort(void *temp, size_t *temp_bytes, const unsigned *in, unsigned *out, size_t n);

#ifdef __cplusplus
}
#endif
#endif
