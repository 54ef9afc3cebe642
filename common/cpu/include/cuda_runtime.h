/* cuda_runtime.h on the CPU path. From C: the runtime API and vector types.
 * From C++ (a .cu translated by `labtool cpu-translate`): also the kernel
 * surface the labs use - qualifiers, threadIdx & co, barriers, warp
 * shuffles and votes, atomics, __ldg, clock64 - and the launcher that the
 * translated `K<<<cfg>>>(args)` calls. */
#ifndef CML_CPU_CUDA_RUNTIME_H
#define CML_CPU_CUDA_RUNTIME_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_runtime_api.h"
#include "vector_types.h"
#include "cml_cpu.h"

#ifdef __cplusplus

#include <tuple>
#include <type_traits>
#include <utility>

// ------------------------------------------------------------ qualifiers

#define __global__
#define __device__
#define __host__
#define __noinline__ __attribute__((noinline))
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __constant__
#define __managed__
// Static shared memory: one OS thread runs one block at a time (all of its
// CUDA threads as fibers), so a thread-local static is per block for free.
#define __shared__ static thread_local

// ------------------------------------------------------------ coordinates

struct dim3 {
    unsigned x, y, z;
    constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(cml_cpu_uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator cml_cpu_uint3() const { return cml_cpu_uint3{x, y, z}; }
};
typedef cml_cpu_uint3 uint3_coord;

#define threadIdx cml_cpu_coord.thread_idx
#define blockIdx cml_cpu_coord.block_idx
#define blockDim cml_cpu_coord.block_dim
#define gridDim cml_cpu_coord.grid_dim
#define warpSize 32

// ------------------------------------------------------------ barriers, warps

#define CML_CPU_AI static inline __attribute__((always_inline))
CML_CPU_AI void __syncthreads(void) { cml_cpu_syncthreads(); }
CML_CPU_AI int __syncthreads_count(int p) { return cml_cpu_syncthreads_pred(CML_CPU_BAR_COUNT, p); }
CML_CPU_AI int __syncthreads_and(int p) { return cml_cpu_syncthreads_pred(CML_CPU_BAR_AND, p); }
CML_CPU_AI int __syncthreads_or(int p) { return cml_cpu_syncthreads_pred(CML_CPU_BAR_OR, p); }
CML_CPU_AI void __syncwarp(unsigned mask = 0xffffffffu) { cml_cpu_warp_op(CML_CPU_SYNCWARP, mask, 0, 0); }
static inline void __threadfence(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline void __threadfence_block(void) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
static inline unsigned __activemask(void) { return cml_cpu_active_mask(); }
CML_CPU_AI unsigned cml_cpu_lane(void) { return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % 32u; }

template <typename T>
CML_CPU_AI T cml_cpu_shfl(unsigned mask, T v, int src)
{
    static_assert(sizeof(T) <= 8, "shuffles move at most 8 bytes on the CPU path");
    uint64_t bits = 0;
    memcpy(&bits, &v, sizeof v);
    bits = cml_cpu_warp_op(CML_CPU_SHFL, mask, bits, src);
    T r;
    memcpy(&r, &bits, sizeof r);
    return r;
}
// Lane arithmetic as the CUDA docs define it: width splits the warp into
// segments; a source outside the segment gives the caller its own value.
template <typename T>
CML_CPU_AI T __shfl_sync(unsigned mask, T v, int src, int width = 32)
{
    int lane = (int)cml_cpu_lane();
    int base = lane & ~(width - 1);
    return cml_cpu_shfl(mask, v, base + (src & (width - 1)));
}
template <typename T>
CML_CPU_AI T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32)
{
    int lane = (int)cml_cpu_lane();
    int base = lane & ~(width - 1);
    int src = lane - (int)delta;
    return cml_cpu_shfl(mask, v, src < base ? lane : src);
}
template <typename T>
CML_CPU_AI T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32)
{
    int lane = (int)cml_cpu_lane();
    int base = lane & ~(width - 1);
    int src = lane + (int)delta;
    return cml_cpu_shfl(mask, v, src >= base + width ? lane : src);
}
template <typename T>
CML_CPU_AI T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32)
{
    int lane = (int)cml_cpu_lane();
    int base = lane & ~(width - 1);
    int src = lane ^ lane_mask;
    return cml_cpu_shfl(mask, v, src >= base + width ? lane : src);
}
CML_CPU_AI unsigned __ballot_sync(unsigned mask, int p)
{
    return (unsigned)cml_cpu_warp_op(CML_CPU_BALLOT, mask, p != 0, 0);
}
CML_CPU_AI int __any_sync(unsigned mask, int p) { return __ballot_sync(mask, p) != 0; }
CML_CPU_AI int __all_sync(unsigned mask, int p)
{
    return __ballot_sync(mask, p) == (mask & cml_cpu_active_mask());
}
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline unsigned __brev(unsigned x)
{
    unsigned r = 0;
    for (int i = 0; i < 32; ++i, x >>= 1)
        r = (r << 1) | (x & 1u);
    return r;
}

