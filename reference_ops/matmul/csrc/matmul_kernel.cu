// matmul_kernel.cu: the CUDA kernels of matmul and their launchers.
//
// Pure CUDA on raw pointers: no torch headers, so this file compiles in about a second
// and editing a kernel rebuilds quickly. csrc/matmul.cpp checks the inputs, makes
// them contiguous, picks the dtype and passes the current stream. The formulas live in
// csrc/matmul_math.h.
#include "matmul_kernel.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace matmul {
namespace {

// Arithmetic happens in Acc<T>: double where the input or the output is double, float
// for everything else (float, the half types, integers).
template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, double> || std::is_same_v<Out<T>, double>,
                               double, float>;

// Explicit conversions: torch compiles CUDA code with __CUDA_NO_HALF_CONVERSIONS__ and
// __CUDA_NO_BFLOAT16_CONVERSIONS__, so the half types have no implicit casts.
__device__ __forceinline__ float to_acc(float v) { return v; }
__device__ __forceinline__ double to_acc(double v) { return v; }
__device__ __forceinline__ float to_acc(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_acc(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename I>  // integers
__device__ __forceinline__ float to_acc(I v) {
  return static_cast<float>(v);
}

// To an output element; to integers by truncation toward zero, as C++ converts.
template <typename O, typename A>
__device__ __forceinline__ O from_acc(A v) {
  return static_cast<O>(v);
}
template <>
__device__ __forceinline__ __half from_acc<__half, float>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_acc<__nv_bfloat16, float>(float v) {
  return __float2bfloat16_rn(v);
}

// C = A · B, A of M×K and B of K×N with any strides (so the backward pass reads Aᵀ and Bᵀ
// as views, without copies), C contiguous M×N. Each block computes a kTile×kTile tile of C,
// stepping over K kDepth at a time through shared memory; each thread computes kPer×kPer
// elements of the tile, strided by kThreadsPerSide so that a warp's shared-memory reads
// and global stores are consecutive. Out-of-range loads read zero: any M, N, K works.
constexpr int kTile = 64;
constexpr int kDepth = 16;
constexpr int kThreadsPerSide = 16;
constexpr int kPer = kTile / kThreadsPerSide;  // 4
constexpr int kMatmulThreads = kThreadsPerSide * kThreadsPerSide;

template <typename T>
__global__ void __launch_bounds__(kMatmulThreads) matmul_kernel(
    const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int64_t m, int64_t n,
    int64_t k, int64_t a_row_stride, int64_t a_col_stride, int64_t b_row_stride,
    int64_t b_col_stride) {
  using A = Acc<T>;
  // +1 column: threads of a warp that read one tile row hit different banks.
  __shared__ A a_tile[kDepth][kTile + 1];  // a_tile[kk][row]: A's tile, transposed
  __shared__ A b_tile[kDepth][kTile + 1];  // b_tile[kk][col]
  const int tx = threadIdx.x % kThreadsPerSide;
  const int ty = threadIdx.x / kThreadsPerSide;
  const int64_t row0 = int64_t(blockIdx.y) * kTile;
  const int64_t col0 = int64_t(blockIdx.x) * kTile;
  A sum[kPer][kPer] = {};
  for (int64_t k0 = 0; k0 < k; k0 += kDepth) {
    for (int e = threadIdx.x; e < kTile * kDepth; e += kMatmulThreads) {
      const int row = e / kDepth, kk = e % kDepth;
      const int64_t gr = row0 + row, gk = k0 + kk;
      a_tile[kk][row] = gr < m && gk < k ? to_acc(a[gr * a_row_stride + gk * a_col_stride]) : A(0);
    }
    for (int e = threadIdx.x; e < kTile * kDepth; e += kMatmulThreads) {
      const int kk = e / kTile, col = e % kTile;
      const int64_t gk = k0 + kk, gc = col0 + col;
      b_tile[kk][col] = gk < k && gc < n ? to_acc(b[gk * b_row_stride + gc * b_col_stride]) : A(0);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kDepth; ++kk) {
      A a_frag[kPer], b_frag[kPer];
#pragma unroll
      for (int i = 0; i < kPer; ++i) a_frag[i] = a_tile[kk][ty + i * kThreadsPerSide];
#pragma unroll
      for (int j = 0; j < kPer; ++j) b_frag[j] = b_tile[kk][tx + j * kThreadsPerSide];
#pragma unroll
      for (int i = 0; i < kPer; ++i) {
#pragma unroll
        for (int j = 0; j < kPer; ++j) sum[i][j] += a_frag[i] * b_frag[j];
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kPer; ++i) {
    const int64_t row = row0 + ty + i * kThreadsPerSide;
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int64_t col = col0 + tx + j * kThreadsPerSide;
      if (row < m && col < n) c[row * n + col] = from_acc<T>(sum[i][j]);
    }
  }
}

}  // namespace

template <typename T>
cudaError_t matmul_cuda(const T* a, const T* b, T* c, int64_t m, int64_t n, int64_t k,
                        int64_t a_row_stride, int64_t a_col_stride, int64_t b_row_stride,
                        int64_t b_col_stride, cudaStream_t stream) {
  if (m == 0 || n == 0) return cudaSuccess;
  const int64_t row_tiles = (m + kTile - 1) / kTile;
  if (row_tiles > 65535) return cudaErrorInvalidConfiguration;  // gridDim.y's limit
  const dim3 grid(unsigned((n + kTile - 1) / kTile), unsigned(row_tiles));
  matmul_kernel<T><<<grid, kMatmulThreads, 0, stream>>>(a, b, c, m, n, k, a_row_stride, a_col_stride,
                                                         b_row_stride, b_col_stride);
  return cudaGetLastError();
}

// The dtypes this op was generated for.
template cudaError_t matmul_cuda<float>(const float*, const float*, float*, int64_t,
                                          int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, cudaStream_t);
template cudaError_t matmul_cuda<double>(const double*, const double*, double*, int64_t,
                                          int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, cudaStream_t);
template cudaError_t matmul_cuda<__half>(const __half*, const __half*, __half*, int64_t,
                                          int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, cudaStream_t);
template cudaError_t matmul_cuda<__nv_bfloat16>(const __nv_bfloat16*, const __nv_bfloat16*, __nv_bfloat16*, int64_t,
                                          int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, cudaStream_t);


}  // namespace matmul
