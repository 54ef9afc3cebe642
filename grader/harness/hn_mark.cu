/* hn_mark.cu: the step marks of a harness's traced run (harness.h,
 * HN_MARK_STEP). Linked into every CUDA harness, never into a student's
 * program: in one Nsight Compute run over several steps, the kit's empty
 * kernel cml_hn_mark launched before each step's cases says where that
 * step's launches begin. Its kernel cml_hn_warm is the launch a gated
 * harness makes before its gate under Nsight Compute (harness.h, `warm`):
 * the profiler sets itself up on it while other work still runs on the
 * GPU, and the grader drops it from the profile (profrun.py). */
#include <stdint.h>

#include <cuda_runtime_api.h>

extern "C" __global__ void cml_hn_mark(uint32_t step) { (void)step; }

extern "C" cudaError_t cml_hn_mark_step(uint32_t step)
{
    cml_hn_mark<<<1, 1>>>(step);
    return cudaGetLastError();
}

extern "C" __global__ void cml_hn_warm(void) {}

extern "C" cudaError_t cml_hn_warm_up(void)
{
    cml_hn_warm<<<1, 1>>>();
    cudaError_t err = cudaGetLastError();
    return err != cudaSuccess ? err : cudaDeviceSynchronize();
}
