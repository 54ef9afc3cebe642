#include "cub_anchor.h"

#include <cub/device/device_reduce.cuh>

extern "C" cudaError_t red_cub_sum_int(void *temp, size_t *temp_bytes, const int *in, size_t n, int *out)
{
    return cub::DeviceReduce::Sum(temp, *temp_bytes, in, out, (long long)n);
}

extern "C" cudaError_t red_cub_sum_float(void *temp, size_t *temp_bytes, const float *in, size_t n, float *out)
{
    return cub::DeviceReduce::Sum(temp, *temp_bytes, in, out, (long long)n);
}
