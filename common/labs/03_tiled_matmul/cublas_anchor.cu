#include "cublas_anchor.h"

#include <stdio.h>
#include <stdlib.h>

#include <cublas_v2.h>

struct mm_cublas {
    cublasHandle_t handle;
};

extern "C" mm_cublas *mm_cublas_create(char *why, size_t len)
{
    mm_cublas *h = (mm_cublas *)malloc(sizeof *h);
    if (h == NULL) {
        snprintf(why, len, "out of host memory");
        return NULL;
    }
    cublasStatus_t st = cublasCreate(&h->handle);
    if (st == CUBLAS_STATUS_SUCCESS) {
        // FP32 throughout: pedantic math forbids TF32 tensor cores (and
        // other reduced-precision shortcuts), also when the environment
        // sets NVIDIA_TF32_OVERRIDE=1.
        st = cublasSetMathMode(h->handle, CUBLAS_PEDANTIC_MATH);
        if (st != CUBLAS_STATUS_SUCCESS)
            cublasDestroy(h->handle);
    }
    if (st != CUBLAS_STATUS_SUCCESS) {
        snprintf(why, len, "cuBLAS: %s", cublasGetStatusString(st));
        free(h);
        return NULL;
    }
    return h;
}

extern "C" void mm_cublas_destroy(mm_cublas *h)
{
    if (h == NULL)
        return;
    cublasDestroy(h->handle);
    free(h);
}

extern "C" cudaError_t mm_cublas_sgemm(mm_cublas *h, const float *A, const float *B, float *C, int M, int N, int K)
{
    // cuBLAS is column-major. A row-major M x N matrix is its transpose,
    // column-major, so C^T = B^T A^T is C = A B: B first, leading dimensions
    // N (B, C) and K (A).
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t st = cublasSgemm(h->handle, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, N, A, K, &zero, C, N);
    return st == CUBLAS_STATUS_SUCCESS ? cudaSuccess : cudaErrorUnknown;
}
