/* C launchers of the kernels in picture_kernels.cu (test_picture.c: the
 * access pictures). Each launches one block on the CPU path and returns
 * cudaDeviceSynchronize()'s result. */
#ifndef CML_CPU_TEST_PICTURE_KERNELS_H
#define CML_CPU_TEST_PICTURE_KERNELS_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One warp reads a __shared__ float s[32 * 33] at s[lane * stride] (0: every
 * lane s[0], a broadcast) and stores it to out[lane] (32 floats). */
cudaError_t k_pic_shared_stride(float *out, int stride);
/* One warp reads a __shared__ double s[64] at s[lane]: 8-byte accesses, two phases. */
cudaError_t k_pic_shared_double(double *out);
/* A 32x32 block: a 32x32 tile written by rows, read by columns (out: 1024
 * floats, in: 1024 floats). kind 0: float tile[32][32]; 1: float
 * tile[32][33] (padded); 2: float tile[32][32] with column c stored at c ^ r. */
cudaError_t k_pic_tile(const float *in, float *out, int kind);
/* One warp: out[lane] = in[lane * stride] (floats). */
cudaError_t k_pic_global_stride(const float *in, float *out, int stride);
/* One warp: out[lane] = in[lane] (float4; in may start 16 bytes into a line). */
cudaError_t k_pic_global_float4(const void *in, void *out);

#ifdef __cplusplus
}
#endif

#endif
