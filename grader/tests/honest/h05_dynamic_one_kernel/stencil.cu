// Lab 05: steps 4, 5 and 6 are one kernel, slab_kernel<DEPTH, MARCH,
// REGS>: a 32 x 8 tile DEPTH planes deep held in dynamic shared memory
// (step 4: a 32 x 8 x 4 box), or marching along z (step 5: three planes
// in shared memory, step 6: one plane and the z neighbours in registers).
// The 1D step keeps its tile in dynamic shared memory too, sized at
// launch from the block size the launcher picks.
#include "stencil.h"

#include <cuda_runtime.h>

namespace {

constexpr int R = STENCIL_R;
constexpr int TX = 32, TY = 8;

struct Grid3 {
    int nx, ny, nz;
    float outside;
    __device__ bool inside(long long x, long long y, long long z) const
    {
        return x >= 0 && y >= 0 && z >= 0 && x < nx && y < ny && z < nz;
    }
    __device__ long long at(long long x, long long y, long long z) const { return (z * ny + y) * nx + x; }
    __device__ float get(const float *in, long long x, long long y, long long z) const
    {
        return inside(x, y, z) ? in[at(x, y, z)] : outside;
    }
};

__global__ void line(const float *in, float *out, int n, stencil_coeffs c)
{
    extern __shared__ float cells[];   // blockDim.x + 2R
    const int b = blockDim.x;
    const long long first = (long long)blockIdx.x * b;
    for (int k = threadIdx.x; k < b + 2 * R; k += b) {
        long long i = first - R + k;
        cells[k] = i >= 0 && i < n ? in[i] : c.outside;
    }
    __syncthreads();
    const long long i = first + threadIdx.x;
    if (i < n) {
        float s = 0.0f;
        for (int k = 0; k < 2 * R + 1; ++k)
            s += c.c1[k] * cells[threadIdx.x + k];
        out[i] = s;
    }
}

__global__ void square(const float *in, float *out, int nx, int ny, stencil_coeffs c)
{
    __shared__ float s[TY + 2][TX + 2];
    const Grid3 g{nx, ny, 1, c.outside};
    const long long x0 = (long long)blockIdx.x * TX;
    // Tall images have more rows of tiles than a grid's y may hold: each
    // block walks down the image, gridDim.y tiles at a time.
    for (long long y0 = (long long)blockIdx.y * TY; y0 < ny; y0 += (long long)gridDim.y * TY) {
        for (int k = threadIdx.y * TX + threadIdx.x; k < (TX + 2) * (TY + 2); k += TX * TY)
            s[k / (TX + 2)][k % (TX + 2)] = g.get(in, x0 - 1 + k % (TX + 2), y0 - 1 + k / (TX + 2), 0);
        __syncthreads();
        const long long x = x0 + threadIdx.x, y = y0 + threadIdx.y;
        if (x < nx && y < ny) {
            float acc = 0.0f;
            for (int dy = 0; dy < 3; ++dy)
                for (int dx = 0; dx < 3; ++dx)
                    acc += c.c2[dy][dx] * s[threadIdx.y + dy][threadIdx.x + dx];
            out[y * nx + x] = acc;
        }
        __syncthreads();
    }
}

__global__ void direct(const float *in, float *out, int nx, int ny, int nz, stencil_coeffs c)
{
    const Grid3 g{nx, ny, nz, c.outside};
    const long long x = (long long)blockIdx.x * TX + threadIdx.x, y = (long long)blockIdx.y * TY + threadIdx.y,
                    z = blockIdx.z;
    if (x < nx && y < ny)
        out[g.at(x, y, z)] = c.c3[0] * g.get(in, x, y, z) + c.c3[1] * g.get(in, x - 1, y, z) +
                             c.c3[2] * g.get(in, x + 1, y, z) + c.c3[3] * g.get(in, x, y - 1, z) +
                             c.c3[4] * g.get(in, x, y + 1, z) + c.c3[5] * g.get(in, x, y, z - 1) +
                             c.c3[6] * g.get(in, x, y, z + 1);
}

// PLANES planes of (TY + 2) x (TX + 2) cells in dynamic shared memory.
template <int DEPTH, bool MARCH, bool REGS>
__global__ void slab_kernel(const float *in, float *out, int nx, int ny, int nz, stencil_coeffs c)
{
    constexpr int W = TX + 2, H = TY + 2, PLANE = W * H;
    extern __shared__ float slab[];
    const Grid3 g{nx, ny, nz, c.outside};
    const int tx = threadIdx.x, ty = threadIdx.y, tz = MARCH ? 0 : threadIdx.z;
    const int t = (tz * TY + ty) * TX + tx, nt = TX * TY * (MARCH ? 1 : DEPTH);
    const long long x0 = (long long)blockIdx.x * TX - 1, y0 = (long long)blockIdx.y * TY - 1;
    const long long z0 = (long long)blockIdx.z * DEPTH;
    const long long x = x0 + 1 + tx, y = y0 + 1 + ty;
    auto fill = [&](float *plane, long long z) {
        for (int k = MARCH ? ty * TX + tx : t; k < PLANE; k += MARCH ? TX * TY : nt)
            plane[k] = g.get(in, x0 + k % W, y0 + k / W, z);
    };
    auto cell = [&](const float *plane, int dx, int dy) { return plane[(ty + 1 + dy) * W + tx + 1 + dx]; };
    if (!MARCH) {   // a box: DEPTH + 2 planes
        for (int k = t; k < PLANE * (DEPTH + 2); k += nt)
            slab[k] = g.get(in, x0 + k % W, y0 + (k / W) % H, z0 - 1 + k / PLANE);
        __syncthreads();
        const long long z = z0 + tz;
        const float *mid = slab + (tz + 1) * PLANE;
        if (x < nx && y < ny && z < nz)
            out[g.at(x, y, z)] = c.c3[0] * cell(mid, 0, 0) + c.c3[1] * cell(mid, -1, 0) + c.c3[2] * cell(mid, 1, 0) +
                                 c.c3[3] * cell(mid, 0, -1) + c.c3[4] * cell(mid, 0, 1) +
                                 c.c3[5] * cell(mid - PLANE, 0, 0) + c.c3[6] * cell(mid + PLANE, 0, 0);
        return;
    }
    const long long zend = z0 + DEPTH < nz ? z0 + DEPTH : nz;
    if (!REGS) {
        float *p[3] = {slab, slab + PLANE, slab + 2 * PLANE};
        fill(p[0], z0 - 1);
        fill(p[1], z0);
        for (long long z = z0; z < zend; ++z) {
            fill(p[2], z + 1);
            __syncthreads();
            if (x < nx && y < ny)
                out[g.at(x, y, z)] = c.c3[0] * cell(p[1], 0, 0) + c.c3[1] * cell(p[1], -1, 0) +
                                     c.c3[2] * cell(p[1], 1, 0) + c.c3[3] * cell(p[1], 0, -1) +
                                     c.c3[4] * cell(p[1], 0, 1) + c.c3[5] * cell(p[0], 0, 0) +
                                     c.c3[6] * cell(p[2], 0, 0);
            __syncthreads();
            float *oldest = p[0];
            p[0] = p[1];
            p[1] = p[2];
            p[2] = oldest;
        }
    } else {
        float below = g.get(in, x, y, z0 - 1), mid = g.get(in, x, y, z0);
        for (long long z = z0; z < zend; ++z) {
            const float above = g.get(in, x, y, z + 1);
            fill(slab, z);
            __syncthreads();
            if (x < nx && y < ny)
                out[g.at(x, y, z)] = c.c3[0] * mid + c.c3[1] * cell(slab, -1, 0) + c.c3[2] * cell(slab, 1, 0) +
                                     c.c3[3] * cell(slab, 0, -1) + c.c3[4] * cell(slab, 0, 1) + c.c3[5] * below +
                                     c.c3[6] * above;
            __syncthreads();
            below = mid;
            mid = above;
        }
    }
}

unsigned up(long long n, int d) { return (unsigned)((n + d - 1) / d); }

template <int DEPTH, bool MARCH, bool REGS>
cudaError_t slab(const float *in, float *out, int nx, int ny, int nz, const stencil_coeffs *c)
{
    constexpr int planes = MARCH ? (REGS ? 1 : 3) : DEPTH + 2;
    const size_t bytes = sizeof(float) * planes * (TX + 2) * (TY + 2);
    const dim3 block(TX, TY, MARCH ? 1 : DEPTH), grid(up(nx, TX), up(ny, TY), up(nz, DEPTH));
    slab_kernel<DEPTH, MARCH, REGS><<<grid, block, bytes>>>(in, out, nx, ny, nz, *c);
    return cudaGetLastError();
}

}  // namespace

