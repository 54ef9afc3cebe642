/* Lab 05, the textbook way: the tile's interior is loaded by "its" thread
 * and the halo by the threads on the tile's edges (corners by the corner
 * threads). 1D: 128 threads, 4 points each. 2D: 32 x 8 threads, 4 rows
 * each (a 32 x 32 tile). 3D tile: 16 x 8 x 8. Marching: 32 x 16 tiles, the
 * three planes swapped as pointers; step 6 prefetches the next plane's
 * value into a register. Coefficients travel by value in a struct. */
#include "stencil.h"

#include <cuda_runtime.h>

#define RAD STENCIL_R
#define IDX3(x, y, z) (((long long)(z) * ny + (y)) * nx + (x))

static __device__ float fetch(const float *in, int x, int y, int z, int nx, int ny, int nz, float outside)
{
    return (x >= 0 && x < nx && y >= 0 && y < ny && z >= 0 && z < nz) ? in[IDX3(x, y, z)] : outside;
}

/* ---- 1D: 128 threads x 4 points = 512 points a block */
#define T1 128
#define P1 4
#define W1 (T1 * P1)

__global__ void st1(const float *in, float *out, int n, stencil_coeffs c)
{
    __shared__ float s[W1 + 2 * RAD];
    long long base = (long long)blockIdx.x * W1;
    for (int p = 0; p < P1; p++) {
        long long i = base + p * T1 + threadIdx.x;
        s[RAD + p * T1 + threadIdx.x] = i < n ? in[i] : c.outside;
    }
    if (threadIdx.x < RAD) {
        long long left = base - RAD + threadIdx.x, right = base + W1 + threadIdx.x;
        s[threadIdx.x] = left >= 0 ? in[left] : c.outside;
        s[RAD + W1 + threadIdx.x] = right < n ? in[right] : c.outside;
    }
    __syncthreads();
    for (int p = 0; p < P1; p++) {
        int l = p * T1 + threadIdx.x;
        long long i = base + l;
        if (i < n) {
            float v = 0.0f;
            for (int k = -RAD; k <= RAD; k++)
                v += c.c1[k + RAD] * s[RAD + l + k];
            out[i] = v;
        }
    }
}

/* ---- 2D: 32 x 32 tile, 32 x 8 threads */
#define T2 32
#define R2 4

__global__ void st2(const float *in, float *out, int nx, int ny, stencil_coeffs c)
{
    __shared__ float s[T2 + 2][T2 + 2];
    int tx = threadIdx.x, x = blockIdx.x * T2 + tx;
    int y0 = blockIdx.y * T2;
    for (int r = threadIdx.y; r < T2; r += T2 / R2) {
        int y = y0 + r;
        s[r + 1][tx + 1] = fetch(in, x, y, 0, nx, ny, 1, c.outside);
        if (tx == 0)
            s[r + 1][0] = fetch(in, x - 1, y, 0, nx, ny, 1, c.outside);
        if (tx == T2 - 1)
            s[r + 1][T2 + 1] = fetch(in, x + 1, y, 0, nx, ny, 1, c.outside);
    }
    if (threadIdx.y == 0) {
        s[0][tx + 1] = fetch(in, x, y0 - 1, 0, nx, ny, 1, c.outside);
        if (tx == 0)
            s[0][0] = fetch(in, x - 1, y0 - 1, 0, nx, ny, 1, c.outside);
        if (tx == T2 - 1)
            s[0][T2 + 1] = fetch(in, x + 1, y0 - 1, 0, nx, ny, 1, c.outside);
    }
    if (threadIdx.y == T2 / R2 - 1) {
        s[T2 + 1][tx + 1] = fetch(in, x, y0 + T2, 0, nx, ny, 1, c.outside);
        if (tx == 0)
            s[T2 + 1][0] = fetch(in, x - 1, y0 + T2, 0, nx, ny, 1, c.outside);
        if (tx == T2 - 1)
            s[T2 + 1][T2 + 1] = fetch(in, x + 1, y0 + T2, 0, nx, ny, 1, c.outside);
    }
    __syncthreads();
    for (int r = threadIdx.y; r < T2; r += T2 / R2) {
        int y = y0 + r;
        if (x < nx && y < ny) {
            float v = 0.0f;
            for (int dy = 0; dy < 3; dy++)
                for (int dx = 0; dx < 3; dx++)
                    v += c.c2[dy][dx] * s[r + dy][tx + dx];
            out[(long long)y * nx + x] = v;
        }
    }
}

