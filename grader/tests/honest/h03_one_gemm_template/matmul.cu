// Lab 03: steps 5-9 are ONE kernel template, gemm_regs<BM, BN, BK, TM, TN,
// Options>, instantiated with the step's tile shape and options (128-bit
// global loads where rows are 16-byte aligned, warp-tiled thread layout,
// double buffering). A's tile is always stored transposed, so a thread's
// TM values of A and TN values of B are contiguous in shared memory and
// read as float4. Steps 3-4: plain square tiles (static, then dynamic).
#include "matmul.h"

#include <cuda_runtime.h>

namespace {

// ---- steps 1 and 2
__global__ void rows_on_lanes(const float *A, const float *B, float *C, int M, int N, int K)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;   // a warp: 32 rows
    long long j = (long long)blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= M || j >= N)
        return;
    float s = 0.0f;
    for (int k = 0; k < K; ++k)
        s += A[i * K + k] * B[(long long)k * N + j];
    C[i * N + j] = s;
}

__global__ void cols_on_lanes(const float *A, const float *B, float *C, int M, int N, int K)
{
    long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;   // a warp: 32 columns
    long long i = (long long)blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= M || j >= N)
        return;
    float s = 0.0f;
    for (int k = 0; k < K; ++k)
        s += A[i * K + k] * B[(long long)k * N + j];
    C[i * N + j] = s;
}

// ---- step 3: 32 x 32 tiles
constexpr int T3 = 32;

__global__ void square_tiles(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float sa[T3][T3], sb[T3][T3];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long long row = (long long)blockIdx.y * T3 + ty, col = (long long)blockIdx.x * T3 + tx;
    float s = 0.0f;
    for (int k0 = 0; k0 < K; k0 += T3) {
        sa[ty][tx] = (row < M && k0 + tx < K) ? A[row * K + k0 + tx] : 0.0f;
        sb[ty][tx] = (k0 + ty < K && col < N) ? B[(long long)(k0 + ty) * N + col] : 0.0f;
        __syncthreads();   // tiles complete before use
        for (int k = 0; k < T3; ++k)
            s += sa[ty][k] * sb[k][tx];
        __syncthreads();   // all reads done before the next tiles overwrite them
    }
    if (row < M && col < N)
        C[row * N + col] = s;
}

// ---- step 4: a side x side output tile, DEPTH-deep k-tiles, all in
// dynamic shared memory: [side][DEPTH] of A then [DEPTH][side] of B.
constexpr int DEPTH = 64;

__global__ void dynamic_tiles(const float *A, const float *B, float *C, int M, int N, int K)
{
    extern __shared__ float pool[];
    const int side = blockDim.x;
    float *sa = pool, *sb = pool + side * DEPTH;
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * side + tx, nt = side * side;
    const long long row0 = (long long)blockIdx.y * side, col0 = (long long)blockIdx.x * side;
    float s = 0.0f;
    for (int k0 = 0; k0 < K; k0 += DEPTH) {
        for (int e = tid; e < side * DEPTH; e += nt) {
            int r = e / DEPTH, c = e % DEPTH;
            sa[e] = (row0 + r < M && k0 + c < K) ? A[(row0 + r) * K + k0 + c] : 0.0f;
            int kr = e / side, cc = e % side;
            sb[e] = (k0 + kr < K && col0 + cc < N) ? B[(long long)(k0 + kr) * N + col0 + cc] : 0.0f;
        }
        __syncthreads();
        for (int k = 0; k < DEPTH; ++k)
            s += sa[ty * DEPTH + k] * sb[k * side + tx];
        __syncthreads();
    }
    if (row0 + ty < M && col0 + tx < N)
        C[(row0 + ty) * N + col0 + tx] = s;
}

// ---- steps 5-9
struct Options {
    bool vec;      // 128-bit global loads (the caller checks alignment)
    bool warps;    // warp tiles of 64 x 32 instead of thread rows
    bool twice;    // double buffering
};

