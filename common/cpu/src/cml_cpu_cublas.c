/* The CPU path's stand-in for the cuBLAS calls in include/cublas_v2.h: a
 * serial, double-accumulating SGEMM. Right answers for checking an anchor's
 * wiring (transposes, leading dimensions, row-major tricks) without a GPU;
 * no attempt at speed. */
#include "cublas_v2.h"

#include <stdlib.h>

#include "cml_cpu.h"

struct cml_cpu_cublas_context {
    cublasMath_t math;
};

cublasStatus_t cublasCreate(cublasHandle_t *handle)
{
    if (handle == NULL)
        return CUBLAS_STATUS_INVALID_VALUE;
    *handle = calloc(1, sizeof **handle);
    return *handle ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle)
{
    if (handle == NULL)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    free(handle);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
    if (handle == NULL)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->math = mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode)
{
    if (handle == NULL || mode == NULL)
        return handle == NULL ? CUBLAS_STATUS_NOT_INITIALIZED : CUBLAS_STATUS_INVALID_VALUE;
    *mode = handle->math;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t stream)
{
    (void)stream;  /* work runs to the end inside the call: streams order nothing */
    return handle ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}

const char *cublasGetStatusString(cublasStatus_t status)
{
    switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "CUBLAS_STATUS_UNKNOWN";
    }
}

/* Element (r, c) of op(X), X column-major with leading dimension ld. */
static double at(const float *X, int ld, cublasOperation_t op, int r, int c)
{
    return op == CUBLAS_OP_N ? X[(size_t)c * ld + r] : X[(size_t)r * ld + c];
}

cublasStatus_t cublasSgemm(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                           int k, const float *alpha, const float *A, int lda, const float *B, int ldb,
                           const float *beta, float *C, int ldc)
{
    if (handle == NULL)
        return CUBLAS_STATUS_NOT_INITIALIZED;
    if (m < 0 || n < 0 || k < 0 || alpha == NULL || beta == NULL || transa == CUBLAS_OP_C ||
        transb == CUBLAS_OP_C)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (ldc < (m > 1 ? m : 1) || lda < ((transa == CUBLAS_OP_N ? m : k) > 1 ? (transa == CUBLAS_OP_N ? m : k) : 1) ||
        ldb < ((transb == CUBLAS_OP_N ? k : n) > 1 ? (transb == CUBLAS_OP_N ? k : n) : 1))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0)
        return CUBLAS_STATUS_SUCCESS;
    /* Device memory only, as on a GPU. */
    if (!cml_cpu_is_device_pointer(C) || (k > 0 && (!cml_cpu_is_device_pointer(A) || !cml_cpu_is_device_pointer(B))))
        return CUBLAS_STATUS_INVALID_VALUE;
    /* Device memory is closed to host code (cml_cpu.h): this stand-in is the
     * device's work, so it opens what it reads and writes. */
    cml_cpu_device_open(A);
    cml_cpu_device_open(B);
    cml_cpu_device_open(C);
    for (int j = 0; j < n; ++j)
        for (int i = 0; i < m; ++i) {
            double s = 0.0;
            for (int p = 0; p < k; ++p)
                s += at(A, lda, transa, i, p) * at(B, ldb, transb, p, j);
            double v = *alpha * s;
            if (*beta != 0.0f)
                v += (double)*beta * C[(size_t)j * ldc + i];
            C[(size_t)j * ldc + i] = (float)v;
        }
    cml_cpu_device_close(C);
    cml_cpu_device_close(B);
    cml_cpu_device_close(A);
    return CUBLAS_STATUS_SUCCESS;
}
