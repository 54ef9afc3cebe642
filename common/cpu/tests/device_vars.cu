// File-scope __device__ and __constant__ variables for test_host_access.c,
// in the styles students write them (initializers, arrays of structs,
// static, namespaces, __device__ __constant__, atomics on a scalar,
// templates using them): kernels and the runtime's symbol copies reach
// them, host code that names them does not.
#include <cuda_runtime.h>

#include "device_vars.h"

#define DV_TAPS 7

__device__ float dv_data[DV_N];
__constant__ float dv_coef[DV_TAPS] = {0.5f, -1.25f, 3.0f, // first three
                                       7.75f, -2.5f,
                                       11.0f, 0.125f};
__device__ int dv_window[DV_WINDOW];
__device__ unsigned int dv_ticket;
static __device__ int dv_static_scalar = 41, *dv_unused_pointer;
namespace {
__device__ double dv_anon[3] = {0.5, -1.25, 2.0};
}
namespace dvns {
__device__ __constant__ long long dv_ns = -7000000000LL;
}
struct dv_pair {
    int a;
    float b;
};
__device__ dv_pair dv_pairs[DV_PAIRS];
// A const variable keeps its form (usable in constant expressions; host
// code cannot store into it): its value reaches kernels all the same.
__device__ const int dv_const_bias = 3;

// A __device__ function: the same qualifier, not a variable.
__device__ float dv_twice(float x) { return 2.0f * x; }

// -------------------------------------------------------------- kernels

__global__ void dv_fill_kernel(const float *in, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        dv_data[i] = dv_twice(in[i]) + dv_coef[i % DV_TAPS];
}

__global__ void dv_window_kernel(int *out, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = dv_window[i] * 5 + dv_const_bias;
}

template <typename T>
__global__ void dv_initial_kernel(T *out)
{
    unsigned i = threadIdx.x;
    if (i < DV_TAPS)
        out[i] = (T)dv_coef[i];
    else if (i < DV_TAPS + 3)
        out[i] = (T)dv_anon[i - DV_TAPS];
    else if (i == DV_TAPS + 3)
        out[i] = (T)dv_static_scalar;
    else if (i == DV_TAPS + 4)
        out[i] = (T)(dvns::dv_ns / 1000000LL);
    else if (i == DV_TAPS + 5)
        out[i] = (T)(dv_unused_pointer == nullptr);
}

__global__ void dv_ticket_kernel(unsigned *last)
{
    // every thread takes a ticket; the one that takes the last says so
    unsigned t = atomicInc(&dv_ticket, 0xffffffffu);
    if (t == gridDim.x * blockDim.x - 1)
        *last = t + 1;
}

__global__ void dv_pairs_kernel(dv_pair *p, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        p[i].a = (int)(i * 37u) - 50;
        p[i].b = dv_pairs[i].b * 0.5f + (float)i;
    }
}

// -------------------------------------------------------------- launchers

extern "C" cudaError_t dv_fill(const float *in, unsigned n, unsigned threads)
{
    dv_fill_kernel<<<(n + threads - 1) / threads, threads>>>(in, n);
    return cudaDeviceSynchronize();
}

extern "C" cudaError_t dv_read_back(float *host, unsigned n)
{
    return cudaMemcpyFromSymbol(host, dv_data, n * sizeof(float));
}

extern "C" float dv_coef_host(int i)
{
    static const float want[DV_TAPS] = {0.5f, -1.25f, 3.0f, 7.75f, -2.5f, 11.0f, 0.125f};
    return want[i];
}

extern "C" cudaError_t dv_window_upload(const int *host, unsigned count, unsigned first, int *out, unsigned n)
{
    cudaError_t err = cudaMemset(out, 0, n * sizeof(int));
    if (err == cudaSuccess)
        err = cudaMemcpyToSymbol(dv_window, host, count * sizeof(int), first * sizeof(int));
    if (err != cudaSuccess)
        return err;
    dv_window_kernel<<<(n + 31) / 32, 32>>>(out, n);
    return cudaDeviceSynchronize();
}

extern "C" cudaError_t dv_window_upload_past_the_end(const int *host)
{
    return cudaMemcpyToSymbol(dv_window, host, 2 * sizeof(int), (DV_WINDOW - 1) * sizeof(int));
}

extern "C" cudaError_t dv_initial(float *out)
{
    dv_initial_kernel<<<1, 32>>>(out);
    return cudaDeviceSynchronize();
}