static __device__ float point7(const stencil_coeffs *c, float m, float xl, float xr, float yl, float yr, float zl,
                               float zr)
{
    return c->c3[0] * m + c->c3[1] * xl + c->c3[2] * xr + c->c3[3] * yl + c->c3[4] * yr + c->c3[5] * zl +
           c->c3[6] * zr;
}

/* ---- 3D naive */
__global__ void st3(const float *in, float *out, int nx, int ny, int nz, stencil_coeffs c)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y, z = blockIdx.z;
    if (x >= nx || y >= ny)
        return;
    float o = c.outside;
    out[IDX3(x, y, z)] = point7(&c, in[IDX3(x, y, z)], fetch(in, x - 1, y, z, nx, ny, nz, o),
                                fetch(in, x + 1, y, z, nx, ny, nz, o), fetch(in, x, y - 1, z, nx, ny, nz, o),
                                fetch(in, x, y + 1, z, nx, ny, nz, o), fetch(in, x, y, z - 1, nx, ny, nz, o),
                                fetch(in, x, y, z + 1, nx, ny, nz, o));
}

/* ---- 3D tile 16 x 8 x 8 with its face halos (no edges needed: 7 points) */
#define X4 16
#define Y4 8
#define Z4 8

__global__ void st4(const float *in, float *out, int nx, int ny, int nz, stencil_coeffs c)
{
    __shared__ float s[Z4 + 2][Y4 + 2][X4 + 2];
    int tx = threadIdx.x, ty = threadIdx.y, tz = threadIdx.z;
    int x = blockIdx.x * X4 + tx, y = blockIdx.y * Y4 + ty, z = blockIdx.z * Z4 + tz;
    float o = c.outside;
    s[tz + 1][ty + 1][tx + 1] = fetch(in, x, y, z, nx, ny, nz, o);
    if (tx == 0) s[tz + 1][ty + 1][0] = fetch(in, x - 1, y, z, nx, ny, nz, o);
    if (tx == X4 - 1) s[tz + 1][ty + 1][X4 + 1] = fetch(in, x + 1, y, z, nx, ny, nz, o);
    if (ty == 0) s[tz + 1][0][tx + 1] = fetch(in, x, y - 1, z, nx, ny, nz, o);
    if (ty == Y4 - 1) s[tz + 1][Y4 + 1][tx + 1] = fetch(in, x, y + 1, z, nx, ny, nz, o);
    if (tz == 0) s[0][ty + 1][tx + 1] = fetch(in, x, y, z - 1, nx, ny, nz, o);
    if (tz == Z4 - 1) s[Z4 + 1][ty + 1][tx + 1] = fetch(in, x, y, z + 1, nx, ny, nz, o);
    __syncthreads();
    if (x < nx && y < ny && z < nz)
        out[IDX3(x, y, z)] = point7(&c, s[tz + 1][ty + 1][tx + 1], s[tz + 1][ty + 1][tx], s[tz + 1][ty + 1][tx + 2],
                                    s[tz + 1][ty][tx + 1], s[tz + 1][ty + 2][tx + 1], s[tz][ty + 1][tx + 1],
                                    s[tz + 2][ty + 1][tx + 1]);
}

/* ---- marching: 32 x 16 tiles, ZCHUNK planes per block */
#define XM 32
#define YM 16
#define ZCHUNK 16

typedef float plane_t[YM + 2][XM + 2];

static __device__ void fill(plane_t p, const float *in, int x, int y, int z, int nx, int ny, int nz, float o)
{
    int tx = threadIdx.x, ty = threadIdx.y;
    p[ty + 1][tx + 1] = fetch(in, x, y, z, nx, ny, nz, o);
    if (tx == 0) p[ty + 1][0] = fetch(in, x - 1, y, z, nx, ny, nz, o);
    if (tx == XM - 1) p[ty + 1][XM + 1] = fetch(in, x + 1, y, z, nx, ny, nz, o);
    if (ty == 0) p[0][tx + 1] = fetch(in, x, y - 1, z, nx, ny, nz, o);
    if (ty == YM - 1) p[YM + 1][tx + 1] = fetch(in, x, y + 1, z, nx, ny, nz, o);
}

