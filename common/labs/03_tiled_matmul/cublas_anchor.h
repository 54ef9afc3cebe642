/* cublas_anchor.h: cuBLAS SGEMM in FP32, the library speed the lab's steps
 * are compared with (a known-good implementation; not for students' code). */
#ifndef MATMUL_CUBLAS_ANCHOR_H
#define MATMUL_CUBLAS_ANCHOR_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mm_cublas mm_cublas;

/* A cuBLAS handle set to pedantic FP32 math (no TF32 tensor cores, whatever
 * NVIDIA_TF32_OVERRIDE says). Returns NULL with a reason in why. */
mm_cublas *mm_cublas_create(char *why, size_t len);
void mm_cublas_destroy(mm_cublas *h);

/* C = A * B for row-major A (M x K), B (K x N), C (M x N), device pointers,
 * on the default stream. Returns cudaSuccess or cudaErrorUnknown (a cuBLAS
 * failure). */
cudaError_t mm_cublas_sgemm(mm_cublas *h, const float *A, const float *B, float *C, int M, int N, int K);

#ifdef __cplusplus
}
#endif
#endif