extern "C" cudaError_t stencil_step(int step, const float *in, float *out, int nx, int ny, int nz,
                                    const stencil_coeffs *c)
{
    if (!c || nx < 1 || ny < 1 || nz < 1 || (long long)nx * ny * nz >= (1LL << 31))
        return cudaErrorInvalidValue;
    if (step == 1 && ny == 1 && nz == 1) {
        const int b = nx >= (1 << 16) ? 512 : 128;
        line<<<up(nx, b), b, sizeof(float) * (b + 2 * R)>>>(in, out, nx, *c);
        return cudaGetLastError();
    }
    if (step == 2 && nz == 1 && ny <= 1000000) {
        square<<<dim3(up(nx, TX), up(ny, TY) < 65535 ? up(ny, TY) : 65535), dim3(TX, TY)>>>(in, out, nx, ny, *c);
        return cudaGetLastError();
    }
    if (step < 3 || step > 6 || ny > 65535 || nz > 65535)
        return cudaErrorInvalidValue;
    switch (step) {
    case 3:
        direct<<<dim3(up(nx, TX), up(ny, TY), nz), dim3(TX, TY)>>>(in, out, nx, ny, nz, *c);
        return cudaGetLastError();
    case 4: return slab<4, false, false>(in, out, nx, ny, nz, c);
    case 5: return slab<64, true, false>(in, out, nx, ny, nz, c);
    default: return slab<64, true, true>(in, out, nx, ny, nz, c);
    }
}
