/* cuda_runtime_api.h on the CPU path: the CUDA runtime calls the kit makes,
 * implemented by common/cpu/src/cml_cpu_runtime.c. Usable from C and C++.
 *
 * "Device" memory is host memory from the runtime's own allocator (so a
 * host pointer passed to a kernel can be told apart); kernels run to the
 * end inside the launch, so streams and events are ordering no-ops and
 * event times are wall-clock ("emulated", never a hardware time). Errors
 * are sticky after a kernel fault, as on a GPU. */
#ifndef CML_CPU_CUDA_RUNTIME_API_H
#define CML_CPU_CUDA_RUNTIME_API_H

#include <stddef.h>
#include <stdint.h>

#define CML_CPU_BACKEND 1 /* lets kit code tell the CPU path apart */
#define CUDART_VERSION 13000

#ifdef __cplusplus
#define CML_CPU_DEFAULT(v) = v
extern "C" {
#else
#define CML_CPU_DEFAULT(v)
#endif

typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidSymbol = 13,
    cudaErrorInvalidDevicePointer = 17,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorInsufficientDriver = 35,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidPtx = 218,
    cudaErrorUnsupportedPtxVersion = 222,
    cudaErrorNoKernelImageForDevice = 209,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchTimeout = 702,
    cudaErrorLaunchFailure = 719,
    cudaErrorIllegalInstruction = 715,
    cudaErrorMisalignedAddress = 716,
    cudaErrorAssert = 710,
    cudaErrorUnknown = 999
} cudaError_t;

typedef enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
} cudaMemcpyKind;

typedef enum cudaDeviceAttr {
    cudaDevAttrMaxThreadsPerBlock = 1,
    cudaDevAttrMaxBlockDimX = 2,
    cudaDevAttrMaxBlockDimY = 3,
    cudaDevAttrMaxBlockDimZ = 4,
    cudaDevAttrMaxGridDimX = 5,
    cudaDevAttrMaxGridDimY = 6,
    cudaDevAttrMaxGridDimZ = 7,
    cudaDevAttrMaxSharedMemoryPerBlock = 8,
    cudaDevAttrTotalConstantMemory = 9,
    cudaDevAttrWarpSize = 10,
    cudaDevAttrClockRate = 13,
    cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrComputeCapabilityMajor = 75,
    cudaDevAttrComputeCapabilityMinor = 76,
    cudaDevAttrL2CacheSize = 38,
    cudaDevAttrMaxThreadsPerMultiProcessor = 39
} cudaDeviceAttr;

/* The kernel attributes cudaFuncSetAttribute may set (CUDA's values). The
 * CPU path accepts and ignores them: its blocks may have up to 227 KiB of
 * dynamic shared memory without asking (lab 03's step 9 asks for 48.5 KiB,
 * as a GPU needs). */
typedef enum cudaFuncAttribute {
    cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
    cudaFuncAttributePreferredSharedMemoryCarveout = 9
} cudaFuncAttribute;

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;

/* The fields of cudaDeviceProp the kit reads (and a few common ones). */
typedef struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    int regsPerBlock;
    int warpSize;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    int clockRate;
    size_t totalConstMem;
    int major;
    int minor;
    int multiProcessorCount;
    int l2CacheSize;
    int maxThreadsPerMultiProcessor;
    size_t sharedMemPerMultiprocessor;
    int memoryBusWidth;
    int memoryClockRate;
} cudaDeviceProp;

cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device);
cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaRuntimeGetVersion(int *version);
cudaError_t cudaDriverGetVersion(int *version);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaDeviceReset(void);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorName(cudaError_t err);
const char *cudaGetErrorString(cudaError_t err);

cudaError_t cudaMalloc(void **ptr, size_t bytes);
cudaError_t cudaFree(void *ptr);
cudaError_t cudaMallocHost(void **ptr, size_t bytes);
cudaError_t cudaFreeHost(void *ptr);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream CML_CPU_DEFAULT(0));
cudaError_t cudaMemset(void *dst, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes, cudaStream_t stream CML_CPU_DEFAULT(0));
/* Copies into / out of a __constant__ or __device__ variable, given the
 * address of its name in host code (as CUDA's C API takes it; the C++
 * templates in cuda_runtime.h take the variable and check the size). The
 * kinds are not checked: a device source or destination is opened, the
 * rest is host memory. */
cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t bytes, size_t offset CML_CPU_DEFAULT(0),
                               cudaMemcpyKind kind CML_CPU_DEFAULT(cudaMemcpyHostToDevice));
cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t bytes, size_t offset CML_CPU_DEFAULT(0),
                                 cudaMemcpyKind kind CML_CPU_DEFAULT(cudaMemcpyDeviceToHost));
cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t bytes, size_t offset,
                                    cudaMemcpyKind kind, cudaStream_t stream CML_CPU_DEFAULT(0));
cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t bytes, size_t offset,
                                      cudaMemcpyKind kind, cudaStream_t stream CML_CPU_DEFAULT(0));
/* The variable's device address (a pointer kernels and cudaMemcpy take)
 * and its size. */
cudaError_t cudaGetSymbolAddress(void **dev_ptr, const void *symbol);
cudaError_t cudaGetSymbolSize(size_t *bytes, const void *symbol);

cudaError_t cudaStreamCreate(cudaStream_t *stream);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaEventCreate(cudaEvent_t *event);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream CML_CPU_DEFAULT(0));
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t stop);

/* Resident blocks per "multiprocessor" (a worker thread): one block per
 * worker at a time, whatever the kernel. */
cudaError_t cml_cpu_occupancy(int *blocks, int block_size, size_t dynamic_smem);

/* A kernel's compiled resources (CUDA's fields). The CPU path compiles no
 * device code: numRegs, localSizeBytes, binaryVersion and ptxVersion are 0,
 * which means "not known here" (a real kernel has at least one register
 * and a binary version); a program prints them as not measured on the CPU
 * path. maxThreadsPerBlock is the launch limit the runtime enforces, 1024
 * (the CPU path ignores __launch_bounds__). */
struct cudaFuncAttributes {
    size_t sharedSizeBytes, constSizeBytes, localSizeBytes;
    int maxThreadsPerBlock, numRegs, ptxVersion, binaryVersion, cacheModeCA;
    int maxDynamicSharedSizeBytes, preferredShmemCarveout;
};
cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func);
/* CUDA's C form of the occupancy call (cuda_runtime.h has the C++ template):
 * cml_cpu_occupancy's answer, one block per worker. */
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, const void *func, int block_size,
                                                          size_t dynamic_smem);

/* Bank counts (CML_CPU_CHECK=banks): the shared-memory bank conflicts of
 * every launch so far of `kernel` (its name as launched, e.g.
 * "abt_padded_kernel", which also matches "ns::k<32, float>" by "k"; NULL:
 * all kernels), loads in *ld and stores in *st (either may be NULL).
 * Returns 0 when such a kernel ran under the bank counts, -1 otherwise and
 * in a build with no bank model (a student edition or the grader's build
 * tree: see common/cpu/CMakeLists.txt). */
int cml_cpu_bank_totals(const char *kernel, unsigned long long *ld, unsigned long long *st);
/* The same kernels' requests and wavefronts (the model's answer summed over
 * their warp instructions) of loads (store 0) or stores (store 1): lab 01's
 * probe shows predicted against emulated wavefronts with it. Returns as
 * cml_cpu_bank_totals. */
int cml_cpu_bank_counts(const char *kernel, int store, unsigned long long *requests, unsigned long long *wavefronts);
/* Switches the bank counts on from here on (as CML_CPU_CHECK=banks does
 * from the start, without its lines at exit): for a runner's --counters. */
void cml_cpu_bank_counts_on(void);

/* Sector counts (CML_CPU_CHECK=sectors): the global-memory coalescing of
 * every launch so far of `kernel` (matched as by cml_cpu_bank_totals; NULL:
 * all kernels), loads (store 0) or stores (store 1): warp-level
 * instructions (requests, as Nsight Compute's
 * l1tex__t_requests_pipe_lsu_mem_global_op_ld/st.sum), the 32-byte sectors
 * they touched (l1tex__t_sectors_pipe_lsu_mem_global_op_ld/st.sum) and the
 * fewest sectors that would hold the bytes they touched (ideal). Any
 * pointer may be NULL. Returns 0 when such a kernel ran under the counts,
 * -1 otherwise (the counts then 0). */
int cml_cpu_sector_counts(const char *kernel, int store, unsigned long long *requests, unsigned long long *sectors,
                          unsigned long long *ideal);
/* Switches the sector counts on from here on (as CML_CPU_CHECK=sectors
 * does from the start, without its lines). */
void cml_cpu_sector_counts_on(void);

/* Access pictures (CML_CPU_PICTURE=<file>, common/cpu/README.md "Access
 * pictures"): switches the bank and sector counts on from here on, and with
 * them the record of each source line's worst warp instruction (its 32
 * lanes' addresses); cml_cpu_picture_write writes the records of every
 * launch so far to path (the file a runner's --picture draws; returns 0, or
 * -1 after a message when it cannot). */
void cml_cpu_picture_on(void);
int cml_cpu_picture_write(const char *path);

#ifdef __cplusplus
}
#endif

#endif