__global__ void st5(const float *in, float *out, int nx, int ny, int nz, stencil_coeffs c)
{
    __shared__ plane_t buf[3];
    int tx = threadIdx.x, ty = threadIdx.y;
    int x = blockIdx.x * XM + tx, y = blockIdx.y * YM + ty, z0 = blockIdx.z * ZCHUNK;
    int z1 = z0 + ZCHUNK < nz ? z0 + ZCHUNK : nz;
    float (*lo)[XM + 2] = buf[0], (*mid)[XM + 2] = buf[1], (*hi)[XM + 2] = buf[2];
    fill(lo, in, x, y, z0 - 1, nx, ny, nz, c.outside);
    fill(mid, in, x, y, z0, nx, ny, nz, c.outside);
    for (int z = z0; z < z1; z++) {
        fill(hi, in, x, y, z + 1, nx, ny, nz, c.outside);
        __syncthreads();
        if (x < nx && y < ny)
            out[IDX3(x, y, z)] = point7(&c, mid[ty + 1][tx + 1], mid[ty + 1][tx], mid[ty + 1][tx + 2], mid[ty][tx + 1],
                                        mid[ty + 2][tx + 1], lo[ty + 1][tx + 1], hi[ty + 1][tx + 1]);
        __syncthreads();
        float (*spare)[XM + 2] = lo;
        lo = mid;
        mid = hi;
        hi = spare;
    }
}

__global__ void st6(const float *in, float *out, int nx, int ny, int nz, stencil_coeffs c)
{
    __shared__ plane_t cur;
    int tx = threadIdx.x, ty = threadIdx.y;
    int x = blockIdx.x * XM + tx, y = blockIdx.y * YM + ty, z0 = blockIdx.z * ZCHUNK;
    int z1 = z0 + ZCHUNK < nz ? z0 + ZCHUNK : nz;
    float o = c.outside;
    float down = fetch(in, x, y, z0 - 1, nx, ny, nz, o);
    float mine = fetch(in, x, y, z0, nx, ny, nz, o);
    float up = fetch(in, x, y, z0 + 1, nx, ny, nz, o);
    for (int z = z0; z < z1; z++) {
        float next = fetch(in, x, y, z + 2, nx, ny, nz, o);   /* a plane ahead */
        cur[ty + 1][tx + 1] = mine;
        if (tx == 0) cur[ty + 1][0] = fetch(in, x - 1, y, z, nx, ny, nz, o);
        if (tx == XM - 1) cur[ty + 1][XM + 1] = fetch(in, x + 1, y, z, nx, ny, nz, o);
        if (ty == 0) cur[0][tx + 1] = fetch(in, x, y - 1, z, nx, ny, nz, o);
        if (ty == YM - 1) cur[YM + 1][tx + 1] = fetch(in, x, y + 1, z, nx, ny, nz, o);
        __syncthreads();
        if (x < nx && y < ny)
            out[IDX3(x, y, z)] = point7(&c, mine, cur[ty + 1][tx], cur[ty + 1][tx + 2], cur[ty][tx + 1],
                                        cur[ty + 2][tx + 1], down, up);
        __syncthreads();
        down = mine;
        mine = up;
        up = next;
    }
}

static unsigned ceil_div(long long a, int b) { return (unsigned)((a + b - 1) / b); }

cudaError_t stencil_step(int step, const float *in, float *out, int nx, int ny, int nz, const stencil_coeffs *c)
{
    if (!c || nx < 1 || ny < 1 || nz < 1 || (long long)nx * ny * nz >= (1LL << 31))
        return cudaErrorInvalidValue;
    switch (step) {
    case 1:
        if (ny != 1 || nz != 1)
            return cudaErrorInvalidValue;
        st1<<<ceil_div(nx, W1), T1>>>(in, out, nx, *c);
        break;
    case 2:
        if (nz != 1 || ny > 1000000)
            return cudaErrorInvalidValue;
        st2<<<dim3(ceil_div(nx, T2), ceil_div(ny, T2)), dim3(T2, T2 / R2)>>>(in, out, nx, ny, *c);
        break;
    case 3: case 4: case 5: case 6:
        if (ny > 65535 || nz > 65535)
            return cudaErrorInvalidValue;
        if (step == 3)
            st3<<<dim3(ceil_div(nx, 32), ceil_div(ny, 4), nz), dim3(32, 4)>>>(in, out, nx, ny, nz, *c);
        else if (step == 4)
            st4<<<dim3(ceil_div(nx, X4), ceil_div(ny, Y4), ceil_div(nz, Z4)), dim3(X4, Y4, Z4)>>>(in, out, nx, ny, nz, *c);
        else if (step == 5)
            st5<<<dim3(ceil_div(nx, XM), ceil_div(ny, YM), ceil_div(nz, ZCHUNK)), dim3(XM, YM)>>>(in, out, nx, ny, nz, *c);
        else
            st6<<<dim3(ceil_div(nx, XM), ceil_div(ny, YM), ceil_div(nz, ZCHUNK)), dim3(XM, YM)>>>(in, out, nx, ny, nz, *c);
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
