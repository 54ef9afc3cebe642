// Kernels for the CPU path's global-memory sector counts (test_cpu_runtime.c,
// suite "sectors"): access patterns whose sectors per request are known
// exactly. Each launcher launches 2 blocks of 64 threads (4 warps) unless it
// says otherwise, and returns cudaDeviceSynchronize()'s result; lines the
// tests read in the report carry a "mark:NAME" comment. The arrays come from
// cudaMalloc (256-byte aligned), so lane 0 of a warp starts a sector.
#include <cuda_runtime.h>

#include "sector_kernels.h"

// Loads at a stride of `stride` elements (warp w starts at element
// 32 * stride * w), lanes at or above `active` idle; each active lane stores
// its element at out[t] (consecutive).
template <typename T>
__global__ void sector_load_kernel(const T *in, T *out, int stride, int active)
{
    unsigned t = threadIdx.x + blockIdx.x * blockDim.x, lane = t % 32, warp = t / 32;
    if ((int)lane < active) {
        T v = in[(size_t)warp * 32 * stride + (size_t)lane * stride];  // mark:sector-load
        out[t] = v;                                                      // mark:sector-load-store
    }
}

// The same loads, consecutive; the stores at a stride of `stride` elements.
template <typename T>
__global__ void sector_store_kernel(const T *in, T *out, int stride)
{
    unsigned t = threadIdx.x + blockIdx.x * blockDim.x, lane = t % 32, warp = t / 32;
    out[(size_t)warp * 32 * stride + (size_t)lane * stride] = in[t];  // mark:sector-store
}

template <typename T>
static cudaError_t launch_loads(const void *in, void *out, int stride, int active)
{
    sector_load_kernel<T><<<2, 64>>>((const T *)in, (T *)out, stride, active);
    return cudaDeviceSynchronize();
}

extern "C" cudaError_t k_sector_loads(const void *in, void *out, int bytes, int stride, int active)
{
    switch (bytes) {
    case 4: return launch_loads<float>(in, out, stride, active);
    case 8: return launch_loads<int2>(in, out, stride, active);
    case 16: return launch_loads<int4>(in, out, stride, active);
    default: return cudaErrorInvalidValue;
    }
}

extern "C" cudaError_t k_sector_stores(const float *in, float *out, int stride)
{
    sector_store_kernel<float><<<2, 64>>>(in, out, stride);
    return cudaDeviceSynchronize();
}

// One warp sums in[lane], in[lane + 32], ... below n: ceil(n / 32) passes
// over one load, the last one partial when n is not a multiple of 32.
__global__ void sector_loop_kernel(const float *in, float *out, int n)
{
    float s = 0.0f;
    for (int i = (int)threadIdx.x; i < n; i += 32)
        s += in[i];  // mark:sector-loop
    out[threadIdx.x] = s;
}

extern "C" cudaError_t k_sector_loop(const float *in, float *out, int n)
{
    sector_loop_kernel<<<1, 32>>>(in, out, n);
    return cudaDeviceSynchronize();
}

// Lanes 0-3 start the loop one trip later: pass k reads in[32k + lane]. A
// GPU runs the loop's body once per trip with every lane still in it, so the
// first instruction has lanes 0-3 at k = 1 (sector 4) and the others at
// k = 0 (sectors 0-3): 5 sectors, then 4.
__global__ void sector_late_start_kernel(const float *in, float *out, int passes)
{
    unsigned lane = threadIdx.x % 32;
    float r = 0.0f;
    for (int k = lane < 4 ? 1 : 0; k < passes; ++k)
        r += in[32 * k + lane];  // mark:sector-late-start
    out[threadIdx.x] = r;
}

// Lanes 0-3 skip the load of the first of two trips by a branch inside the
// loop (as at a matrix's left edge); every trip stores to shared memory. The
// first instruction has lanes 4-31 (sectors 0-3), the second all 32
// (sectors 4-7): 4 and 4. (Counted by the lanes' k-th load alone, lanes 0-3's
// only load would join the first: 5 and 4.)
__global__ void sector_branch_kernel(const float *in, float *out, int passes)
{
    __shared__ float s[8][32];
    unsigned lane = threadIdx.x % 32;
    for (int k = 0; k < passes; ++k) {
        float v = 0.0f;
        if (k > 0 || lane >= 4)
            v = in[32 * k + lane];  // mark:sector-branch
        s[k][lane] = v;
    }
    __syncthreads();
    out[lane] = s[0][lane] + s[1][lane];
}

// Lanes 0-15 load in the first trip, lanes 16-31 in the second (one load
// each, as at a tile's edge): two instructions of 2 sectors, not one of 4.
__global__ void sector_halves_kernel(const float *in, float *out, int passes)
{
    __shared__ float s[8][32];
    unsigned lane = threadIdx.x % 32;
    for (int k = 0; k < passes; ++k) {
        float v = 0.0f;
        if ((lane < 16) == (k == 0))
            v = in[32 * k + lane];
        s[k][lane] = v;
    }
    __syncthreads();
    out[lane] = s[0][lane] + s[1][lane];
}

extern "C" cudaError_t k_sector_passes(const float *in, float *out, int which)
{
    if (which == 0)
        sector_late_start_kernel<<<1, 32>>>(in, out, 2);
    else if (which == 1)
        sector_branch_kernel<<<1, 32>>>(in, out, 2);
    else
        sector_halves_kernel<<<1, 32>>>(in, out, 2);
    return cudaDeviceSynchronize();
}

// Not global memory: a __constant__ table, shared memory and a local array.
// Only the store to out is a global access.
__constant__ float sector_table[64];

__global__ void sector_not_global_kernel(float *out)
{
    __shared__ float s[64];
    float local[4];
    unsigned t = threadIdx.x;
    s[t] = sector_table[t];
    for (int k = 0; k < 4; ++k)
        local[k] = s[(t + (unsigned)k) % 64];
    __syncthreads();
    out[t] = s[63 - t] + local[t % 4];
}

extern "C" cudaError_t k_sector_not_global(float *out)
{
    float table[64];
    for (int k = 0; k < 64; ++k)
        table[k] = (float)k;
    cudaError_t err = cudaMemcpyToSymbol(sector_table, table, sizeof table);
    if (err != cudaSuccess)
        return err;
    sector_not_global_kernel<<<1, 64>>>(out);
    return cudaDeviceSynchronize();
}
