#include "cml/cml_device.h"
#include "cml/cml_gpu_turn.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

// Writes a known value: proves that this build has code for the GPU.
__global__ void cml_probe_kernel(int *out) { *out = 0x600D; }

static int none(char *reason, size_t len, const char *what, cudaError_t err)
{
    snprintf(reason, len, "no CUDA device: %s (%s)", what, cudaGetErrorString(err));
    return CML_PROBE_NO_GPU;
}

// A GPU is there and CUDA sees it, but it cannot run the kit now: a failure,
// never a skip (a test that skips on a full GPU would pass untested).
static int fail(char *reason, size_t len, const char *what, cudaError_t err)
{
    snprintf(reason, len, "the GPU is not usable: %s: %s (%s)", what, cudaGetErrorName(err), cudaGetErrorString(err));
    return CML_PROBE_FAILED;
}

// cudaGetDeviceCount says "driver version is insufficient" both when the
// driver is too old and when there is no driver at all (a machine without a
// GPU): tell the two apart, so nobody goes to upgrade a driver they lack.
static int no_driver(char *reason, size_t len, cudaError_t err)
{
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (f == NULL) {
        snprintf(reason, len,
                 "no CUDA device: this machine has no NVIDIA GPU driver loaded (no GPU, or the driver is not "
                 "installed); cudaGetDeviceCount: %s",
                 cudaGetErrorString(err));
        return CML_PROBE_NO_GPU;
    }
    char line[160] = "";
    if (fgets(line, sizeof line, f) == NULL)
        line[0] = '\0';
    fclose(f);
    line[strcspn(line, "\n")] = '\0';
    snprintf(reason, len,
             "no CUDA device: the NVIDIA driver is older than this CUDA runtime needs (%s); update the driver "
             "(%s)",
             cudaGetErrorString(err), line);
    return CML_PROBE_NO_GPU;
}

extern "C" int cml_device_probe(cml_device_info *info, char *reason, size_t len)
{
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err == cudaErrorInsufficientDriver)
        return no_driver(reason, len, err);   /* 0: CUDA cannot run here at all */
    if (err == cudaErrorNoDevice || (err == cudaSuccess && count == 0)) {
        snprintf(reason, len, "no CUDA device: the driver sees no GPU");
        return CML_PROBE_NO_GPU;
    }
    if (err != cudaSuccess)
        return none(reason, len, "cudaGetDeviceCount failed", err);
    cudaDeviceProp prop;
    if ((err = cudaGetDeviceProperties(&prop, 0)) != cudaSuccess)
        return fail(reason, len, "cudaGetDeviceProperties failed", err);
#ifndef CML_CPU_BACKEND
    char uuid[64];   /* this process shares the GPU from now on (cml_gpu_turn.h) */
    cml_gpu_uuid_text((const unsigned char *)prop.uuid.bytes, uuid, sizeof uuid);
    cml_gpu_share(uuid);
#endif

    int *d = NULL, h = 0;
    if ((err = cudaMalloc(&d, sizeof(int))) != cudaSuccess)
        return fail(reason, len, "cudaMalloc failed", err);
    cml_probe_kernel<<<1, 1>>>(d);
    err = cudaGetLastError();
    if (err == cudaSuccess)
        err = cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
    cudaFree(d);
    if (err == cudaErrorNoKernelImageForDevice || err == cudaErrorInvalidPtx ||
        err == cudaErrorUnsupportedPtxVersion) {
        snprintf(reason, len,
                 "the GPU is not usable: %s is sm_%d%d but this build has no code for it; "
                 "reconfigure with -DCMAKE_CUDA_ARCHITECTURES=%d%d (%s)",
                 prop.name, prop.major, prop.minor, prop.major, prop.minor,
                 cudaGetErrorString(err));
        return CML_PROBE_FAILED;
    }
    if (err != cudaSuccess)
        return fail(reason, len, "a test kernel failed to run", err);
    if (h != 0x600D) {
        snprintf(reason, len, "the GPU is not usable: a test kernel ran but wrote %d", h);
        return CML_PROBE_FAILED;
    }

    memset(info, 0, sizeof *info);
    info->id = 0;
    snprintf(info->name, sizeof info->name, "%s", prop.name);
    info->cc_major = prop.major;
    info->cc_minor = prop.minor;
    info->sm_count = prop.multiProcessorCount;
    info->global_mem_bytes = prop.totalGlobalMem;
    info->l2_bytes = prop.l2CacheSize;
    cudaRuntimeGetVersion(&info->runtime_version);
    cudaDriverGetVersion(&info->driver_version);
    return CML_PROBE_OK;
}

extern "C" void cml_device_describe(const cml_device_info *info, char *buf, size_t len)
{
    snprintf(buf, len, "%s (sm_%d%d, %d SMs, %.1f GiB, L2 %d MiB)", info->name,
             info->cc_major, info->cc_minor, info->sm_count,
             (double)info->global_mem_bytes / (1024.0 * 1024.0 * 1024.0),
             info->l2_bytes / (1024 * 1024));
}
