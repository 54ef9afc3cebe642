// Kernels for the CPU path's own tests (test_cpu_runtime.c). Each has a C
// launcher; lines the tests expect in a report carry a marker comment
// ("mark:NAME"), which the tests look up in this file.
#include <cuda_runtime.h>

#include "kernels.h"

// ------------------------------------------------------------ barriers

// Rotates the block's values through shared memory `rounds` times; every
// round reads a neighbour's value, so a barrier that does not hold shows.
__global__ void rotate_kernel(const int *in, int *out, int rounds)
{
    __shared__ int s[1024];
    unsigned n = blockDim.x * blockDim.y * blockDim.z;
    unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    int v = in[blockIdx.x * n + t];
    for (int r = 0; r < rounds; ++r) {
        s[t] = v;
        __syncthreads();
        v = s[(t + 1) % n] + 1;
        __syncthreads();
    }
    out[blockIdx.x * n + t] = v;
}

extern "C" cudaError_t k_rotate(const int *in, int *out, int rounds, unsigned blocks, unsigned bx, unsigned by,
                                unsigned bz)
{
    rotate_kernel<<<blocks, dim3(bx, by, bz)>>>(in, out, rounds);
    return cudaDeviceSynchronize();
}

// __syncthreads_count/and/or: out[3 * block + 0..2] from thread 0.
__global__ void barrier_pred_kernel(const int *pred, int *out)
{
    unsigned t = threadIdx.x;
    int p = pred[blockIdx.x * blockDim.x + t];
    int c = __syncthreads_count(p);
    int a = __syncthreads_and(p);
    int o = __syncthreads_or(p);
    if (t == 0) {
        out[3 * blockIdx.x] = c;
        out[3 * blockIdx.x + 1] = a;
        out[3 * blockIdx.x + 2] = o;
    }
}

extern "C" cudaError_t k_barrier_pred(const int *pred, int *out, unsigned blocks, unsigned threads)
{
    barrier_pred_kernel<<<blocks, threads>>>(pred, out);
    return cudaDeviceSynchronize();
}

// ------------------------------------------------------------ warps

// Lanes below `active` take part: out[4 * t + 0..3] = shfl_down by 3,
// shfl_up by 2, shfl_xor 5 (width 16), shfl from lane 7 (width 8); the
// others write -1.
__global__ void shuffle_kernel(const int *in, int *out, int active)
{
    unsigned t = threadIdx.x, lane = t % 32;
    int v = in[t];
    if ((int)lane < active) {
        unsigned mask = active == 32 ? 0xffffffffu : (1u << active) - 1u;
        out[4 * t] = __shfl_down_sync(mask, v, 3);
        out[4 * t + 1] = __shfl_up_sync(mask, v, 2);
        out[4 * t + 2] = __shfl_xor_sync(mask, v, 5, 16);
        out[4 * t + 3] = __shfl_sync(mask, v, 7, 8);
    } else {
        out[4 * t] = out[4 * t + 1] = out[4 * t + 2] = out[4 * t + 3] = -1;
    }
}

extern "C" cudaError_t k_shuffle(const int *in, int *out, int active, unsigned threads)
{
    shuffle_kernel<<<1, threads>>>(in, out, active);
    return cudaDeviceSynchronize();
}

// Votes of the lanes below `active` on pred: out[3 * t + 0..2] = ballot,
// any, all (as unsigned).
__global__ void vote_kernel(const int *pred, unsigned *out, int active)
{
    unsigned t = threadIdx.x, lane = t % 32;
    if ((int)lane >= active)
        return;
    unsigned mask = active == 32 ? 0xffffffffu : (1u << active) - 1u;
    int p = pred[t];
    out[3 * t] = __ballot_sync(mask, p);
    out[3 * t + 1] = (unsigned)__any_sync(mask, p);
    out[3 * t + 2] = (unsigned)__all_sync(mask, p);
}

extern "C" cudaError_t k_vote(const int *pred, unsigned *out, int active, unsigned threads)
{
    vote_kernel<<<1, threads>>>(pred, out, active);
    return cudaDeviceSynchronize();
}

// ------------------------------------------------------------ atomics

