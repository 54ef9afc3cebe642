/* cub/device/device_radix_sort.cuh on the CPU path: DeviceRadixSort::
 * SortKeys only (ascending, the whole key: begin_bit 0, end_bit all bits),
 * the call the kit's CUB anchor (common/labs/09_shared_sort/cub_anchor.cu)
 * makes, as a plain sort on the host. Same two-call protocol as CUB: a NULL
 * temp asks for the temporary size. It is a stand-in so the anchor builds
 * and answers correctly; its time is not CUB's and is never compared. */
#ifndef CML_CPU_CUB_DEVICE_RADIX_SORT_CUH
#define CML_CPU_CUB_DEVICE_RADIX_SORT_CUH

#include <cuda_runtime.h>

#include <algorithm>

namespace cub {
struct DeviceRadixSort {
    template <typename Key, typename N>
    static cudaError_t SortKeys(void *temp, size_t &temp_bytes, const Key *in, Key *out, N n, int begin_bit = 0,
                                int end_bit = (int)(sizeof(Key) * 8), cudaStream_t stream = 0)
    {
        (void)stream;
        if (temp == nullptr) {
            temp_bytes = 256;  // CUB asks for room for a copy of the keys; a caller allocates it either way
            return cudaSuccess;
        }
        if (begin_bit != 0 || end_bit != (int)(sizeof(Key) * 8))
            return cudaErrorInvalidValue;  // the kit sorts by whole keys: a part of them is not stood in for
        if (n > 0 && (!cml_cpu_is_device_pointer(in) || !cml_cpu_is_device_pointer(out)))
            return cudaErrorInvalidValue;
        // Device memory is closed to host code on the CPU path (cml_cpu.h):
        // this stand-in is the device's work, so it opens what it touches.
        cml_cpu_device_open(in);
        cml_cpu_device_open(out);
        if (n > 0) {
            std::copy(in, in + n, out);
            std::stable_sort(out, out + n);  // a radix sort is stable; for keys alone any order of equals is the same
        }
        cml_cpu_device_close(out);
        cml_cpu_device_close(in);
        return cudaPeekAtLastError();
    }
};
}  // namespace cub

#endif
