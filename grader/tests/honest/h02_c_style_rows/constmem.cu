/* Lab 02, C style: one kernel per step with its own name; every read of
 * the walk takes its sign as it comes (a negated x in step 1, a negated
 * entry in steps 2-5). The convolution
 * kernels compute 4 output rows per thread (64 x 16 pixel tiles, 64 x 4
 * threads); step 7 first copies the filter from global memory into shared
 * memory. The grid's height is capped at the device's limit (asked with
 * cudaDeviceGetAttribute) and blocks loop down a taller image. */
#include "constmem.h"

#include <cuda_runtime.h>
#include <stddef.h>

__constant__ float g_coef[CONSTMEM_TABLE_ENTRIES];
__constant__ float g_big[CONSTMEM_BIG_ENTRIES];
__constant__ float g_filter[CONSTMEM_MAX_TAPS];

#define THREADS 256
#define TX 64
#define TY 4
#define ROWS 4
#define BAND (TY * ROWS)

typedef struct { float w[CONSTMEM_MAX_TAPS]; } filter_by_value;

static __device__ int walk_start(int t, int p, int mask)
{
    return ((t / 32) * CONSTMEM_WARP_STEP + p * CONSTMEM_PASS_STEP) & mask;
}

/* read k's sign (constmem.h): bit k of signs set, subtracted */
#define SIGNED(signs, k, v) (((signs) >> (k)) & 1u ? -(v) : (v))

__global__ void step1_broadcast(float *out, int threads, int passes, unsigned signs)
{
    int t = blockIdx.x * THREADS + threadIdx.x;
    if (t >= threads)
        return;
    float s = 0.0f;
    int p0 = 0;
    for (; p0 + 32 <= passes; p0 += 32) {
#pragma unroll
        for (int q = 0; q < 32; q++) {
            float x = (float)((t + p0 + q) % 3 - 1);
#pragma unroll
            for (int k = 0; k < 32; k++)
                s += g_coef[32 * q + k] * SIGNED(signs, k, x);
        }
    }
#pragma unroll
    for (int q = 0; q < 32; q++) {
        if (p0 + q < passes) {
            float x = (float)((t + p0 + q) % 3 - 1);
#pragma unroll
            for (int k = 0; k < 32; k++)
                s += g_coef[32 * q + k] * SIGNED(signs, k, x);
        }
    }
    out[t] = s;
}

__global__ void step2_distinct(float *out, int threads, int passes, int d, unsigned signs)
{
    int t = blockIdx.x * THREADS + threadIdx.x;
    if (t >= threads)
        return;
    float s = 0.0f;
    for (int p = 0; p < passes; p++) {
        int b = walk_start(t, p, CONSTMEM_SMALL_MASK) + (t % 32) % d;
        for (int k = 0; k < CONSTMEM_PASS_READS; k++)
            s += SIGNED(signs, k, g_coef[b + k]);
    }
    out[t] = s;
}

__global__ void step3_ldg(const float *__restrict__ table, float *out, int threads, int passes, int d, int stride,
                          int mask, unsigned signs)
{
    int t = blockIdx.x * THREADS + threadIdx.x;
    if (t >= threads)
        return;
    float s = 0.0f;
    for (int p = 0; p < passes; p++) {
        int b = walk_start(t, p, mask) + (t % 32) % d;
        for (int k = 0; k < CONSTMEM_PASS_READS; k++)
            s += SIGNED(signs, k, __ldg(&table[b + k * stride]));
    }
    out[t] = s;
}

__global__ void step4_plain(const float *table, float *out, int threads, int passes, int d, int stride, int mask,
                            unsigned signs)
{
    int t = blockIdx.x * THREADS + threadIdx.x;
    if (t >= threads)
        return;
    float s = 0.0f;
    for (int p = 0; p < passes; p++) {
        int b = walk_start(t, p, mask) + (t % 32) % d;
        for (int k = 0; k < CONSTMEM_PASS_READS; k++)
            s += SIGNED(signs, k, table[b + k * stride]);
    }
    out[t] = s;
}

__global__ void step5_big(float *out, int threads, int passes, unsigned signs)
{
    int t = blockIdx.x * THREADS + threadIdx.x;
    if (t >= threads)
        return;
    float s = 0.0f;
    for (int p = 0; p < passes; p++) {
        int b = walk_start(t, p, CONSTMEM_BIG_MASK);
#pragma unroll 8
        for (int k = 0; k < CONSTMEM_PASS_READS; k++)
            s += SIGNED(signs, k, g_big[b + k * CONSTMEM_BIG_STRIDE]);
    }
    out[t] = s;
}

/* The three convolutions share this body; `W(i)` reads tap i. */
#define CONV_BODY(W)                                                                                   \
    const int n = 2 * r + 1, sw = TX + 2 * r, sh = BAND + 2 * r;                                       \
    const int tid = threadIdx.y * TX + threadIdx.x;                                                    \
    const int x0 = blockIdx.x * TX;                                                                    \
    for (long long band = blockIdx.y; band * BAND < height; band += gridDim.y) {                       \
        long long y0 = band * BAND;                                                                    \
        for (int k = tid; k < sw * sh; k += TX * TY) {                                                 \
            long long gy = y0 - r + k / sw;                                                            \
            int gx = x0 - r + k % sw;                                                                  \
            img[k] = (gx >= 0 && gx < width && gy >= 0 && gy < height) ? in[gy * width + gx] : 0.0f;   \
        }                                                                                              \
        __syncthreads();                                                                               \
        for (int o = 0; o < ROWS; o++) {                                                               \
            int ly = threadIdx.y * ROWS + o;                                                           \
            long long y = y0 + ly;                                                                     \
            int x = x0 + threadIdx.x;                                                                  \
            if (x < width && y < height) {                                                             \
                float acc = 0.0f;                                                                      \
                for (int i = 0; i < n; i++)                                                            \
                    for (int j = 0; j < n; j++)                                                        \
                        acc += W(i * n + j) * img[(ly + i) * sw + threadIdx.x + j];                    \
                out[y * width + x] = acc;                                                              \
            }                                                                                          \
        }                                                                                              \
        __syncthreads();                                                                               \
    }

