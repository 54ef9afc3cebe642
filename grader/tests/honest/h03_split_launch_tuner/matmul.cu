// Lab 03, a second style. 64 x 64 block tiles throughout steps 5-9, each
// step its own kernel (sgemm_v5 ... sgemm_v9) over one shared device body.
// Step 6 launches TWO kernels: full interior tiles without row/column
// checks, then the right and bottom border strips with them. Step 4's tile
// side comes from a tiny host-side "tuner" (std::vector + std::sort).
// Step 9 double-buffers through registers: the next k-tile is fetched into
// registers before this one is multiplied, and stored after.
#include "matmul.h"

#include <algorithm>
#include <cuda_runtime.h>
#include <vector>

namespace {

template <bool kRowsOnLanes>
__global__ void one_per_thread(const float *A, const float *B, float *C, int M, int N, int K)
{
    const long long fast = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long slow = (long long)blockIdx.y * blockDim.y + threadIdx.y;
    const long long i = kRowsOnLanes ? fast : slow, j = kRowsOnLanes ? slow : fast;
    if (i < M && j < N) {
        float acc = 0.0f;
        for (int k = 0; k < K; ++k)
            acc += A[i * K + k] * B[(long long)k * N + j];
        C[i * N + j] = acc;
    }
}

__global__ void tiled32(const float *A, const float *B, float *C, int M, int N, int K)
{
    __shared__ float a_tile[32][32];
    __shared__ float b_tile[32][32];
    const int x = threadIdx.x, y = threadIdx.y;
    const long long i = blockIdx.y * 32LL + y, j = blockIdx.x * 32LL + x;
    float acc = 0.0f;
    for (int kt = 0; kt < (K + 31) / 32; ++kt) {
        const int ka = kt * 32 + x, kb = kt * 32 + y;
        a_tile[y][x] = i < M && ka < K ? A[i * K + ka] : 0.0f;
        b_tile[y][x] = kb < K && j < N ? B[(long long)kb * N + j] : 0.0f;
        __syncthreads();
#pragma unroll 8
        for (int k = 0; k < 32; ++k)
            acc += a_tile[y][k] * b_tile[k][x];
        __syncthreads();
    }
    if (i < M && j < N)
        C[i * N + j] = acc;
}

constexpr int KT4 = 64;

__global__ void tiled_dynamic(const float *A, const float *B, float *C, int M, int N, int K)
{
    extern __shared__ float smem[];
    const int side = blockDim.x, x = threadIdx.x, y = threadIdx.y;
    float *a_tile = smem;                  // side x KT4
    float *b_tile = smem + side * KT4;     // KT4 x side
    const long long i = (long long)blockIdx.y * side + y, j = (long long)blockIdx.x * side + x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < K; k0 += KT4) {
        for (int c = x; c < KT4; c += side)
            a_tile[y * KT4 + c] = i < M && k0 + c < K ? A[i * K + k0 + c] : 0.0f;
        for (int r = y; r < KT4; r += side)
            b_tile[r * side + x] = k0 + r < K && j < N ? B[(long long)(k0 + r) * N + j] : 0.0f;
        __syncthreads();
        for (int k = 0; k < KT4; ++k)
            acc += a_tile[y * KT4 + k] * b_tile[k * side + x];
        __syncthreads();
    }
    if (i < M && j < N)
        C[i * N + j] = acc;
}

// ---- the register-blocked body of steps 5-9: a 64 x 64 tile of C, BK-deep
// k-tiles, TM x TN results per thread. CHECKED: rows and columns may run
// past M and N (off the border). A is stored transposed (as_[k][m]).
constexpr int BT = 64, BK = 16;