// ------------------------------------------------------------ memory, time

template <typename T>
static inline T __ldg(const T *p) { return *p; }
static inline long long clock64(void) { return cml_cpu_clock64(); }
static inline long long clock(void) { return cml_cpu_clock64(); }

// Blocks run on several OS threads at once: atomics are real atomics.
#define CML_CPU_ATOMIC_INT(T)                                                                   \
    static inline T atomicAdd(T *p, T v) { return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST); } \
    static inline T atomicSub(T *p, T v) { return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST); } \
    static inline T atomicAnd(T *p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); } \
    static inline T atomicOr(T *p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }   \
    static inline T atomicXor(T *p, T v) { return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST); } \
    static inline T atomicExch(T *p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }  \
    static inline T atomicCAS(T *p, T cmp, T v)                                                 \
    {                                                                                           \
        __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);     \
        return cmp;                                                                             \
    }                                                                                           \
    static inline T atomicMax(T *p, T v)                                                        \
    {                                                                                           \
        T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);                                           \
        while (old < v && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) \
            ;                                                                                   \
        return old;                                                                             \
    }                                                                                           \
    static inline T atomicMin(T *p, T v)                                                        \
    {                                                                                           \
        T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);                                           \
        while (old > v && !__atomic_compare_exchange_n(p, &old, v, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) \
            ;                                                                                   \
        return old;                                                                             \
    }
CML_CPU_ATOMIC_INT(int)
CML_CPU_ATOMIC_INT(unsigned)
CML_CPU_ATOMIC_INT(unsigned long long)
CML_CPU_ATOMIC_INT(long long)

