/* cub/device/device_merge_sort.cuh on the CPU path: DeviceMergeSort::
 * SortKeys only (in place, with the caller's comparison), the call the
 * kit's CUB anchor (common/labs/09_shared_sort/cub_anchor.cu) makes, as a
 * plain stable sort on the host. Same two-call protocol as CUB: a NULL temp
 * asks for the temporary size. It is a stand-in so the anchor builds and
 * answers correctly; its time is not CUB's and is never compared. */
#ifndef CML_CPU_CUB_DEVICE_MERGE_SORT_CUH
#define CML_CPU_CUB_DEVICE_MERGE_SORT_CUH

#include <cuda_runtime.h>

#include <algorithm>

namespace cub {
struct DeviceMergeSort {
    template <typename Key, typename N, typename Less>
    static cudaError_t SortKeys(void *temp, size_t &temp_bytes, Key *keys, N n, Less less, cudaStream_t stream = 0)
    {
        (void)stream;
        if (temp == nullptr) {
            temp_bytes = 256;  // CUB asks for room for a copy of the keys; a caller allocates it either way
            return cudaSuccess;
        }
        if (n > 0 && !cml_cpu_is_device_pointer(keys))
            return cudaErrorInvalidValue;
        // Device memory is closed to host code on the CPU path (cml_cpu.h):
        // this stand-in is the device's work, so it opens what it touches.
        cml_cpu_device_open(keys);
        if (n > 0)
            std::stable_sort(keys, keys + n, less);  // CUB's merge sort is stable too
        cml_cpu_device_close(keys);
        return cudaPeekAtLastError();
    }
};
}  // namespace cub

#endif
