// Kernels for the access pictures (test_picture.c): shared-memory patterns
// of known conflict degree and global ones of known sectors per request.
// Lines the tests look for carry a "mark:NAME" comment.
#include <cuda_runtime.h>

#include "picture_kernels.h"

// Read without a write first: what the values are does not matter here,
// only where each lane reads.
__global__ void pic_shared_stride_kernel(float *out, int stride)
{
    __shared__ float s[32 * 33];
    unsigned lane = threadIdx.x;
    out[lane] = s[lane * (unsigned)stride];  // mark:pic-shared-stride
}

__global__ void pic_shared_double_kernel(double *out)
{
    __shared__ double s[64];
    out[threadIdx.x] = s[threadIdx.x];  // mark:pic-shared-double
}

// Written by rows (conflict-free in every layout), read by columns: warp y
// reads column y, lane x row x.
template <int PAD, bool SWIZZLE>
__global__ void pic_tile_kernel(const float *in, float *out)
{
    __shared__ float tile[32][32 + PAD];
    int x = threadIdx.x, y = threadIdx.y;
    tile[y][SWIZZLE ? (x ^ y) : x] = in[y * 32 + x];
    __syncthreads();
    out[y * 32 + x] = tile[x][SWIZZLE ? (y ^ x) : y];  // mark:pic-tile-read
}

__global__ void pic_global_stride_kernel(const float *in, float *out, int stride)
{
    unsigned lane = threadIdx.x;
    out[lane] = in[lane * (unsigned)stride];  // mark:pic-global-stride
}

__global__ void pic_global_float4_kernel(const float4 *in, float4 *out)
{
    unsigned lane = threadIdx.x;
    float4 v = in[lane];  // mark:pic-global-float4
    out[lane] = v;
}

extern "C" cudaError_t k_pic_shared_stride(float *out, int stride)
{
    pic_shared_stride_kernel<<<1, 32>>>(out, stride);
    return cudaDeviceSynchronize();
}

extern "C" cudaError_t k_pic_shared_double(double *out)
{
    pic_shared_double_kernel<<<1, 32>>>(out);
    return cudaDeviceSynchronize();
}

extern "C" cudaError_t k_pic_tile(const float *in, float *out, int kind)
{
    dim3 block(32, 32);
    if (kind == 0)
        pic_tile_kernel<0, false><<<1, block>>>(in, out);
    else if (kind == 1)
        pic_tile_kernel<1, false><<<1, block>>>(in, out);
    else
        pic_tile_kernel<0, true><<<1, block>>>(in, out);
    return cudaDeviceSynchronize();
}

extern "C" cudaError_t k_pic_global_stride(const float *in, float *out, int stride)
{
    pic_global_stride_kernel<<<1, 32>>>(in, out, stride);
    return cudaDeviceSynchronize();
}

extern "C" cudaError_t k_pic_global_float4(const void *in, void *out)
{
    pic_global_float4_kernel<<<1, 32>>>((const float4 *)in, (float4 *)out);
    return cudaDeviceSynchronize();
}
