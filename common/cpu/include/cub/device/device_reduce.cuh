/* cub/device/device_reduce.cuh on the CPU path: DeviceReduce::Sum only,
 * the call the kit's CUB anchor (common/labs/04_reduction/cub_anchor.cu)
 * makes, as a plain loop on the host. Same two-call protocol as CUB: a NULL
 * temp asks for the temporary size. It is a stand-in so the anchor builds
 * and answers correctly; its time is not CUB's and is never compared. */
#ifndef CML_CPU_CUB_DEVICE_REDUCE_CUH
#define CML_CPU_CUB_DEVICE_REDUCE_CUH

#include <cuda_runtime.h>

namespace cub {
struct DeviceReduce {
    template <typename In, typename Out, typename N>
    static cudaError_t Sum(void *temp, size_t &temp_bytes, In in, Out out, N n, cudaStream_t stream = 0)
    {
        (void)stream;
        if (temp == nullptr) {
            temp_bytes = 256;  // CUB asks for some; a caller allocates it either way
            return cudaSuccess;
        }
        if (n > 0 && (!cml_cpu_is_device_pointer(in) || !cml_cpu_is_device_pointer(out)))
            return cudaErrorInvalidValue;
        // Device memory is closed to host code on the CPU path (cml_cpu.h):
        // this stand-in is the device's work, so it opens what it reads.
        cml_cpu_device_open(in);
        cml_cpu_device_open(out);
        typename std::remove_reference<decltype(*out)>::type sum = 0;
        for (N i = 0; i < n; ++i)
            sum += in[i];  // in order, in the element type: CUB's tree order differs for float
        *out = sum;
        cml_cpu_device_close(out);
        cml_cpu_device_close(in);
        return cudaPeekAtLastError();
    }
};
}  // namespace cub

#endif
