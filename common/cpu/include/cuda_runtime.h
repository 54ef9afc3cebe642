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
// Memory the host can read: in a section of its own, so that the grader's object
// checks see it (grader/cmlgrade/objcheck.py refuses it in student code).
#define __managed__ __attribute__((section(".cml_cpu_managed"), used))
// A file-scope __device__ or __constant__ variable, as `labtool
// cpu-translate` rewrites `__device__ T NAME DIMS = INIT;`:
//     static cml_cpu_symbol<T DIMS> cml_cpu_sym_NAME = {INIT}; CML_CPU_SYMBOL(NAME, "__device__ T NAME DIMS");
// The holder takes whole pages of its own (its alignment makes its size a
// multiple of a page), so the runtime can close them to host code without
// closing anything else (cml_cpu_symbol_entry, cml_cpu.h); NAME is a
// reference to the variable in it, bound at compile time (no code runs at
// load time, and kernels reach the variable as directly as before).
template <typename T>
struct alignas(4096) cml_cpu_symbol {
    T v;
};
#define CML_CPU_SYMBOL(name, decl)                                                                  \
    static auto &name __attribute__((unused)) = cml_cpu_sym_##name.v;                               \
    static cml_cpu_symbol_entry cml_cpu_symtab_##name __attribute__((section("cml_cpu_symtab"), used)) = \
        {&cml_cpu_sym_##name, sizeof cml_cpu_sym_##name, sizeof cml_cpu_sym_##name.v, decl}

// Static shared memory: one OS thread runs one block at a time (all of its
// CUDA threads as fibers), so a thread-local static is per block for free.
#define __shared__ static thread_local

// A static __shared__ array inside a function, as `labtool cpu-translate`
// rewrites it (`static thread_local auto &a = cml_cpu_static_shared_ref<T[N],
// align>("T a[N]")`): bounds-checked storage from the runtime, one copy per
// worker like the thread_local above. Scalars and arrays at file scope
// keep the macro.
template <typename T, size_t Align>
static inline T &cml_cpu_static_shared_ref(const char *decl)
{
    return *static_cast<T *>(cml_cpu_static_shared(sizeof(T), Align > alignof(T) ? Align : alignof(T), decl));
}

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

// Any trivially copyable type (cooperative groups shuffle structs): one
// warp operation per 8 bytes, each under the same mask.
template <typename T>
CML_CPU_AI T cml_cpu_shfl(unsigned mask, T v, int src)
{
    static_assert(std::is_trivially_copyable<T>::value, "a shuffled type must be trivially copyable");
    uint64_t bits[(sizeof(T) + 7) / 8] = {};
    memcpy(bits, &v, sizeof v);
    for (uint64_t &b : bits)
        b = cml_cpu_warp_op(CML_CPU_SHFL, mask, b, src);
    T r = v;
    memcpy(&r, bits, sizeof r);
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
// sm_70+ match and sm_80+ warp reductions: from shuffles of every lane of
// the mask (slow, and exact: integer operations).
template <typename T>
CML_CPU_AI unsigned __match_any_sync(unsigned mask, T v)
{
    unsigned same = 0;
    for (unsigned m = mask; m; m &= m - 1) {
        int l = __builtin_ctz(m);
        same |= (cml_cpu_shfl(mask, v, l) == v) ? 1u << l : 0u;
    }
    return same;
}
template <typename T>
CML_CPU_AI unsigned __match_all_sync(unsigned mask, T v, int *pred)
{
    unsigned same = __match_any_sync(mask, v);
    *pred = same == (mask & cml_cpu_active_mask());
    return *pred ? same : 0u;
}
template <typename T, typename Op>
CML_CPU_AI T cml_cpu_reduce_sync(unsigned mask, T v, Op op)
{
    T acc{};
    int first = 1;
    for (unsigned m = mask & cml_cpu_active_mask(); m; m &= m - 1) {
        T x = cml_cpu_shfl(mask, v, __builtin_ctz(m));
        acc = first ? x : op(acc, x);
        first = 0;
    }
    return acc;
}
#define CML_CPU_REDUCE_SYNC(name, expr)                                                        \
    CML_CPU_AI unsigned name(unsigned mask, unsigned v)                                      \
    {                                                                                        \
        return cml_cpu_reduce_sync(mask, v, [](unsigned a, unsigned b) { return expr; });    \
    }                                                                                        \
    CML_CPU_AI int name(unsigned mask, int v)                                                \
    {                                                                                        \
        return cml_cpu_reduce_sync(mask, v, [](int a, int b) { return expr; });              \
    }
CML_CPU_REDUCE_SYNC(__reduce_add_sync, a + b)
CML_CPU_REDUCE_SYNC(__reduce_min_sync, a < b ? a : b)
CML_CPU_REDUCE_SYNC(__reduce_max_sync, a > b ? a : b)
CML_CPU_AI unsigned __reduce_and_sync(unsigned mask, unsigned v)
{
    return cml_cpu_reduce_sync(mask, v, [](unsigned a, unsigned b) { return a & b; });
}
CML_CPU_AI unsigned __reduce_or_sync(unsigned mask, unsigned v)
{
    return cml_cpu_reduce_sync(mask, v, [](unsigned a, unsigned b) { return a | b; });
}
CML_CPU_AI unsigned __reduce_xor_sync(unsigned mask, unsigned v)
{
    return cml_cpu_reduce_sync(mask, v, [](unsigned a, unsigned b) { return a ^ b; });
}
static inline unsigned __lanemask_lt(void) { return (1u << cml_cpu_lane()) - 1u; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline unsigned long long __brevll(unsigned long long x)
{
    unsigned long long r = 0;
    for (int i = 0; i < 64; ++i, x >>= 1)
        r = (r << 1) | (x & 1u);
    return r;
}
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
static inline double atomicExch(double *p, double v)
{
    double old;
    __atomic_exchange(p, &v, &old, __ATOMIC_SEQ_CST);
    return old;
}
// atomicCAS on 16-bit words (sm_70+).
static inline unsigned short atomicCAS(unsigned short *p, unsigned short cmp, unsigned short v)
{
    __atomic_compare_exchange_n(p, &cmp, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return cmp;
}
// sm_90's vector atomicAdd: each component atomically (as on a GPU, the
// vector is not one atomic unit).
static inline float2 atomicAdd(float2 *p, float2 v)
{
    return make_float2(atomicAdd(&p->x, v.x), atomicAdd(&p->y, v.y));
}
static inline float4 atomicAdd(float4 *p, float4 v)
{
    return make_float4(atomicAdd(&p->x, v.x), atomicAdd(&p->y, v.y), atomicAdd(&p->z, v.z), atomicAdd(&p->w, v.w));
}
static inline unsigned atomicDec(unsigned *p, unsigned limit)
{
    unsigned old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (!__atomic_compare_exchange_n(p, &old, old == 0 || old > limit ? limit : old - 1u, true,
                                        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        ;
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

// The scoped variants (atomicAdd_block, atomicCAS_system, ...): one
// process, one memory, so every scope is the same atomic.
#define CML_CPU_ATOMIC_SCOPED(op)                                                            \
    template <typename... A>                                                                 \
    CML_CPU_AI auto op##_block(A... a) -> decltype(op(a...)) { return op(a...); }            \
    template <typename... A>                                                                 \
    CML_CPU_AI auto op##_system(A... a) -> decltype(op(a...)) { return op(a...); }
CML_CPU_ATOMIC_SCOPED(atomicAdd)
CML_CPU_ATOMIC_SCOPED(atomicSub)
CML_CPU_ATOMIC_SCOPED(atomicExch)
CML_CPU_ATOMIC_SCOPED(atomicMin)
CML_CPU_ATOMIC_SCOPED(atomicMax)
CML_CPU_ATOMIC_SCOPED(atomicInc)
CML_CPU_ATOMIC_SCOPED(atomicDec)
CML_CPU_ATOMIC_SCOPED(atomicCAS)
CML_CPU_ATOMIC_SCOPED(atomicAnd)
CML_CPU_ATOMIC_SCOPED(atomicOr)
CML_CPU_ATOMIC_SCOPED(atomicXor)

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
// The symbol API on a variable (CUDA's C++ overloads): the size checked
// here, the copy by the C functions (cuda_runtime_api.h), which find the
// variable's device memory from its address.
template <typename T>
static inline cudaError_t cudaMemcpyToSymbol(const T &symbol, const void *src, size_t bytes, size_t offset = 0,
                                             cudaMemcpyKind kind = cudaMemcpyHostToDevice)
{
    if (offset > sizeof symbol || bytes > sizeof symbol - offset)
        return cudaErrorInvalidValue;
    return cudaMemcpyToSymbol((const void *)&symbol, src, bytes, offset, kind);
}
template <typename T>
static inline cudaError_t cudaMemcpyFromSymbol(void *dst, const T &symbol, size_t bytes, size_t offset = 0,
                                               cudaMemcpyKind kind = cudaMemcpyDeviceToHost)
{
    if (offset > sizeof symbol || bytes > sizeof symbol - offset)
        return cudaErrorInvalidValue;
    return cudaMemcpyFromSymbol(dst, (const void *)&symbol, bytes, offset, kind);
}
template <typename T>
static inline cudaError_t cudaMemcpyToSymbolAsync(const T &symbol, const void *src, size_t bytes, size_t offset = 0,
                                                  cudaMemcpyKind kind = cudaMemcpyHostToDevice,
                                                  cudaStream_t stream = 0)
{
    (void)stream;
    return cudaMemcpyToSymbol(symbol, src, bytes, offset, kind);
}
template <typename T>
static inline cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const T &symbol, size_t bytes, size_t offset = 0,
                                                    cudaMemcpyKind kind = cudaMemcpyDeviceToHost,
                                                    cudaStream_t stream = 0)
{
    (void)stream;
    return cudaMemcpyFromSymbol(dst, symbol, bytes, offset, kind);
}
template <typename P, typename T>
static inline cudaError_t cudaGetSymbolAddress(P **dev_ptr, const T &symbol)
{
    *dev_ptr = (P *)cml_cpu_symbol_address((const void *)&symbol, sizeof symbol);
    return cudaSuccess;
}
template <typename T>
static inline cudaError_t cudaGetSymbolSize(size_t *bytes, const T &symbol)
{
    *bytes = sizeof symbol;
    return cudaSuccess;
}
template <typename K>
static inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, K kernel, int block_size,
                                                                        size_t smem)
{
    (void)kernel;
    return cml_cpu_occupancy(blocks, block_size, smem);
}
// The block size with the most threads resident per multiprocessor, and
// the grid that fills the device with it: on the CPU path a worker (a
// "multiprocessor") runs one block at a time, so the largest block allowed
// and one block per worker.
template <typename K>
static inline cudaError_t cudaOccupancyMaxPotentialBlockSize(int *min_grid, int *block_size, K kernel,
                                                             size_t smem = 0, int block_size_limit = 0)
{
    (void)kernel;
    int limit = block_size_limit > 0 && block_size_limit < 1024 ? block_size_limit : 1024, per_sm = 0, sms = 0;
    cudaError_t err = cml_cpu_occupancy(&per_sm, limit, smem);
    if (err == cudaSuccess)
        err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    if (err != cudaSuccess)
        return err;
    *block_size = limit;
    *min_grid = per_sm * sms;
    return cudaSuccess;
}
// A kernel's resources: numRegs 0 means "not known on the CPU path"
// (cuda_runtime_api.h).
template <typename K>
static inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *attr, K kernel)
{
    return cudaFuncGetAttributes(attr, (const void *)kernel);
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

// A kernel the launch names: `pick(0)` gives its address where the name
// alone resolves to one function (k, k<256>, a function pointer), `call`
// calls it with the launch's arguments. A template whose arguments are
// deduced from the call (`map<<<g, b>>>(op, x, n)`), an overload set or a
// kernel with default arguments has no address without the call: the
// launch then goes through `call`, as nvcc's would through the call.
template <typename T, typename... P>
constexpr auto cml_cpu_kernel_address(void (*k)(P...)) { return k; }
template <typename Pick, typename Call>
struct cml_cpu_kernel_ref {
    Pick pick;
    Call call;
};
template <typename Pick, typename Call>
static inline cml_cpu_kernel_ref<Pick, Call> cml_cpu_kernel_of(Pick pick, Call call) { return {pick, call}; }
// What `labtool cpu-translate` writes for the kernel K of a launch. The
// uses of K are dependent (on the lambda's auto parameter), so a K without
// an address is a substitution failure, not an error.
#define CML_CPU_KERNEL(...)                                                                              \
    cml_cpu_kernel_of(                                                                                   \
        [&](auto cml_cpu_t) -> decltype(cml_cpu_kernel_address<decltype(cml_cpu_t)>(__VA_ARGS__)) {      \
            return cml_cpu_kernel_address<decltype(cml_cpu_t)>(__VA_ARGS__);                             \
        },                                                                                               \
        [&](auto &...cml_cpu_a) -> decltype(__VA_ARGS__(cml_cpu_a...)) { __VA_ARGS__(cml_cpu_a...); })

template <typename Call, typename... D>
struct cml_cpu_deduced_call {
    Call *call;
    std::tuple<D...> args;
};
template <typename Call, typename... D>
static void cml_cpu_deduced_body(void *ctx)
{
    auto *c = static_cast<cml_cpu_deduced_call<Call, D...> *>(ctx);
    std::tuple<D...> mine = c->args; // parameters are per-thread variables
    std::apply(*c->call, mine);
}

// The parameter count of the kernel `pick` gives, -1 without an address.
template <typename F>
struct cml_cpu_arity : std::integral_constant<int, -1> {};
template <typename... P>
struct cml_cpu_arity<void (*)(P...)> : std::integral_constant<int, (int)sizeof...(P)> {};
template <typename Pick>
constexpr int cml_cpu_pick_arity()
{
    if constexpr (std::is_invocable<Pick &, int>::value)
        return cml_cpu_arity<std::invoke_result_t<Pick &, int>>::value;
    else
        return -1;
}

template <typename Pick, typename Call, typename... A>
static inline void cml_cpu_launch(cml_cpu_kernel_ref<Pick, Call> k, const char *name, const char *file, int line,
                                  cml_cpu_config cfg, A &&...args)
{
    if constexpr (cml_cpu_pick_arity<Pick>() == (int)sizeof...(A)) {
        cml_cpu_launch(k.pick(0), name, file, line, cfg, std::forward<A>(args)...);
    } else {
        // Every thread calls K with its own copies of the arguments (as
        // passed, decayed); the call converts them as the kernel's
        // parameters ask.
        static_assert(std::is_invocable<Call &, typename std::decay<A>::type &...>::value,
                      "no kernel of this name takes these arguments");
        cml_cpu_deduced_call<Call, typename std::decay<A>::type...> call{&k.call, {std::forward<A>(args)...}};
        cml_cpu_launch_desc d;
        d.kernel = name;
        d.file = file;
        d.line = line;
        d.grid = cfg.grid;
        d.block = cfg.block;
        d.dynamic_smem = cfg.smem;
        d.body = &cml_cpu_deduced_body<Call, typename std::decay<A>::type...>;
        d.ctx = &call;
        d.fn = nullptr; // reports name the kernel as the launch wrote it
        cudaError_t err = cudaSuccess;
        std::apply([&](auto &...a) {
            int i = 0;
            ((err = err == cudaSuccess ? cml_cpu_check_arg(&d, i, a) : err, ++i), ...);
        }, call.args);
        if (err != cudaSuccess)
            return;
        (void)cml_cpu_run_grid(&d);
    }
}

#endif /* __cplusplus */

#endif
