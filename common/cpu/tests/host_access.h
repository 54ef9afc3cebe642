/* C launchers of host_access.cu, for test_host_access.c: kernels and the
 * CUB stand-in on device memory that host code may not touch. Each returns
 * cudaDeviceSynchronize()'s (or the call's) result. */
#ifndef CML_CPU_TEST_HOST_ACCESS_H
#define CML_CPU_TEST_HOST_ACCESS_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* x[i] = x[i] * by + i for i < n, blocks of `threads`. */
cudaError_t ha_scale(float *x, unsigned n, float by, unsigned threads);
/* out[i] = 3 * in[j] + 1 for i < n, where j is the element of the thread
 * before i's in its block (thread 0 takes the block's last; in[j] counts as
 * 0 for j >= n), through dynamic shared memory, with both pointers inside a
 * struct argument (which the launch neither checks nor opens one by one). */
cudaError_t ha_through_struct(const int *in, int *out, unsigned n, unsigned threads);
/* *out = in[0] + ... + in[n - 1] with cub::DeviceReduce::Sum (the CPU
 * path's stand-in), temporary storage from cudaMalloc. */
cudaError_t ha_cub_sum(const int *in, int *out, int n);
/* out = in sorted ascending with cub::DeviceRadixSort::SortKeys, and again
 * in place in out2 (a copy of in made first) with cub::DeviceMergeSort::
 * SortKeys (the CPU path's stand-ins), temporary storage from cudaMalloc. */
cudaError_t ha_cub_sorts(const unsigned *in, unsigned *out, unsigned *out2, int n);

#ifdef __cplusplus
}
#endif

#endif
