/* cublas_v2.h on the CPU path: the few cuBLAS calls the kit's anchors make
 * (lab 03: cublasSgemm in FP32), as a plain serial SGEMM that sums each
 * element in double (common/cpu/src/cml_cpu_cublas.c). It checks results;
 * its time is not cuBLAS's and is never compared with anything. */
#ifndef CML_CPU_CUBLAS_V2_H
#define CML_CPU_CUBLAS_V2_H

#include "cuda_runtime_api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cml_cpu_cublas_context *cublasHandle_t;

typedef enum cublasStatus_t {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_NOT_SUPPORTED = 15
} cublasStatus_t;

typedef enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;

typedef enum cublasMath_t {
    CUBLAS_DEFAULT_MATH = 0,
    CUBLAS_TENSOR_OP_MATH = 1,
    CUBLAS_PEDANTIC_MATH = 2,
    CUBLAS_TF32_TENSOR_OP_MATH = 3
} cublasMath_t;

cublasStatus_t cublasCreate(cublasHandle_t *handle);
cublasStatus_t cublasDestroy(cublasHandle_t handle);
cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode);
cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode);
cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream);
const char *cublasGetStatusString(cublasStatus_t status);

/* C = alpha * op(A) * op(B) + beta * C, column-major, as cuBLAS defines it
 * (op N or T). A, B and C must be device memory (cudaMalloc); each element
 * is summed in double and rounded once. beta == 0 ignores C's contents. */
cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                           int k, const float *alpha, const float *A, int lda, const float *B, int ldb,
                           const float *beta, float *C, int ldc);

#ifdef __cplusplus
}
#endif
#endif