template <int TM, int TN, bool CHECKED, bool VEC4, bool WARP_LAYOUT, bool PREFETCH>
__device__ __forceinline__ void tile_body(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C,
                                          int M, int N, int K, long long m0, long long n0)
{
    constexpr int NT = (BT / TM) * (BT / TN);
    constexpr int A_PER = BT * BK / NT, B_PER = BK * BT / NT;   // elements each thread fetches
    __shared__ __align__(16) float as_[BK][BT];
    __shared__ __align__(16) float bs_[BK][BT];
    const int t = threadIdx.x;
    int rr, cc;
    if (WARP_LAYOUT) {   // a warp: 8 x 4 threads = a 32 x 16 piece (TM = TN = 4)
        const int w = t / 32, l = t % 32;
        rr = (w / (BT / 16)) * 32 + (l / 4) * TM;
        cc = (w % (BT / 16)) * 16 + (l % 4) * TN;
    } else {
        rr = (t / (BT / TN)) * TM;
        cc = (t % (BT / TN)) * TN;
    }
    float acc[TM][TN] = {};
    float a_next[A_PER], b_next[B_PER];

    auto fetch = [&](int k0) {
#pragma unroll
        for (int q = 0; q < A_PER; ++q) {
            const int e = t + q * NT, r = e / BK, c = e % BK;
            const bool in = (!CHECKED || m0 + r < M) && k0 + c < K;
            a_next[q] = in ? A[(m0 + r) * K + k0 + c] : 0.0f;
        }
        if (VEC4) {
#pragma unroll
            for (int q = 0; q < B_PER; q += 4) {
                const int e = t * 4 + q * NT, r = e / BT, c = e % BT;
                float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
                if (k0 + r < K && (!CHECKED || n0 + c < N))
                    v = *reinterpret_cast<const float4 *>(&B[(long long)(k0 + r) * N + n0 + c]);
                b_next[q] = v.x; b_next[q + 1] = v.y; b_next[q + 2] = v.z; b_next[q + 3] = v.w;
            }
        } else {
#pragma unroll
            for (int q = 0; q < B_PER; ++q) {
                const int e = t + q * NT, r = e / BT, c = e % BT;
                const bool in = k0 + r < K && (!CHECKED || n0 + c < N);
                b_next[q] = in ? B[(long long)(k0 + r) * N + n0 + c] : 0.0f;
            }
        }
    };
    auto stash = [&]() {
#pragma unroll
        for (int q = 0; q < A_PER; ++q) {
            const int e = t + q * NT;
            as_[e % BK][e / BK] = a_next[q];
        }
        if (VEC4) {
#pragma unroll
            for (int q = 0; q < B_PER; q += 4) {
                const int e = t * 4 + q * NT;
                *reinterpret_cast<float4 *>(&bs_[e / BT][e % BT]) =
                    make_float4(b_next[q], b_next[q + 1], b_next[q + 2], b_next[q + 3]);
            }
        } else {
#pragma unroll
            for (int q = 0; q < B_PER; ++q) {
                const int e = t + q * NT;
                bs_[e / BT][e % BT] = b_next[q];
            }
        }
    };

    fetch(0);
    for (int k0 = 0; k0 < K; k0 += BK) {
        stash();
        __syncthreads();
        if (PREFETCH && k0 + BK < K)
            fetch(k0 + BK);   // in flight while we multiply
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
            if (VEC4 && TM == 4) {
                float4 v = *reinterpret_cast<const float4 *>(&as_[k][rr]);
                a[0] = v.x; a[1] = v.y; a[2] = v.z; a[3] = v.w;
            } else {
#pragma unroll
                for (int i = 0; i < TM; ++i)
                    a[i] = as_[k][rr + i];
            }
            if (VEC4 && TN == 4) {
                float4 v = *reinterpret_cast<const float4 *>(&bs_[k][cc]);
                b[0] = v.x; b[1] = v.y; b[2] = v.z; b[3] = v.w;
            } else {
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    b[j] = bs_[k][cc + j];
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j)
                    acc[i][j] += a[i] * b[j];
        }
        __syncthreads();
        if (!PREFETCH && k0 + BK < K)
            fetch(k0 + BK);
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) {
            const long long r = m0 + rr + i, c = n0 + cc + j;
            if (!CHECKED || (r < M && c < N))
                C[r * N + c] = acc[i][j];
        }
}

__global__ void sgemm_v5(const float *A, const float *B, float *C, int M, int N, int K)
{
    tile_body<8, 1, true, false, false, false>(A, B, C, M, N, K, blockIdx.y * (long long)BT, blockIdx.x * (long long)BT);
}

// Step 6, two launches: full tiles only ...
__global__ void sgemm_v6_inside(const float *A, const float *B, float *C, int M, int N, int K)
{
    tile_body<4, 4, false, false, false, false>(A, B, C, M, N, K, blockIdx.y * (long long)BT, blockIdx.x * (long long)BT);
}
// ... then the border: blocks [0, right) of the bottom strip and every block
// row of the right strip (column block `first_col` on).
__global__ void sgemm_v6_border(const float *A, const float *B, float *C, int M, int N, int K, int full_rows,
                                int full_cols)
{
    long long bx = blockIdx.x, by = blockIdx.y;
    if (bx < full_cols && by < full_rows)
        return;   // done by sgemm_v6_inside
    tile_body<4, 4, true, false, false, false>(A, B, C, M, N, K, by * BT, bx * BT);
}

