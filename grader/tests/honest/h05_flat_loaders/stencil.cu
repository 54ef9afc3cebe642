// Lab 05: every shared tile, halo included, is filled by one flat loop
// over its cells (cell k of the tile -> its grid point -> in or the
// boundary value), so halos and corners need no special cases. Tiles:
// 1D 256 points, 2D 32 x 16, 3D 32 x 4 x 4; steps 5 and 6 march a 32 x 8
// tile along z over 32 planes per block.
#include "stencil.h"

#include <cuda_runtime.h>

namespace {

constexpr int R = STENCIL_R;

__device__ __forceinline__ float grid_value(const float *in, long long x, long long y, long long z, int nx, int ny,
                                            int nz, float outside)
{
    if (x < 0 || y < 0 || z < 0 || x >= nx || y >= ny || z >= nz)
        return outside;
    return in[(z * ny + y) * nx + x];
}

__device__ __forceinline__ float seven(const stencil_coeffs &c, float mid, float xm, float xp, float ym, float yp,
                                       float zm, float zp)
{
    return c.c3[0] * mid + c.c3[1] * xm + c.c3[2] * xp + c.c3[3] * ym + c.c3[4] * yp + c.c3[5] * zm +
           c.c3[6] * zp;
}

// ---- step 1
constexpr int B1 = 256;

__global__ void line_kernel(const float *in, float *out, int n, stencil_coeffs c)
{
    __shared__ float s[B1 + 2 * R];
    const long long first = (long long)blockIdx.x * B1 - R;
    for (int k = threadIdx.x; k < B1 + 2 * R; k += B1) {
        long long i = first + k;
        s[k] = (i >= 0 && i < n) ? in[i] : c.outside;
    }
    __syncthreads();
    long long i = (long long)blockIdx.x * B1 + threadIdx.x;
    if (i >= n)
        return;
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k <= 2 * R; ++k)
        acc += c.c1[k] * s[threadIdx.x + k];
    out[i] = acc;
}

// ---- step 2
constexpr int X2 = 32, Y2 = 16;

__global__ void plane_kernel(const float *in, float *out, int nx, int ny, stencil_coeffs c)
{
    __shared__ float s[Y2 + 2][X2 + 2];
    const long long x0 = (long long)blockIdx.x * X2 - 1, y0 = (long long)blockIdx.y * Y2 - 1;
    const int t = threadIdx.y * X2 + threadIdx.x;
    for (int k = t; k < (Y2 + 2) * (X2 + 2); k += X2 * Y2)
        s[k / (X2 + 2)][k % (X2 + 2)] = grid_value(in, x0 + k % (X2 + 2), y0 + k / (X2 + 2), 0, nx, ny, 1, c.outside);
    __syncthreads();
    long long x = x0 + 1 + threadIdx.x, y = y0 + 1 + threadIdx.y;
    if (x >= nx || y >= ny)
        return;
    float acc = 0.0f;
#pragma unroll
    for (int dy = 0; dy < 3; ++dy)
#pragma unroll
        for (int dx = 0; dx < 3; ++dx)
            acc += c.c2[dy][dx] * s[threadIdx.y + dy][threadIdx.x + dx];
    out[y * nx + x] = acc;
}

// ---- step 3
__global__ void points_kernel(const float *in, float *out, int nx, int ny, int nz, stencil_coeffs c)
{
    long long x = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long y = (long long)blockIdx.y * blockDim.y + threadIdx.y;
    long long z = blockIdx.z;
    if (x >= nx || y >= ny)
        return;
    float o = c.outside;
    out[(z * ny + y) * nx + x] =
        seven(c, grid_value(in, x, y, z, nx, ny, nz, o), grid_value(in, x - 1, y, z, nx, ny, nz, o),
              grid_value(in, x + 1, y, z, nx, ny, nz, o), grid_value(in, x, y - 1, z, nx, ny, nz, o),
              grid_value(in, x, y + 1, z, nx, ny, nz, o), grid_value(in, x, y, z - 1, nx, ny, nz, o),
              grid_value(in, x, y, z + 1, nx, ny, nz, o));
}

// ---- step 4
constexpr int X4 = 32, Y4 = 4, Z4 = 4;

__global__ void box_kernel(const float *in, float *out, int nx, int ny, int nz, stencil_coeffs c)
{
    constexpr int WX = X4 + 2, WY = Y4 + 2, WZ = Z4 + 2;
    __shared__ float s[WZ][WY][WX];
    const long long x0 = (long long)blockIdx.x * X4 - 1, y0 = (long long)blockIdx.y * Y4 - 1,
                    z0 = (long long)blockIdx.z * Z4 - 1;
    const int t = (threadIdx.z * Y4 + threadIdx.y) * X4 + threadIdx.x;
    for (int k = t; k < WX * WY * WZ; k += X4 * Y4 * Z4) {
        int i = k % WX, j = (k / WX) % WY, l = k / (WX * WY);
        s[l][j][i] = grid_value(in, x0 + i, y0 + j, z0 + l, nx, ny, nz, c.outside);
    }
    __syncthreads();
    const int i = threadIdx.x + 1, j = threadIdx.y + 1, l = threadIdx.z + 1;
    long long x = x0 + i, y = y0 + j, z = z0 + l;
    if (x < nx && y < ny && z < nz)
        out[(z * ny + y) * nx + x] = seven(c, s[l][j][i], s[l][j][i - 1], s[l][j][i + 1], s[l][j - 1][i],
                                           s[l][j + 1][i], s[l - 1][j][i], s[l + 1][j][i]);
}

