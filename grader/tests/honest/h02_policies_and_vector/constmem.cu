// Lab 02 with policy classes. Steps 2-5 are one kernel, walk<Source>,
// whose Source says where entry i comes from (the small or big __constant__
// table, __ldg or a plain load from the global copy) and the walk's stride
// and mask. The convolution is convolve<Filter, R> (filter type first),
// over 32 x 16 tiles, blocks looping down the image when it is taller
// than the grid. The filter upload goes through a std::vector. The walk's
// signs become a +1/-1 factor per read, made once per thread.
#include "constmem.h"

#include <cuda_runtime.h>
#include <vector>

__constant__ float small_table[CONSTMEM_TABLE_ENTRIES];
__constant__ float big_table[CONSTMEM_BIG_ENTRIES];
__constant__ float taps_const[CONSTMEM_MAX_TAPS];

namespace {

constexpr int kBlock = 128;

// +1 or -1 for read k (constmem.h: -1 where bit k of signs is set)
struct SignFactors {
    float f[CONSTMEM_PASS_READS];
    __device__ explicit SignFactors(unsigned signs)
    {
#pragma unroll
        for (int k = 0; k < CONSTMEM_PASS_READS; ++k)
            f[k] = 1.0f - 2.0f * (float)((signs >> k) & 1u);
    }
};

struct FromSmallConstant {
    static constexpr int stride = 1, mask = CONSTMEM_SMALL_MASK;
    __device__ float operator()(int i) const { return small_table[i]; }
};
struct FromBigConstant {
    static constexpr int stride = CONSTMEM_BIG_STRIDE, mask = CONSTMEM_BIG_MASK;
    __device__ float operator()(int i) const { return big_table[i]; }
};
template <int STRIDE, int MASK>
struct ThroughLdg {
    static constexpr int stride = STRIDE, mask = MASK;
    const float *__restrict__ table;
    __device__ float operator()(int i) const { return __ldg(table + i); }
};
template <int STRIDE, int MASK>
struct PlainLoad {
    static constexpr int stride = STRIDE, mask = MASK;
    const float *table;
    __device__ float operator()(int i) const { return table[i]; }
};

__global__ void coefficients(float *out, int threads, int passes, unsigned signs)
{
    const int t = blockIdx.x * kBlock + threadIdx.x;
    if (t >= threads)
        return;
    const SignFactors sign(signs);
    float acc = 0.0f;
    for (int base = 0; base < passes; base += 32) {
#pragma unroll
        for (int q = 0; q < 32; ++q) {
            if (base + q >= passes)
                break;
            const float x = (float)((t + base + q) % 3 - 1);
#pragma unroll
            for (int k = 0; k < CONSTMEM_PASS_READS; ++k)
                acc += small_table[q * 32 + k] * x * sign.f[k];
        }
    }
    out[t] = acc;
}

template <class Source>
__global__ void walk(Source src, float *out, int threads, int passes, int d, unsigned signs)
{
    const int t = blockIdx.x * kBlock + threadIdx.x;
    if (t >= threads)
        return;
    const SignFactors sign(signs);
    const int warp = t >> 5, spread = (t & 31) & (d - 1);
    float acc = 0.0f;
    for (int p = 0; p < passes; ++p) {
        const int start = ((warp * CONSTMEM_WARP_STEP + p * CONSTMEM_PASS_STEP) & Source::mask) + spread;
#pragma unroll
        for (int k = 0; k < CONSTMEM_PASS_READS; ++k)
            acc += sign.f[k] * src(start + k * Source::stride);
    }
    out[t] = acc;
}

struct ConstantTaps {
    __device__ float operator()(int i) const { return taps_const[i]; }
};
struct GlobalTaps {
    const float *w;
    __device__ float operator()(int i) const { return w[i]; }
};
struct ValueTaps {
    float w[CONSTMEM_MAX_TAPS];
    __device__ float operator()(int i) const { return w[i]; }
};

constexpr int kTileX = 32, kTileY = 16;

template <class Filter, int R>
__global__ void convolve(const float *__restrict__ in, float *__restrict__ out, int width, int height, Filter f)
{
    constexpr int SX = kTileX + 2 * R, SY = kTileY + 2 * R, N = 2 * R + 1;
    __shared__ float patch[SY][SX];
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * kTileX + tx;
    const int x0 = blockIdx.x * kTileX;
    for (long long band = blockIdx.y; band * kTileY < height; band += gridDim.y) {
        const long long y0 = band * kTileY;
        for (int k = tid; k < SX * SY; k += kTileX * kTileY) {
            const long long gy = y0 - R + k / SX;
            const int gx = x0 - R + k % SX;
            patch[k / SX][k % SX] = (gx >= 0 && gx < width && gy >= 0 && gy < height) ? in[gy * width + gx] : 0.0f;
        }
        __syncthreads();
        const int x = x0 + tx;
        const long long y = y0 + ty;
        if (x < width && y < height) {
            float acc = 0.0f;
#pragma unroll
            for (int i = 0; i < N; ++i)
#pragma unroll
                for (int j = 0; j < N; ++j)
                    acc += f(i * N + j) * patch[ty + i][tx + j];
            out[y * width + x] = acc;
        }
        __syncthreads();   // the next band reuses the patch
    }
}

template <class Filter>
cudaError_t launch_conv(const constmem_conv_job *job, Filter f)
{
    unsigned bands = (unsigned)((job->height + kTileY - 1) / kTileY);
    dim3 grid((job->width + kTileX - 1) / kTileX, bands < 65535u ? bands : 65535u), block(kTileX, kTileY);
    switch (job->radius) {
    case 1: convolve<Filter, 1><<<grid, block>>>(job->in, job->out, job->width, job->height, f); break;
    case 2: convolve<Filter, 2><<<grid, block>>>(job->in, job->out, job->width, job->height, f); break;
    case 3: convolve<Filter, 3><<<grid, block>>>(job->in, job->out, job->width, job->height, f); break;
    case 4: convolve<Filter, 4><<<grid, block>>>(job->in, job->out, job->width, job->height, f); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

template <class Source>
cudaError_t launch_walk(Source src, const constmem_lookup_job *j)
{
    walk<Source><<<(j->threads + kBlock - 1) / kBlock, kBlock>>>(src, j->out, j->threads, j->passes, j->d,
                                                                 j->signs);
    return cudaGetLastError();
}

}  // namespace

extern "C" cudaError_t constmem_upload_tables(const float *table, const float *big)
{
    cudaError_t e = cudaMemcpyToSymbol(small_table, table, sizeof small_table);
    if (e == cudaSuccess)
        e = cudaMemcpyToSymbol(big_table, big, sizeof big_table);
    return e;
}

extern "C" cudaError_t constmem_upload_filter(const float *w, int radius)
{
    if (radius < 1 || radius > CONSTMEM_MAX_RADIUS)
        return cudaErrorInvalidValue;
    const size_t taps = (size_t)(2 * radius + 1) * (size_t)(2 * radius + 1);
    std::vector<float> padded(CONSTMEM_MAX_TAPS, 0.0f);   // unused taps zero
    for (size_t i = 0; i < taps; ++i)
        padded[i] = w[i];
    return cudaMemcpyToSymbol(taps_const, padded.data(), padded.size() * sizeof(float));
}

extern "C" cudaError_t constmem_lookup(int step, const constmem_lookup_job *j)
{
    if (!j || j->threads < 1 || j->threads > CONSTMEM_MAX_THREADS || j->passes < 1 ||
        j->passes > CONSTMEM_MAX_PASSES || j->d < 1 || j->d > 32 || (j->d & (j->d - 1)) || (j->big & ~1))
        return cudaErrorInvalidValue;
    switch (step) {
    case 1:
        if (j->d != 1 || j->big)
            return cudaErrorInvalidValue;
        coefficients<<<(j->threads + kBlock - 1) / kBlock, kBlock>>>(j->out, j->threads, j->passes, j->signs);
        return cudaGetLastError();
    case 2:
        if (j->big)
            return cudaErrorInvalidValue;
        return launch_walk(FromSmallConstant(), j);
    case 3:
        if (j->big)
            return launch_walk(ThroughLdg<CONSTMEM_BIG_STRIDE, CONSTMEM_BIG_MASK>{j->table}, j);
        return launch_walk(ThroughLdg<1, CONSTMEM_SMALL_MASK>{j->table}, j);
    case 4:
        if (j->big)
            return launch_walk(PlainLoad<CONSTMEM_BIG_STRIDE, CONSTMEM_BIG_MASK>{j->table}, j);
        return launch_walk(PlainLoad<1, CONSTMEM_SMALL_MASK>{j->table}, j);
    case 5:
        if (j->d != 1 || !j->big)
            return cudaErrorInvalidValue;
        return launch_walk(FromBigConstant(), j);
    default:
        return cudaErrorInvalidValue;
    }
}

extern "C" cudaError_t constmem_conv(int step, const constmem_conv_job *job)
{
    if (!job || job->width < 1 || job->height < 1 || (long long)job->width * job->height >= (1LL << 31) ||
        job->height > 4194240 || job->radius < 1 || job->radius > CONSTMEM_MAX_RADIUS)
        return cudaErrorInvalidValue;
    if (step == 6)
        return launch_conv(job, ConstantTaps());
    if (step == 7)
        return launch_conv(job, GlobalTaps{job->w_dev});
    if (step == 8) {
        ValueTaps v;
        const int n = (2 * job->radius + 1) * (2 * job->radius + 1);
        for (int i = 0; i < CONSTMEM_MAX_TAPS; ++i)
            v.w[i] = i < n ? job->w[i] : 0.0f;
        return launch_conv(job, v);
    }
    return cudaErrorInvalidValue;
}
