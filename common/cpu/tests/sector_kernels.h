/* C launchers of the kernels in sector_kernels.cu (the CPU path's sector
 * counts). Each launches on the CPU path and returns
 * cudaDeviceSynchronize()'s result. */
#ifndef CML_CPU_TEST_SECTOR_KERNELS_H
#define CML_CPU_TEST_SECTOR_KERNELS_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 4 warps; lane < active loads a `bytes`-byte element (4: float, 8: int2,
 * 16: int4) at a stride of `stride` elements and stores it at out[t]. */
cudaError_t k_sector_loads(const void *in, void *out, int bytes, int stride, int active);
/* 4 warps; consecutive float loads, stores at a stride of `stride`. */
cudaError_t k_sector_stores(const float *in, float *out, int stride);
/* One warp, a loop over in[0..n) 32 apart. */
cudaError_t k_sector_loop(const float *in, float *out, int n);
/* One warp, two trips of a loop over in[32k + lane]: which 0, lanes 0-3
 * start a trip late; 1, lanes 0-3 skip the first trip's load by a branch;
 * 2, lanes 0-15 load in the first trip, 16-31 in the second. */
cudaError_t k_sector_passes(const float *in, float *out, int which);
/* One block of 64: a __constant__ table, shared memory, a local array; 64 floats stored. */
cudaError_t k_sector_not_global(float *out);

#ifdef __cplusplus
}
#endif

#endif
