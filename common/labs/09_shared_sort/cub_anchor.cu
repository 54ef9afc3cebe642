#include "cub_anchor.h"

#include <cub/device/device_merge_sort.cuh>
#include <cub/device/device_radix_sort.cuh>

namespace {
struct key_less {
    __host__ __device__ bool operator()(unsigned a, unsigned b) const { return a < b; }
};
}  // namespace

extern "C" cudaError_t ss_cub_radix_sort(void *temp, size_t *temp_bytes, const unsigned *in, unsigned *out, size_t n)
{
    return cub::DeviceRadixSort::SortKeys(temp, *temp_bytes, in, out, (long long)n);
}

extern "C" cudaError_t ss_cub_merge_sort(void *temp, size_t *temp_bytes, const unsigned *in, unsigned *out, size_t n)
{
    if (temp != nullptr) {
        cudaError_t err = cudaMemcpyAsync(out, in, n * sizeof *in, cudaMemcpyDeviceToDevice);
        if (err != cudaSuccess)
            return err;
    }
    return cub::DeviceMergeSort::SortKeys(temp, *temp_bytes, out, (long long)n, key_less());
}
