// Kernels and a CUB call for test_host_access.c: device memory is open to
// them while they run, closed to host code before and after.
#include <cub/device/device_merge_sort.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cuda_runtime.h>

#include "host_access.h"

__global__ void scale_kernel(float *x, unsigned n, float by)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] = x[i] * by + (float)i;
}

extern "C" cudaError_t ha_scale(float *x, unsigned n, float by, unsigned threads)
{
    scale_kernel<<<(n + threads - 1) / threads, threads>>>(x, n, by);
    return cudaDeviceSynchronize();
}

struct two_arrays {
    const int *in;
    int *out;
    unsigned n;
};

// Each thread puts its element (0 past n) in the next thread's slot of
// dynamic shared memory and, after the barrier, uses the one left in its
// own: thread k of a block gets the element of thread k - 1 (thread 0 that
// of the block's last thread). The kernel needs the struct's pointers and
// the shared array to get it right.
__global__ void through_struct_kernel(two_arrays t)
{
    extern __shared__ int staged[];
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    staged[(threadIdx.x + 1) % blockDim.x] = i < t.n ? t.in[i] : 0;
    __syncthreads();
    if (i < t.n)
        t.out[i] = 3 * staged[threadIdx.x] + 1;
}

extern "C" cudaError_t ha_through_struct(const int *in, int *out, unsigned n, unsigned threads)
{
    two_arrays t = {in, out, n};
    through_struct_kernel<<<(n + threads - 1) / threads, threads, threads * sizeof(int)>>>(t);
    return cudaDeviceSynchronize();
}

extern "C" cudaError_t ha_cub_sum(const int *in, int *out, int n)
{
    size_t temp_bytes = 0;
    cudaError_t err = cub::DeviceReduce::Sum(nullptr, temp_bytes, in, out, n);
    if (err != cudaSuccess)
        return err;
    void *temp = nullptr;
    if ((err = cudaMalloc(&temp, temp_bytes)) != cudaSuccess)
        return err;
    err = cub::DeviceReduce::Sum(temp, temp_bytes, in, out, n);
    cudaError_t freed = cudaFree(temp);
    return err != cudaSuccess ? err : freed;
}

namespace {
struct unsigned_less {
    __host__ __device__ bool operator()(unsigned a, unsigned b) const { return a < b; }
};
}  // namespace

extern "C" cudaError_t ha_cub_sorts(const unsigned *in, unsigned *out, unsigned *out2, int n)
{
    size_t radix_bytes = 0, merge_bytes = 0;
    cudaError_t err = cub::DeviceRadixSort::SortKeys(nullptr, radix_bytes, in, out, n);
    if (err == cudaSuccess)
        err = cub::DeviceMergeSort::SortKeys(nullptr, merge_bytes, out2, n, unsigned_less());
    void *temp = nullptr;
    if (err == cudaSuccess)
        err = cudaMalloc(&temp, radix_bytes > merge_bytes ? radix_bytes : merge_bytes);
    if (err == cudaSuccess)
        err = cub::DeviceRadixSort::SortKeys(temp, radix_bytes, in, out, n);
    if (err == cudaSuccess)
        err = cudaMemcpy(out2, in, (size_t)n * sizeof *in, cudaMemcpyDeviceToDevice);
    if (err == cudaSuccess)
        err = cub::DeviceMergeSort::SortKeys(temp, merge_bytes, out2, n, unsigned_less());
    cudaError_t freed = temp ? cudaFree(temp) : cudaSuccess;
    return err != cudaSuccess ? err : freed;
}
