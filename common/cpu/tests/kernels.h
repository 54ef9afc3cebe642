/* C launchers of the kernels in kernels.cu (the CPU path's own tests). Each
 * launches on the CPU path and returns cudaDeviceSynchronize()'s result. */
#ifndef CML_CPU_TEST_KERNELS_H
#define CML_CPU_TEST_KERNELS_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

cudaError_t k_rotate(const int *in, int *out, int rounds, unsigned blocks, unsigned bx, unsigned by, unsigned bz);
cudaError_t k_barrier_pred(const int *pred, int *out, unsigned blocks, unsigned threads);
cudaError_t k_shuffle(const int *in, int *out, int active, unsigned threads);
cudaError_t k_vote(const int *pred, unsigned *out, int active, unsigned threads);
cudaError_t k_atomics(const int *in, int *sum, float *fsum, unsigned n, unsigned threads);
cudaError_t k_divergent_barrier(int *out, unsigned threads);
cudaError_t k_past_the_end(int *out, unsigned n, unsigned threads);
/* 8 int4 (or float4) from in + off: misaligned for off = 1..3 */
cudaError_t k_misaligned(int *in, int *out, unsigned off, int as_float);
cudaError_t k_spin(int *out);
cudaError_t k_host_pointer(int *out);
cudaError_t k_neighbour(const int *in, int *out, int with_barrier, unsigned blocks, unsigned threads);
cudaError_t k_warp_sum(const int *in, int *out, int with_syncwarp);
cudaError_t k_global_race(int *out, unsigned blocks);
cudaError_t k_stride(float *out, int stride, int active, int wide, unsigned threads);
cudaError_t k_skip_pass(float *out, unsigned threads);
cudaError_t k_attributes(struct cudaFuncAttributes *attr, int *blocks_per_sm, int block_size);

#ifdef __cplusplus
}
#endif

#endif