// Every thread of every block adds its value to sum[0] (int), to fsum[0]
// (float), takes the maximum into sum[1] and counts itself in sum[2] with
// atomicCAS.
__global__ void atomics_kernel(const int *in, int *sum, float *fsum, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    atomicAdd(&sum[0], in[i]);
    atomicAdd(&fsum[0], (float)in[i]);
    atomicMax(&sum[1], in[i]);
    int old = sum[2], seen;
    do {
        seen = old;
        old = atomicCAS(&sum[2], seen, seen + 1);
    } while (old != seen);
}

extern "C" cudaError_t k_atomics(const int *in, int *sum, float *fsum, unsigned n, unsigned threads)
{
    atomics_kernel<<<(n + threads - 1) / threads, threads>>>(in, sum, fsum, n);
    return cudaDeviceSynchronize();
}

// ------------------------------------------------------------ reports

// Thread 0 waits in a __syncwarp for lane 1, which waits at a barrier for
// thread 0: neither can go on.
__global__ void divergent_barrier_kernel(int *out)
{
    if (threadIdx.x == 0)
        __syncwarp(0x3u);  // mark:deadlock-warp
    else
        __syncthreads();  // mark:deadlock
    out[threadIdx.x] = 1;
}

extern "C" cudaError_t k_divergent_barrier(int *out, unsigned threads)
{
    divergent_barrier_kernel<<<2, threads>>>(out);
    return cudaDeviceSynchronize();
}

// Thread (n % blockDim.x) of block (n / blockDim.x) writes one past the end.
__global__ void past_the_end_kernel(int *out, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n)
        out[i] = 7;  // mark:oob
}

extern "C" cudaError_t k_past_the_end(int *out, unsigned n, unsigned threads)
{
    past_the_end_kernel<<<(n + threads) / threads, threads>>>(out, n);
    return cudaDeviceSynchronize();
}

// 16-byte vectors from in + off: legal at off = 0, misaligned (a GPU's
// cudaErrorMisalignedAddress) at 1-3. The int4 is copied whole; the
// float4 is taken apart, which the compiler makes four 4-byte loads, so
// only the alignment check at the source's access can see it.
__global__ void misaligned_copy_kernel(const int *in, int *out, unsigned off)
{
    const int4 *in4 = reinterpret_cast<const int4 *>(in + off);
    reinterpret_cast<int4 *>(out)[threadIdx.x] = in4[threadIdx.x];  // mark:misaligned-int4
}

__global__ void misaligned_scale_kernel(const float *in, float *out, unsigned off)
{
    float4 v = reinterpret_cast<const float4 *>(in + off)[threadIdx.x];  // mark:misaligned-float4
    out[threadIdx.x] = 2.0f * v.x + v.y - v.z * v.w;
}

extern "C" cudaError_t k_misaligned(int *in, int *out, unsigned off, int as_float)
{
    if (as_float)
        misaligned_scale_kernel<<<1, 8>>>((const float *)in, (float *)out, off);
    else
        misaligned_copy_kernel<<<1, 8>>>(in, out, off);
    return cudaDeviceSynchronize();
}

// Thread 1 waits for a flag that thread 0 sets only after a barrier that
// thread 1 never reaches: a spin that never ends.
__global__ void spin_kernel(int *out)
{
    __shared__ volatile int flag;
    if (threadIdx.x == 0) {
        flag = 0;
        __syncthreads();
        flag = 1;
    } else {
        while (flag == 0)  // mark:spin
            ;
    }
    out[threadIdx.x] = 1;
}

extern "C" cudaError_t k_spin(int *out)
{
    spin_kernel<<<1, 2>>>(out);
    return cudaDeviceSynchronize();
}

__global__ void host_pointer_kernel(int *out) { out[threadIdx.x] = 1; }

extern "C" cudaError_t k_host_pointer(int *out)
{
    host_pointer_kernel<<<1, 4>>>(out);
    return cudaDeviceSynchronize();
}

// ------------------------------------------------------------ races

// Neighbour sum through shared memory, with or without the barrier.
__global__ void neighbour_kernel(const int *in, int *out, int with_barrier)
{
    __shared__ int s[256];
    unsigned t = threadIdx.x;
    s[t] = in[blockIdx.x * blockDim.x + t];  // mark:race-write
    if (with_barrier)
        __syncthreads();
    out[blockIdx.x * blockDim.x + t] = s[t] + s[(t + 1) % blockDim.x];  // mark:race-read
}

