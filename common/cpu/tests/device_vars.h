/* C launchers of device_vars.cu, for test_host_access.c: file-scope
 * __device__ and __constant__ variables, reached by kernels and the symbol
 * API, closed to host code. Each returns the last CUDA call's result. */
#ifndef CML_CPU_TEST_DEVICE_VARS_H
#define CML_CPU_TEST_DEVICE_VARS_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { DV_N = 1000, DV_WINDOW = 300, DV_PAIRS = 100 };

/* dv_data[i] = 2 * in[i] + coef[i % 7] (coef: a __constant__ array with
 * an initializer, coef[i] = dv_coef_host(i)) for i < n. */
cudaError_t dv_fill(const float *in, unsigned n, unsigned threads);
/* The first n elements of dv_data, by cudaMemcpyFromSymbol. */
cudaError_t dv_read_back(float *host, unsigned n);
float dv_coef_host(int i);
/* dv_window[first .. first + count) = host[0 .. count) by
 * cudaMemcpyToSymbol with an offset, then out[i] = 5 * dv_window[i] + 3
 * for i < n (out: device memory; the 3 from a const __device__ int). */
cudaError_t dv_window_upload(const int *host, unsigned count, unsigned first, int *out, unsigned n);
/* Two ints into the window's last element and past it: refused. */
cudaError_t dv_window_upload_past_the_end(const int *host);
/* out[0..6] = coef, out[7..9] = a namespace's initialised doubles
 * (0.5, -1.25, 2), out[10] = a static int (41), out[11] = a
 * __device__ __constant__ long long / 1e6 (-7000), out[12] = 1 when a
 * pointer variable without initializer is null. out: device memory. */
cudaError_t dv_initial(float *out);
/* Every thread of blocks x threads takes atomicInc(&dv_ticket): *host_last
 * is what the last taker wrote (the count), *host_count the variable. */
cudaError_t dv_tickets(unsigned blocks, unsigned threads, unsigned *host_last, unsigned *host_count);
/* Through cudaGetSymbolAddress of an array of {int a; float b;} structs:
 * b set from host_b by cudaMemcpyToSymbol at struct offsets, then a kernel
 * writes a = 37 i - 50, b = b / 2 + i through the address, a D2D cudaMemcpy
 * copies n structs to out (device memory), cudaMemset clears them. */
cudaError_t dv_pairs_by_address(const float *host_b, void *out, unsigned n);
/* The first n pairs' words (2 n floats) by cudaMemcpyFromSymbol. */
cudaError_t dv_pairs_read(float *host, unsigned n);
/* cudaMemcpy(dv_data, ...) as if the name were a device pointer. */
cudaError_t dv_memcpy_to_the_name(const float *host);
/* The array's name passed to a kernel as a pointer argument. */
cudaError_t dv_name_as_kernel_argument(void);

/* Host code touching a variable (after a "probe" line on stderr). */
enum {
    DV_READ_DATA,
    DV_WRITE_COEF,
    DV_READ_TICKET,
    DV_WRITE_ANON,
    DV_READ_NS,
    DV_READ_PAST_DATA,
    DV_READ_DEVICE_ADDRESS
};
void dv_host_touch(int which);

#ifdef __cplusplus
}
#endif

#endif
