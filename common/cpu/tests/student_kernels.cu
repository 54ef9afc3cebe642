// Kernels for the CPU path's tests of what CUDA C students write beyond the
// labs' skeletons (test_student_code.c): cooperative groups, cuda::std, warp
// operations under a tail's mask, atomics of every type, lambdas and
// templates, and bounds of static __shared__ arrays. Each has a C launcher;
// lines a report must name carry "mark:NAME".
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <cuda/std/array>
#include <cuda/std/cstdint>
#include <cuda/std/limits>
#include <cuda/std/type_traits>
#include <cuda/std/utility>

#include "student_kernels.h"

namespace cg = cooperative_groups;

// ------------------------------------------------------------ cooperative groups

// Block sum: cg::reduce over each warp's tile, the warps' sums through
// shared memory, the block's sum added to *sum.
__global__ void cg_block_sum_kernel(const int *in, unsigned long long *sum, unsigned n)
{
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    __shared__ int warp_sums[32];
    unsigned i = blockIdx.x * block.size() + block.thread_rank();
    int v = i < n ? in[i] : 0;
    int s = cg::reduce(warp, v, cg::plus<int>());
    if (warp.thread_rank() == 0)
        warp_sums[warp.meta_group_rank()] = s;
    block.sync();
    if (warp.meta_group_rank() == 0) {
        int w = warp.thread_rank() < warp.meta_group_size() ? warp_sums[warp.thread_rank()] : 0;
        w = cg::reduce(warp, w, cg::plus<int>());
        if (warp.thread_rank() == 0)
            atomicAdd(sum, (unsigned long long)(long long)w);
    }
}

extern "C" cudaError_t k_cg_block_sum(const int *in, unsigned long long *sum, unsigned n, unsigned threads)
{
    cg_block_sum_kernel<<<(n + threads - 1) / threads, threads>>>(in, sum, n);
    return cudaDeviceSynchronize();
}

// Tiles of 16 (tiled_partition<16> of a warp's tile): shfl_down within the
// tile, each tile's sum stored at its place; meta_group_rank within the
// parent warp (0 or 1) is written too.
__global__ void cg_tile16_kernel(const int *in, int *tile_sums, int *meta, unsigned n)
{
    auto block = cg::this_thread_block();
    auto warp = cg::tiled_partition<32>(block);
    cg::thread_block_tile<16> tile = cg::tiled_partition<16>(warp);
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? in[i] : 0;
    for (unsigned o = tile.size() / 2; o > 0; o /= 2)
        v += tile.shfl_down(v, o);
    tile.sync();
    if (tile.thread_rank() == 0) {
        unsigned t = i / 16;
        tile_sums[t] = v;
        meta[t] = (int)tile.meta_group_rank();
    }
    cg::sync(block);
}

extern "C" cudaError_t k_cg_tile16(const int *in, int *tile_sums, int *meta, unsigned n, unsigned threads)
{
    cg_tile16_kernel<<<(n + threads - 1) / threads, threads>>>(in, tile_sums, meta, n);
    return cudaDeviceSynchronize();
}

// ------------------------------------------------------------ cuda::std

// Minimum and maximum through cuda::std types: out[0] = min, out[1] = max
// (each block's pair kept in a cuda::std::array, folded with atomics).
__global__ void cuda_std_kernel(const cuda::std::int32_t *in, cuda::std::int32_t *out, unsigned n)
{
    static_assert(cuda::std::is_same<cuda::std::int32_t, int>::value, "int32_t is int");
    cuda::std::array<cuda::std::int32_t, 2> mm{cuda::std::numeric_limits<cuda::std::int32_t>::max(),
                                               cuda::std::numeric_limits<cuda::std::int32_t>::lowest()};
    for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        cuda::std::pair<cuda::std::int32_t, cuda::std::int32_t> p{in[i], in[i]};
        if (p.first < mm[0])
            mm[0] = p.first;
        if (p.second > mm[1])
            mm[1] = p.second;
    }
    atomicMin(&out[0], mm[0]);
    atomicMax(&out[1], mm[1]);
}

extern "C" cudaError_t k_cuda_std(const int *in, int *out, unsigned n)
{
    cuda_std_kernel<<<7, 64>>>(in, out, n);
    return cudaDeviceSynchronize();
}

// ------------------------------------------------------------ warps in a tail

// n threads of ceil(n / 32) warps; lanes past n return at once, so the
// last warp's mask (from __ballot_sync) is partial. Per thread i:
// out[4i] = lane 0's value, out[4i+1] = the value of lane - 1 (own at lane
// 0), out[4i+2] = the ballot of in > 0, out[4i+3] = any | all << 1.
__global__ void tail_warp_kernel(const int *in, int *out, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned mask = __ballot_sync(0xffffffffu, i < n);
    if (i >= n)
        return;
    int v = in[i];
    out[4 * i] = __shfl_sync(mask, v, 0);
    out[4 * i + 1] = __shfl_up_sync(mask, v, 1);
    out[4 * i + 2] = (int)__ballot_sync(mask, v > 0);
    out[4 * i + 3] = __any_sync(mask, v > 0) | __all_sync(mask, v > 0) << 1;
}

extern "C" cudaError_t k_tail_warp(const int *in, int *out, unsigned n, unsigned threads)
{
    tail_warp_kernel<<<(n + threads - 1) / threads, threads>>>(in, out, n);
    return cudaDeviceSynchronize();
}

// ------------------------------------------------------------ atomics