static inline float atomicAdd(float *p, float v)
{
    float old, want;
    __atomic_load(p, &old, __ATOMIC_SEQ_CST);
    do
        want = old + v;
    while (!__atomic_compare_exchange(p, &old, &want, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
    return old;
}
static inline double atomicAdd(double *p, double v)
{
    double old, want;
    __atomic_load(p, &old, __ATOMIC_SEQ_CST);
    do
        want = old + v;
    while (!__atomic_compare_exchange(p, &old, &want, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST));
    return old;
}
static inline float atomicExch(float *p, float v)
{
    float old;
    __atomic_exchange(p, &v, &old, __ATOMIC_SEQ_CST);
    return old;
}
static inline unsigned atomicInc(unsigned *p, unsigned limit)
{
    unsigned old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (!__atomic_compare_exchange_n(p, &old, old >= limit ? 0u : old + 1u, true, __ATOMIC_SEQ_CST,
                                        __ATOMIC_SEQ_CST))
        ;
    return old;
}

// ------------------------------------------------------------ math

static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
static inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
static inline long long min(long long a, long long b) { return a < b ? a : b; }
static inline long long max(long long a, long long b) { return a > b ? a : b; }
static inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
static inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }
static inline float __fdividef(float a, float b) { return a / b; }
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
/* __expf, __logf, __sinf, __cosf: glibc already declares them (same meaning). */
static inline float __saturatef(float x) { return x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
static inline int __float2int_rz(float x) { return (int)x; }
static inline float __int2float_rn(int x) { return (float)x; }
static inline int __mul24(int a, int b) { return a * b; }
static inline unsigned __umul24(unsigned a, unsigned b) { return a * b; }

// ------------------------------------------------------------ runtime, C++ side

template <typename T>
static inline cudaError_t cudaMalloc(T **p, size_t bytes)
{
    return cudaMalloc(reinterpret_cast<void **>(p), bytes);
}
template <typename T>
static inline cudaError_t cudaMallocHost(T **p, size_t bytes)
{
    return cudaMallocHost(reinterpret_cast<void **>(p), bytes);
}
template <typename T>
static inline cudaError_t cudaMemcpyToSymbol(T &symbol, const void *src, size_t bytes, size_t offset = 0,
                                             cudaMemcpyKind kind = cudaMemcpyHostToDevice)
{
    (void)kind;
    if (offset + bytes > sizeof symbol)
        return cudaErrorInvalidValue;
    return cml_cpu_memcpy_to_symbol((void *)&symbol, src, bytes, offset);
}
template <typename T>
static inline cudaError_t cudaMemcpyFromSymbol(void *dst, const T &symbol, size_t bytes, size_t offset = 0,
                                               cudaMemcpyKind kind = cudaMemcpyDeviceToHost)
{
    (void)kind;
    if (offset + bytes > sizeof symbol)
        return cudaErrorInvalidValue;
    return cml_cpu_memcpy_from_symbol(dst, (const void *)&symbol, bytes, offset);
}
template <typename K>
static inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, K kernel, int block_size,
                                                                        size_t smem)
{
    (void)kernel;
    return cml_cpu_occupancy(blocks, block_size, smem);
}
template <typename K>
static inline cudaError_t cudaFuncSetAttribute(K kernel, int attr, int value)
{
    (void)kernel, (void)attr, (void)value;
    return cudaSuccess;
}

// ------------------------------------------------------------ launches

// The launch configuration: `<<<grid, block, smem, stream>>>`.
struct cml_cpu_config {
    dim3 grid, block;
    size_t smem;
};
static inline cml_cpu_config cml_cpu_cfg(dim3 grid, dim3 block, size_t smem = 0, cudaStream_t stream = 0)
{
    (void)stream;  // kernels run to the end inside the launch: streams order nothing
    return cml_cpu_config{grid, block, smem};
}

// One launch's kernel and its arguments, converted to the parameter types
// once (every CUDA thread gets its own copy of the parameters, as on a GPU).
template <typename... P>
struct cml_cpu_call {
    void (*kernel)(P...);
    std::tuple<typename std::decay<P>::type...> args;
};

template <typename... P, size_t... I>
static inline void cml_cpu_invoke(cml_cpu_call<P...> *c, std::index_sequence<I...>)
{
    std::tuple<typename std::decay<P>::type...> mine = c->args;  // parameters are per-thread variables
    c->kernel(std::get<I>(mine)...);
}
template <typename... P>
static void cml_cpu_body(void *ctx)
{
    cml_cpu_invoke(static_cast<cml_cpu_call<P...> *>(ctx), std::index_sequence_for<P...>{});
}

// A pointer argument must point at device memory (or be NULL): a host
// pointer works by accident on the CPU but faults on a GPU.
template <typename A>
static inline cudaError_t cml_cpu_check_arg(const cml_cpu_launch_desc *d, int i, const A &a)
{
    if constexpr (std::is_pointer<A>::value) {
        if (a != nullptr && !cml_cpu_is_device_pointer((const void *)a))
            return cml_cpu_host_pointer_argument(d, i, (const void *)a);
    }
    (void)d, (void)i, (void)a;
    return cudaSuccess;
}

template <typename... P, size_t... I>
static inline cudaError_t cml_cpu_check_args(const cml_cpu_launch_desc *d, const cml_cpu_call<P...> &c,
                                             std::index_sequence<I...>)
{
    cudaError_t err = cudaSuccess;
    ((err = err == cudaSuccess ? cml_cpu_check_arg(d, (int)I, std::get<I>(c.args)) : err), ...);
    return err;
}

// What `K<<<cfg>>>(args)` becomes. The result is what cudaGetLastError()
// returns next (the runtime records it).
template <typename... P, typename... A>
static inline void cml_cpu_launch(void (*kernel)(P...), const char *name, const char *file, int line,
                                  cml_cpu_config cfg, A &&...args)
{
    static_assert(sizeof...(P) == sizeof...(A), "kernel launched with the wrong number of arguments");
    cml_cpu_call<P...> call{kernel, std::tuple<typename std::decay<P>::type...>(std::forward<A>(args)...)};
    cml_cpu_launch_desc d;
    d.kernel = name;
    d.file = file;
    d.line = line;
    d.grid = cfg.grid;
    d.block = cfg.block;
    d.dynamic_smem = cfg.smem;
    d.body = &cml_cpu_body<P...>;
    d.ctx = &call;
    d.fn = (const void *)kernel;
    if (cml_cpu_check_args(&d, call, std::index_sequence_for<P...>{}) != cudaSuccess)
        return;
    (void)cml_cpu_run_grid(&d);
}

#endif /* __cplusplus */

#endif