extern "C" cudaError_t dv_tickets(unsigned blocks, unsigned threads, unsigned *host_last, unsigned *host_count)
{
    unsigned *last = NULL;
    cudaError_t err = cudaMalloc(&last, sizeof *last);
    if (err == cudaSuccess)
        err = cudaMemset(last, 0, sizeof *last);
    if (err != cudaSuccess)
        return err;
    dv_ticket_kernel<<<blocks, threads>>>(last);
    err = cudaDeviceSynchronize();
    if (err == cudaSuccess)
        err = cudaMemcpy(host_last, last, sizeof *last, cudaMemcpyDeviceToHost);
    if (err == cudaSuccess)
        err = cudaMemcpyFromSymbol(host_count, dv_ticket, sizeof dv_ticket);
    cudaFree(last);
    return err;
}

// The pairs through their device address: a kernel writes them, a
// device-to-device cudaMemcpy copies them out, cudaMemset clears them.
extern "C" cudaError_t dv_pairs_by_address(const float *host_b, void *out, unsigned n)
{
    dv_pair *p = NULL;
    size_t bytes = 0;
    cudaError_t err = cudaGetSymbolAddress((void **)&p, dv_pairs);
    if (err == cudaSuccess)
        err = cudaGetSymbolSize(&bytes, dv_pairs);
    if (err != cudaSuccess)
        return err;
    if (bytes != sizeof(dv_pair) * DV_PAIRS || (void *)p == (void *)dv_pairs)
        return cudaErrorInvalidSymbol; // the device address is a view of its own
    for (unsigned i = 0; i < n && err == cudaSuccess; ++i)
        err = cudaMemcpyToSymbol(dv_pairs, &host_b[i], sizeof(float), i * sizeof(dv_pair) + offsetof(dv_pair, b));
    if (err != cudaSuccess)
        return err;
    dv_pairs_kernel<<<(n + 63) / 64, 64>>>(p, n);
    err = cudaDeviceSynchronize();
    if (err == cudaSuccess)
        err = cudaMemcpy(out, p, n * sizeof(dv_pair), cudaMemcpyDeviceToDevice);
    if (err == cudaSuccess)
        err = cudaMemset(p, 0, n * sizeof(dv_pair));
    return err;
}

extern "C" cudaError_t dv_pairs_read(float *host, unsigned n)
{
    return cudaMemcpyFromSymbol(host, dv_pairs, n * sizeof(dv_pair));
}

extern "C" void *dv_device_address(void)
{
    void *p = NULL;
    return cudaGetSymbolAddress(&p, dv_data) == cudaSuccess ? p : NULL;
}

// What a GPU refuses: cudaMemcpy to the variable's name (lab 02's catalogued
// mistake) and the name passed to a kernel as a pointer.
extern "C" cudaError_t dv_memcpy_to_the_name(const float *host)
{
    return cudaMemcpy(dv_data, host, sizeof(float), cudaMemcpyHostToDevice);
}

extern "C" cudaError_t dv_name_as_kernel_argument(void)
{
    dv_pairs_kernel<<<1, 32>>>(dv_pairs, 1);
    return cudaDeviceSynchronize();
}

// Host code naming the variables: each says what it touches (the address,
// the variable's size and start) on stderr, then touches it.
extern "C" void dv_host_touch(int which)
{
    volatile char *p = NULL;
    const void *base = NULL;
    size_t bytes = 0;
    int write = 0;
    switch (which) {
    case DV_READ_DATA: p = (volatile char *)&dv_data[17]; base = dv_data; bytes = sizeof dv_data; break;
    case DV_WRITE_COEF: p = (volatile char *)&dv_coef[3]; base = dv_coef; bytes = sizeof dv_coef; write = 1; break;
    case DV_READ_TICKET: p = (volatile char *)&dv_ticket; base = &dv_ticket; bytes = sizeof dv_ticket; break;
    case DV_WRITE_ANON: p = (volatile char *)&dv_anon[2]; base = dv_anon; bytes = sizeof dv_anon; write = 1; break;
    case DV_READ_NS: p = (volatile char *)&dvns::dv_ns; base = &dvns::dv_ns; bytes = sizeof dvns::dv_ns; break;
    case DV_READ_PAST_DATA: p = (volatile char *)dv_data + sizeof dv_data + 8; base = dv_data; bytes = sizeof dv_data; break;
    case DV_READ_DEVICE_ADDRESS:
        base = dv_device_address();
        p = (volatile char *)base + 4 * 20;
        bytes = sizeof dv_data;
        break;
    }
    fprintf(stderr, "probe %s %p in %zu at %p\n", write ? "write" : "read", (void *)p, bytes, base);
    if (write)
        *p = 0x5a;
    else
        (void)*p;
}