#define IMG_FLOATS ((TX + 2 * CONSTMEM_MAX_RADIUS) * (BAND + 2 * CONSTMEM_MAX_RADIUS))

__global__ void conv6_constant(const float *in, float *out, int width, int height, int r)
{
    __shared__ float img[IMG_FLOATS];
#define TAP_CONST(i) g_filter[i]
    CONV_BODY(TAP_CONST)
}

__global__ void conv7_global(const float *in, float *out, int width, int height, int r, const float *w)
{
    __shared__ float img[IMG_FLOATS];
    __shared__ float taps[CONSTMEM_MAX_TAPS];
    int tid0 = threadIdx.y * TX + threadIdx.x;
    if (tid0 < (2 * r + 1) * (2 * r + 1))
        taps[tid0] = w[tid0];
    __syncthreads();
#define TAP_SHARED(i) taps[i]
    CONV_BODY(TAP_SHARED)
}

__global__ void conv8_param(const float *in, float *out, int width, int height, int r, filter_by_value f)
{
    __shared__ float img[IMG_FLOATS];
#define TAP_PARAM(i) f.w[i]
    CONV_BODY(TAP_PARAM)
}

static int lookup_job_ok(const constmem_lookup_job *j)
{
    return j && j->threads >= 1 && j->threads <= CONSTMEM_MAX_THREADS && j->passes >= 1 &&
           j->passes <= CONSTMEM_MAX_PASSES && j->d >= 1 && j->d <= 32 && !(j->d & (j->d - 1)) &&
           (j->big == 0 || j->big == 1);
}

cudaError_t constmem_upload_tables(const float *table, const float *big)
{
    cudaError_t e = cudaMemcpyToSymbol(g_coef, table, CONSTMEM_TABLE_ENTRIES * sizeof(float));
    return e != cudaSuccess ? e : cudaMemcpyToSymbol(g_big, big, CONSTMEM_BIG_ENTRIES * sizeof(float));
}

cudaError_t constmem_upload_filter(const float *w, int radius)
{
    if (radius < 1 || radius > CONSTMEM_MAX_RADIUS)
        return cudaErrorInvalidValue;
    return cudaMemcpyToSymbol(g_filter, w, sizeof(float) * (2 * radius + 1) * (2 * radius + 1));
}

cudaError_t constmem_lookup(int step, const constmem_lookup_job *j)
{
    if (!lookup_job_ok(j))
        return cudaErrorInvalidValue;
    int blocks = (j->threads + THREADS - 1) / THREADS;
    int stride = j->big ? CONSTMEM_BIG_STRIDE : 1, mask = j->big ? CONSTMEM_BIG_MASK : CONSTMEM_SMALL_MASK;
    switch (step) {
    case 1:
        if (j->d != 1 || j->big)
            return cudaErrorInvalidValue;
        step1_broadcast<<<blocks, THREADS>>>(j->out, j->threads, j->passes, j->signs);
        break;
    case 2:
        if (j->big)
            return cudaErrorInvalidValue;
        step2_distinct<<<blocks, THREADS>>>(j->out, j->threads, j->passes, j->d, j->signs);
        break;
    case 3:
        step3_ldg<<<blocks, THREADS>>>(j->table, j->out, j->threads, j->passes, j->d, stride, mask, j->signs);
        break;
    case 4:
        step4_plain<<<blocks, THREADS>>>(j->table, j->out, j->threads, j->passes, j->d, stride, mask, j->signs);
        break;
    case 5:
        if (j->d != 1 || !j->big)
            return cudaErrorInvalidValue;
        step5_big<<<blocks, THREADS>>>(j->out, j->threads, j->passes, j->signs);
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

cudaError_t constmem_conv(int step, const constmem_conv_job *job)
{
    static int max_grid_y;
    if (!job || job->width < 1 || job->height < 1 || (long long)job->width * job->height >= (1LL << 31) ||
        job->height > 4194240 || job->radius < 1 || job->radius > CONSTMEM_MAX_RADIUS)
        return cudaErrorInvalidValue;
    if (max_grid_y == 0) {
        int dev = 0;
        if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&max_grid_y, cudaDevAttrMaxGridDimY, dev) !=
                                                      cudaSuccess || max_grid_y < 1)
            max_grid_y = 65535;
    }
    long long bands = (job->height + BAND - 1) / BAND;
    dim3 grid((job->width + TX - 1) / TX, (unsigned)(bands < max_grid_y ? bands : max_grid_y)), block(TX, TY);
    switch (step) {
    case 6:
        conv6_constant<<<grid, block>>>(job->in, job->out, job->width, job->height, job->radius);
        break;
    case 7:
        conv7_global<<<grid, block>>>(job->in, job->out, job->width, job->height, job->radius, job->w_dev);
        break;
    case 8: {
        filter_by_value f;
        int taps = (2 * job->radius + 1) * (2 * job->radius + 1);
        for (int i = 0; i < CONSTMEM_MAX_TAPS; i++)
            f.w[i] = i < taps ? job->w[i] : 0.0f;
        conv8_param<<<grid, block>>>(job->in, job->out, job->width, job->height, job->radius, f);
        break;
    }
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
