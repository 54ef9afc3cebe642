/* C launchers of the kernels in student_kernels.cu (the CPU path's tests of what
 * students write: cooperative groups, cuda::std, tail masks, atomics,
 * lambdas, static shared bounds). Each returns cudaDeviceSynchronize(). */
#ifndef CML_CPU_TEST_STUDENT_KERNELS_H
#define CML_CPU_TEST_STUDENT_KERNELS_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What atomics_all_kernel folds every value into (initial values set by
 * the test). */
typedef struct atomic_results {
    int add_i, sub_i, max_i, min_i, and_i, or_i, xor_i, exch_i, cas_i, add_block_i, add_system_i;
    unsigned add_u, max_u, min_u, and_u, or_u, xor_u, exch_u, cas_u, inc_u;
    unsigned long long add_ull, max_ull, min_ull, and_ull, or_ull, xor_ull, exch_ull, cas_ull;
    float add_f, exch_f;
    double add_d;
} atomic_results;

cudaError_t k_cg_block_sum(const int *in, unsigned long long *sum, unsigned n, unsigned threads);
cudaError_t k_cg_tile16(const int *in, int *tile_sums, int *meta, unsigned n, unsigned threads);
cudaError_t k_cuda_std(const int *in, int *out, unsigned n);
cudaError_t k_tail_warp(const int *in, int *out, unsigned n, unsigned threads);
cudaError_t k_atomics_all(const int *in, atomic_results *r, unsigned n, unsigned threads);
cudaError_t k_lambdas(const int *x, int *y, int *z, unsigned n);
cudaError_t k_tile_rows(float *out, int shift, int write);
cudaError_t k_tile_planes(int *out, int planes_used);

#ifdef __cplusplus
}
#endif

#endif