// Every atomic CUDA has, on the integer types and the float types, each
// thread folding its value in (student_kernels.h: struct atomic_results).
__global__ void atomics_all_kernel(const int *in, atomic_results *r, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int v = in[i];
    unsigned u = (unsigned)v * 2654435761u;
    unsigned long long w = (unsigned long long)u << 20 | i;
    atomicAdd(&r->add_i, v);
    atomicAdd(&r->add_u, u);
    atomicAdd(&r->add_ull, w);
    atomicAdd(&r->add_f, (float)v);
    atomicAdd(&r->add_d, (double)v * 0.5);
    atomicSub(&r->sub_i, v);
    atomicMax(&r->max_i, v);
    atomicMin(&r->min_i, v);
    atomicMax(&r->max_u, u);
    atomicMin(&r->min_u, u);
    atomicMax(&r->max_ull, w);
    atomicMin(&r->min_ull, w);
    atomicAnd(&r->and_u, u | 0x00ff00ffu);
    atomicOr(&r->or_u, u & 0x0f0f0f0fu);
    atomicXor(&r->xor_u, u);
    atomicAnd(&r->and_i, v | 0x7ff0);
    atomicOr(&r->or_i, v & 0x3c);
    atomicXor(&r->xor_i, v);
    atomicAnd(&r->and_ull, w | 0xffffffff000ull);
    atomicOr(&r->or_ull, w & 0xf0f0f0f0f0ull);
    atomicXor(&r->xor_ull, w);
    atomicExch(&r->exch_i, 7);       // every thread writes the same value
    atomicExch(&r->exch_u, 9u);
    atomicExch(&r->exch_ull, 11ull);
    atomicExch(&r->exch_f, 2.5f);
    // counting with compare-and-swap loops on each integer type
    int oi = r->cas_i, si;
    do {
        si = oi;
        oi = atomicCAS(&r->cas_i, si, si + 1);
    } while (oi != si);
    unsigned ou = r->cas_u, su;
    do {
        su = ou;
        ou = atomicCAS(&r->cas_u, su, su + 3u);
    } while (ou != su);
    unsigned long long ow = r->cas_ull, sw;
    do {
        sw = ow;
        ow = atomicCAS(&r->cas_ull, sw, sw + 5ull);
    } while (ow != sw);
    atomicInc(&r->inc_u, 6u);
    atomicAdd_block(&r->add_block_i, 1);
    atomicAdd_system(&r->add_system_i, 2);
}

extern "C" cudaError_t k_atomics_all(const int *in, atomic_results *r, unsigned n, unsigned threads)
{
    atomics_all_kernel<<<(n + threads - 1) / threads, threads>>>(in, r, n);
    return cudaDeviceSynchronize();
}

// ------------------------------------------------------------ lambdas and templates

// A kernel template whose parameters come in no particular order, the
// last deduced from the call: y[i] = op(x[i]) * Scale for i < n.
template <typename Op, int Scale, typename T>
__global__ void map_kernel(Op op, const T *x, T *y, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    auto in_range = [&]() { return i < n; }; // a lambda inside the kernel
    if (in_range())
        y[i] = op(x[i]) * Scale;
}

// Deduced entirely from the arguments.
template <typename T, typename Op>
__global__ void apply_kernel(const T *x, T *y, unsigned n, Op op)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = op(x[i], (T)i);
}

extern "C" cudaError_t k_lambdas(const int *x, int *y, int *z, unsigned n)
{
    auto affine = [] __device__(int v) { return 3 * v + 1; };
    map_kernel<decltype(affine), 2><<<(n + 63) / 64, 64>>>(affine, x, y, n);
    int offset = 5; // captured by value: every thread gets its copy
    apply_kernel<<<(n + 127) / 128, 128>>>(x, z, n, [=] __device__(int v, int i) { return v - i + offset; });
    return cudaDeviceSynchronize();
}

// ------------------------------------------------------------ static __shared__ bounds

// A 2D tile of `rows` rows of 33 floats filled by a block of 32 x rows
// threads; `shift` 1 moves every row down by one, so the last row's threads
// write one row past the tile (write 1) or read it (write 0).
template <int Rows>
__global__ void tile_rows_kernel(float *out, int shift, int write)
{
    __shared__ float tile[Rows][33];
    unsigned x = threadIdx.x, y = threadIdx.y;
    if (write)
        tile[y + shift][x] = (float)(x + 33 * y);  // mark:tile-write
    else
        tile[y][x] = (float)(x + 33 * y);
    __syncthreads();
    float v = tile[y + (write ? 0 : shift)][x];  // mark:tile-read
    out[y * 32 + x] = v;
}

extern "C" cudaError_t k_tile_rows(float *out, int shift, int write)
{
    tile_rows_kernel<8><<<2, dim3(32, 8)>>>(out, shift, write);
    return cudaDeviceSynchronize();
}

// A 3D tile one plane too small for its block: planes 0..Planes-1 exist,
// the thread at z = Planes writes the plane after the last.
__global__ void tile_planes_kernel(int *out, int planes_used)
{
    __shared__ int cube[3][4][4];
    unsigned x = threadIdx.x, y = threadIdx.y, z = threadIdx.z;
    if ((int)z < planes_used)
        cube[z][y][x] = (int)(x + 4 * y + 16 * z);  // mark:plane-write
    __syncthreads();
    out[(z * 4 + y) * 4 + x] = (int)z < planes_used ? cube[z][y][x] : -1;
}

extern "C" cudaError_t k_tile_planes(int *out, int planes_used)
{
    tile_planes_kernel<<<1, dim3(4, 4, 4)>>>(out, planes_used);
    return cudaDeviceSynchronize();
}