template <bool V>
__global__ void sgemm_v7(const float *A, const float *B, float *C, int M, int N, int K)
{
    tile_body<4, 4, true, V, false, false>(A, B, C, M, N, K, blockIdx.y * (long long)BT, blockIdx.x * (long long)BT);
}
template <bool V>
__global__ void sgemm_v8(const float *A, const float *B, float *C, int M, int N, int K)
{
    tile_body<4, 4, true, V, true, false>(A, B, C, M, N, K, blockIdx.y * (long long)BT, blockIdx.x * (long long)BT);
}
template <bool V>
__global__ void sgemm_v9(const float *A, const float *B, float *C, int M, int N, int K)
{
    tile_body<4, 4, true, V, true, true>(A, B, C, M, N, K, blockIdx.y * (long long)BT, blockIdx.x * (long long)BT);
}

// The tile side for step 4: the candidate that wastes the fewest threads on
// the border, the larger on a tie.
int pick_side(int M, int N)
{
    std::vector<int> sides = {8, 16, 32};
    auto waste = [&](int s) {
        long long rows = (M + s - 1) / s * (long long)s, cols = (N + s - 1) / s * (long long)s;
        return rows * cols - (long long)M * N;
    };
    std::sort(sides.begin(), sides.end(), [&](int a, int b) {
        long long wa = waste(a), wb = waste(b);
        return wa != wb ? wa < wb : a > b;
    });
    return sides.front();
}

dim3 tiles64(int M, int N) { return dim3((N + BT - 1) / BT, (M + BT - 1) / BT); }

}  // namespace

extern "C" cudaError_t matmul_step(int step, const float *A, const float *B, float *C, int M, int N, int K)
{
    if (M < 1 || N < 1 || K < 1 || M > MATMUL_MAX_SIDE || N > MATMUL_MAX_SIDE || K > MATMUL_MAX_SIDE ||
        (long long)M * K >= (1LL << 31) || (long long)K * N >= (1LL << 31) || (long long)M * N >= (1LL << 31))
        return cudaErrorInvalidValue;
    const bool aligned = K % 4 == 0 && N % 4 == 0;
    switch (step) {
    case 1:
        one_per_thread<true><<<dim3((M + 31) / 32, (N + 7) / 8), dim3(32, 8)>>>(A, B, C, M, N, K);
        break;
    case 2:
        one_per_thread<false><<<dim3((N + 31) / 32, (M + 7) / 8), dim3(32, 8)>>>(A, B, C, M, N, K);
        break;
    case 3:
        tiled32<<<dim3((N + 31) / 32, (M + 31) / 32), dim3(32, 32)>>>(A, B, C, M, N, K);
        break;
    case 4: {
        const int s = pick_side(M, N);
        tiled_dynamic<<<dim3((N + s - 1) / s, (M + s - 1) / s), dim3(s, s), 2 * sizeof(float) * s * KT4>>>(A, B, C, M,
                                                                                                         N, K);
        break;
    }
    case 5:
        sgemm_v5<<<tiles64(M, N), (BT / 8) * BT>>>(A, B, C, M, N, K);
        break;
    case 6: {
        const int full_rows = M / BT, full_cols = N / BT;
        if (full_rows > 0 && full_cols > 0) {
            sgemm_v6_inside<<<dim3(full_cols, full_rows), (BT / 4) * (BT / 4)>>>(A, B, C, M, N, K);
            cudaError_t e = cudaGetLastError();
            if (e != cudaSuccess)
                return e;
        }
        if (full_rows * BT < M || full_cols * BT < N)
            sgemm_v6_border<<<tiles64(M, N), (BT / 4) * (BT / 4)>>>(A, B, C, M, N, K, full_rows, full_cols);
        break;
    }
    case 7:
        if (aligned)
            sgemm_v7<true><<<tiles64(M, N), 256>>>(A, B, C, M, N, K);
        else
            sgemm_v7<false><<<tiles64(M, N), 256>>>(A, B, C, M, N, K);
        break;
    case 8:
        if (aligned)
            sgemm_v8<true><<<tiles64(M, N), 256>>>(A, B, C, M, N, K);
        else
            sgemm_v8<false><<<tiles64(M, N), 256>>>(A, B, C, M, N, K);
        break;
    case 9:
        if (aligned)
            sgemm_v9<true><<<tiles64(M, N), 256>>>(A, B, C, M, N, K);
        else
            sgemm_v9<false><<<tiles64(M, N), 256>>>(A, B, C, M, N, K);
        break;
    default:
        return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}