// ---- steps 5 and 6: a 32 x 8 tile marching over MZ planes
constexpr int XM = 32, YM = 8, MZ = 32;

__device__ void load_plane(float (*dst)[XM + 2], const float *in, long long x0, long long y0, long long z, int nx,
                           int ny, int nz, float outside)
{
    const int t = threadIdx.y * XM + threadIdx.x;
    for (int k = t; k < (YM + 2) * (XM + 2); k += XM * YM)
        dst[k / (XM + 2)][k % (XM + 2)] = grid_value(in, x0 + k % (XM + 2), y0 + k / (XM + 2), z, nx, ny, nz, outside);
}

// Three planes in shared memory: z - 1, z and z + 1, used round robin.
__global__ void march_kernel(const float *in, float *out, int nx, int ny, int nz, stencil_coeffs c)
{
    __shared__ float planes[3][YM + 2][XM + 2];
    const long long x0 = (long long)blockIdx.x * XM - 1, y0 = (long long)blockIdx.y * YM - 1;
    const long long zb = (long long)blockIdx.z * MZ;
    const long long zend = zb + MZ < nz ? zb + MZ : nz;
    load_plane(planes[(zb + 2) % 3], in, x0, y0, zb - 1, nx, ny, nz, c.outside);
    load_plane(planes[zb % 3], in, x0, y0, zb, nx, ny, nz, c.outside);
    const int i = threadIdx.x + 1, j = threadIdx.y + 1;
    const long long x = x0 + i, y = y0 + j;
    for (long long z = zb; z < zend; ++z) {
        load_plane(planes[(z + 1) % 3], in, x0, y0, z + 1, nx, ny, nz, c.outside);
        __syncthreads();   // plane z + 1 is in
        float(*below)[XM + 2] = planes[(z + 2) % 3];
        float(*here)[XM + 2] = planes[z % 3];
        float(*above)[XM + 2] = planes[(z + 1) % 3];
        if (x < nx && y < ny)
            out[(z * ny + y) * nx + x] = seven(c, here[j][i], here[j][i - 1], here[j][i + 1], here[j - 1][i],
                                               here[j + 1][i], below[j][i], above[j][i]);
        __syncthreads();   // plane z - 1 is read by all before it is refilled with z + 2
    }
}

// One plane in shared memory; each thread keeps its own column's z - 1,
// z and z + 1 in registers.
__global__ void register_march_kernel(const float *in, float *out, int nx, int ny, int nz, stencil_coeffs c)
{
    __shared__ float plane[YM + 2][XM + 2];
    const long long x0 = (long long)blockIdx.x * XM - 1, y0 = (long long)blockIdx.y * YM - 1;
    const long long zb = (long long)blockIdx.z * MZ;
    const long long zend = zb + MZ < nz ? zb + MZ : nz;
    const int i = threadIdx.x + 1, j = threadIdx.y + 1;
    const long long x = x0 + i, y = y0 + j;
    float below = grid_value(in, x, y, zb - 1, nx, ny, nz, c.outside);
    float here = grid_value(in, x, y, zb, nx, ny, nz, c.outside);
    for (long long z = zb; z < zend; ++z) {
        float above = grid_value(in, x, y, z + 1, nx, ny, nz, c.outside);   // issued before the barrier waits
        load_plane(plane, in, x0, y0, z, nx, ny, nz, c.outside);
        __syncthreads();
        if (x < nx && y < ny)
            out[(z * ny + y) * nx + x] = seven(c, here, plane[j][i - 1], plane[j][i + 1], plane[j - 1][i],
                                               plane[j + 1][i], below, above);
        __syncthreads();
        below = here;
        here = above;
    }
}

unsigned cover(long long n, int per) { return (unsigned)((n + per - 1) / per); }

}  // namespace

extern "C" cudaError_t stencil_step(int step, const float *in, float *out, int nx, int ny, int nz,
                                    const stencil_coeffs *c)
{
    if (c == nullptr || nx < 1 || ny < 1 || nz < 1 || (long long)nx * ny * nz >= (1LL << 31))
        return cudaErrorInvalidValue;
    if (step == 1) {
        if (ny != 1 || nz != 1)
            return cudaErrorInvalidValue;
        line_kernel<<<cover(nx, B1), B1>>>(in, out, nx, *c);
    } else if (step == 2) {
        if (nz != 1 || ny > 1000000)
            return cudaErrorInvalidValue;
        plane_kernel<<<dim3(cover(nx, X2), cover(ny, Y2)), dim3(X2, Y2)>>>(in, out, nx, ny, *c);
    } else if (step >= 3 && step <= 6) {
        if (ny > 65535 || nz > 65535)
            return cudaErrorInvalidValue;
        if (step == 3)
            points_kernel<<<dim3(cover(nx, 32), cover(ny, 8), nz), dim3(32, 8)>>>(in, out, nx, ny, nz, *c);
        else if (step == 4)
            box_kernel<<<dim3(cover(nx, X4), cover(ny, Y4), cover(nz, Z4)), dim3(X4, Y4, Z4)>>>(in, out, nx, ny, nz, *c);
        else if (step == 5)
            march_kernel<<<dim3(cover(nx, XM), cover(ny, YM), cover(nz, MZ)), dim3(XM, YM)>>>(in, out, nx, ny, nz, *c);
        else
            register_march_kernel<<<dim3(cover(nx, XM), cover(ny, YM), cover(nz, MZ)), dim3(XM, YM)>>>(in, out, nx,
                                                                                                      ny, nz, *c);
    } else {
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