extern "C" cudaError_t k_neighbour(const int *in, int *out, int with_barrier, unsigned blocks, unsigned threads)
{
    neighbour_kernel<<<blocks, threads>>>(in, out, with_barrier);
    return cudaDeviceSynchronize();
}

// A warp's tree sum in dynamic shared memory, with __syncwarp between the
// read and the write of each level, or without.
__global__ void warp_sum_kernel(const int *in, int *out, int with_syncwarp)
{
    extern __shared__ int v[];
    unsigned t = threadIdx.x;
    v[t] = in[t];
    v[t + 32] = 0;
    __syncwarp();
    int x = v[t];
    for (unsigned s = 16; s > 0; s >>= 1) {
        x += v[t + s];  // mark:warp-read
        if (with_syncwarp)
            __syncwarp();
        v[t] = x;  // mark:warp-write
        if (with_syncwarp)
            __syncwarp();
    }
    if (t == 0)
        out[0] = x;
}

extern "C" cudaError_t k_warp_sum(const int *in, int *out, int with_syncwarp)
{
    warp_sum_kernel<<<1, 32, 64 * sizeof(int)>>>(in, out, with_syncwarp);
    return cudaDeviceSynchronize();
}

// Two threads of a block write the same global word (no shared memory).
__global__ void global_race_kernel(int *out)
{
    out[blockIdx.x] = (int)threadIdx.x;  // mark:global-race
}

extern "C" cudaError_t k_global_race(int *out, unsigned blocks)
{
    global_race_kernel<<<blocks, 64>>>(out);
    return cudaDeviceSynchronize();
}

// ------------------------------------------------------------ banks

// Each lane of each warp reads word lane * stride (4-byte), or element
// lane * stride of a double array (8-byte), of a shared array filled first;
// lanes at or above `active` skip the read. (A double, not a float2: g++
// splits a float2 copy into two 4-byte loads, which are counted as such.)
__global__ void stride_kernel(float *out, int stride, int active, int wide)
{
    __shared__ float s[32 * 33 * 2];
    __shared__ double d[32 * 33];
    unsigned t = threadIdx.x, lane = t % 32;
    for (unsigned i = t; i < 32 * 33 * 2; i += blockDim.x)
        s[i] = (float)i;
    for (unsigned i = t; i < 32 * 33; i += blockDim.x)
        d[i] = (double)i;
    __syncthreads();
    float r = 0.0f;
    if ((int)lane < active) {
        if (wide)
            r = (float)d[lane * stride];  // mark:bank-wide
        else
            r = s[lane * stride];  // mark:bank-read
    }
    out[t] = r;
}

extern "C" cudaError_t k_stride(float *out, int stride, int active, int wide, unsigned threads)
{
    stride_kernel<<<2, threads>>>(out, stride, active, wide);
    return cudaDeviceSynchronize();
}

// Lanes 0-3 skip the first of two passes over one load (a branch inside a
// loop, as at a matrix's edge). Pass 0 reads word `lane`, pass 1 word
// 32 + (lane + 4) % 32: conflict-free both. Paired by count instead of by
// pass, lane 0's pass-1 word (bank 4) would meet lane 4's pass-0 word.
__global__ void skip_pass_kernel(float *out)
{
    __shared__ float s[64];
    unsigned t = threadIdx.x, lane = t % 32;
    s[t % 64] = (float)t;
    __syncthreads();
    float r = 0.0f;
    int first = lane < 4 ? 1 : 0;
#pragma unroll 1
    for (int k = first; k < 2; ++k)
        r += s[32 * k + (lane + 4 * k) % 32];  // mark:bank-skip
    out[t] = r;
}

extern "C" cudaError_t k_skip_pass(float *out, unsigned threads)
{
    skip_pass_kernel<<<1, threads>>>(out);
    return cudaDeviceSynchronize();
}

// A kernel's resources and occupancy through CUDA's C++ templates (lab 08's
// runner asks the same): honest "not known" on the CPU path.
extern "C" cudaError_t k_attributes(struct cudaFuncAttributes *attr, int *blocks_per_sm, int block_size)
{
    cudaError_t err = cudaFuncGetAttributes(attr, rotate_kernel);
    if (err == cudaSuccess)
        err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, rotate_kernel, block_size, 0);
    return err;
}