template <int BM, int BN, int BK, int TM, int TN, bool VEC, bool WARPS, bool TWICE>
__global__ void __launch_bounds__((BM / TM) * (BN / TN))
gemm_regs(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C, int M, int N, int K)
{
    constexpr int NT = (BM / TM) * (BN / TN), BUFS = TWICE ? 2 : 1;
    __shared__ __align__(16) float sa[BUFS][BK][BM];   // A transposed: sa[k][m]
    __shared__ __align__(16) float sb[BUFS][BK][BN];
    const int tid = threadIdx.x;
    int r0, c0;   // this thread's first output row and column in the tile
    if (WARPS) {
        constexpr int WN = BN / 32;   // warps across
        const int warp = tid / 32, lane = tid % 32;
        r0 = (warp / WN) * (8 * TM) + (lane / 4) * TM;
        c0 = (warp % WN) * 32 + (lane % 4) * TN;
    } else {
        r0 = (tid / (BN / TN)) * TM;
        c0 = (tid % (BN / TN)) * TN;
    }
    const long long m0 = (long long)blockIdx.y * BM, n0 = (long long)blockIdx.x * BN;

    auto load = [&](int buf, int k0) {
        if (VEC) {
            for (int e = tid; e < BM * BK / 4; e += NT) {
                int r = e / (BK / 4), c = (e % (BK / 4)) * 4;
                float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
                if (m0 + r < M && k0 + c < K)
                    v = *reinterpret_cast<const float4 *>(A + (m0 + r) * K + k0 + c);
                sa[buf][c][r] = v.x;
                sa[buf][c + 1][r] = v.y;
                sa[buf][c + 2][r] = v.z;
                sa[buf][c + 3][r] = v.w;
            }
            for (int e = tid; e < BK * BN / 4; e += NT) {
                int r = e / (BN / 4), c = (e % (BN / 4)) * 4;
                float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
                if (k0 + r < K && n0 + c < N)
                    v = *reinterpret_cast<const float4 *>(B + (long long)(k0 + r) * N + n0 + c);
                *reinterpret_cast<float4 *>(&sb[buf][r][c]) = v;
            }
        } else {
            for (int e = tid; e < BM * BK; e += NT) {
                int r = e / BK, c = e % BK;
                sa[buf][c][r] = (m0 + r < M && k0 + c < K) ? A[(m0 + r) * K + k0 + c] : 0.0f;
            }
            for (int e = tid; e < BK * BN; e += NT) {
                int r = e / BN, c = e % BN;
                sb[buf][r][c] = (k0 + r < K && n0 + c < N) ? B[(long long)(k0 + r) * N + n0 + c] : 0.0f;
            }
        }
    };

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j)
            acc[i][j] = 0.0f;

    auto multiply = [&](int buf) {
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
            if (TM % 4 == 0) {
#pragma unroll
                for (int i = 0; i < TM; i += 4) {
                    float4 v = *reinterpret_cast<const float4 *>(&sa[buf][k][r0 + i]);
                    a[i] = v.x; a[i + 1] = v.y; a[i + 2] = v.z; a[i + 3] = v.w;
                }
            } else {
#pragma unroll
                for (int i = 0; i < TM; ++i)
                    a[i] = sa[buf][k][r0 + i];
            }
            if (TN % 4 == 0) {
#pragma unroll
                for (int j = 0; j < TN; j += 4) {
                    float4 v = *reinterpret_cast<const float4 *>(&sb[buf][k][c0 + j]);
                    b[j] = v.x; b[j + 1] = v.y; b[j + 2] = v.z; b[j + 3] = v.w;
                }
            } else {
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    b[j] = sb[buf][k][c0 + j];
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += a[i] * b[j];
        }
    };

    const int tiles = (K + BK - 1) / BK;
    load(0, 0);
    __syncthreads();
    for (int t = 0; t < tiles; ++t) {
        const int cur = TWICE ? (t & 1) : 0;
        if (TWICE && t + 1 < tiles)
            load(cur ^ 1, (t + 1) * BK);   // the other buffer: nobody reads it now
        multiply(cur);
        __syncthreads();
        if (!TWICE && t + 1 < tiles) {
            load(0, (t + 1) * BK);
            __syncthreads();
        }
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            long long r = m0 + r0 + i, c = n0 + c0 + j;
            if (r < M && c < N)
                C[r * N + c] = acc[i][j];
        }
}

template <int BM, int BN, int BK, int TM, int TN, bool WARPS, bool TWICE>
cudaError_t run_regs(bool may_vectorize, const float *A, const float *B, float *C, int M, int N, int K)
{
    dim3 grid((N + BN - 1) / BN, (M + BM - 1) / BM);
    constexpr int threads = (BM / TM) * (BN / TN);
    if (may_vectorize && K % 4 == 0 && N % 4 == 0)
        gemm_regs<BM, BN, BK, TM, TN, true, WARPS, TWICE><<<grid, threads>>>(A, B, C, M, N, K);
    else
        gemm_regs<BM, BN, BK, TM, TN, false, WARPS, TWICE><<<grid, threads>>>(A, B, C, M, N, K);
    return cudaGetLastError();
}

}  // namespace

extern "C" cudaError_t matmul_step(int step, const float *A, const float *B, float *C, int M, int N, int K)
{
    if (M < 1 || N < 1 || K < 1 || M > MATMUL_MAX_SIDE || N > MATMUL_MAX_SIDE || K > MATMUL_MAX_SIDE ||
        (long long)M * K >= (1LL << 31) || (long long)K * N >= (1LL << 31) || (long long)M * N >= (1LL << 31))
        return cudaErrorInvalidValue;
    switch (step) {
    case 1:
        rows_on_lanes<<<dim3((M + 31) / 32, (N + 7) / 8), dim3(32, 8)>>>(A, B, C, M, N, K);
        return cudaGetLastError();
    case 2:
        cols_on_lanes<<<dim3((N + 31) / 32, (M + 7) / 8), dim3(32, 8)>>>(A, B, C, M, N, K);
        return cudaGetLastError();
    case 3:
        square_tiles<<<dim3((N + T3 - 1) / T3, (M + T3 - 1) / T3), dim3(T3, T3)>>>(A, B, C, M, N, K);
        return cudaGetLastError();
    case 4: {
        // small matrices: 16 x 16 tiles keep more blocks busy
        const int side = ((long long)M * N < 512 * 512) ? 16 : 32;
        const size_t bytes = 2 * sizeof(float) * side * DEPTH;
        dynamic_tiles<<<dim3((N + side - 1) / side, (M + side - 1) / side), dim3(side, side), bytes>>>(A, B, C, M, N, K);
        return cudaGetLastError();
    }
    case 5: return run_regs<64, 64, 8, 8, 1, false, false>(false, A, B, C, M, N, K);
    case 6: return run_regs<128, 128, 8, 8, 8, false, false>(false, A, B, C, M, N, K);
    case 7: return run_regs<128, 128, 8, 8, 8, false, false>(true, A, B, C, M, N, K);
    case 8: return run_regs<128, 128, 8, 8, 8, true, false>(true, A, B, C, M, N, K);
    case 9: return run_regs<128, 128, 8, 8, 8, true, true>(true, A, B, C, M, N, K);
    default: return cudaErrorInvalidValue;
    }
}
