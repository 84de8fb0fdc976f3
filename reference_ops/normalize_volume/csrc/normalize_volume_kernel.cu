// normalize_volume_kernel.cu: the CUDA kernels of normalize_volume and their launchers.
//
// Pure CUDA on raw pointers: no torch headers, so this file compiles in about a second
// and editing a kernel rebuilds quickly. csrc/normalize_volume.cpp checks the inputs, makes
// them contiguous, picks the dtype and passes the current stream. The formulas live in
// csrc/normalize_volume_math.h.
#include "normalize_volume_kernel.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "normalize_volume_math.h"

namespace normalize_volume {
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

// kVec elements that move as one unit: one load or store of up to 16 bytes, or several
// 16-byte ones for a wider type (an output wider than its input, doubles in matmul).
template <typename T, int kVec>
struct alignas(sizeof(T) * kVec < 16 ? sizeof(T) * kVec : 16) Vec {
  T v[kVec];
};

// Elements per vector: enough to fill 16 bytes of the narrower type, so that every load
// and store is at least 16 bytes wide. (Sized by the wider type instead, uint16 -> float32
// moved 8-byte loads and ran at 53% of a device copy's bandwidth on an H200.)
template <typename T>
struct VecWidth {
  static constexpr int value = 16 / (sizeof(T) < sizeof(Out<T>) ? sizeof(T) : sizeof(Out<T>));
};

constexpr int kThreads = 256;
// Blocks for a one-dimensional grid: gridDim.x's limit. Past it (2^39 vectors), the
// grid-stride loops below take over.
constexpr int64_t kMostBlocks = 2147483647;

bool is_aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// One thread per work item: every load is issued at once and finished blocks make way for
// new ones. Measured on an H200 (reference_ops/perf/NOTES.md): a grid that covers the work
// moves 101% of a device copy's bandwidth for relu, a grid of 8 resident blocks per
// multiprocessor looping over it 93%.
int num_blocks(int64_t work_items) {
  const int64_t wanted = (work_items + kThreads - 1) / kThreads;
  return int(wanted < 1 ? 1 : (wanted < kMostBlocks ? wanted : kMostBlocks));
}
// With `vectorized` (every pointer 16-byte aligned), elements [0, n / kVec * kVec) move
// kVec at a time and the remaining n % kVec one at a time; without it (views with a
// storage offset), all of them one at a time. One kernel for both halves the build time
// of a second instantiation; the branch is uniform across the grid.
template <typename T>
__global__ void __launch_bounds__(kThreads) forward_kernel(const T* __restrict__ vol, Out<T>* __restrict__ out, int64_t n,
    bool vectorized, Acc<T> max_val) {
  constexpr int kVec = VecWidth<T>::value;
  using V = Vec<T, kVec>;
  using VOut = Vec<Out<T>, kVec>;
  const int64_t n_vec = vectorized ? n / kVec : 0;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  // unroll 1: an unrolled grid-stride loop starts with a 64-bit division for its trip
  // count, paid per thread; one pass per thread is the common case here.
#pragma unroll 1
  for (int64_t i = first; i < n_vec; i += stride) {
    const V vol_v = reinterpret_cast<const V*>(vol)[i];
    VOut out_v;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      out_v.v[k] = from_acc<Out<T>>(forward<Acc<T>>(to_acc(vol_v.v[k]), max_val));
    }
    reinterpret_cast<VOut*>(out)[i] = out_v;
  }
#pragma unroll 1
  for (int64_t i = n_vec * kVec + first; i < n; i += stride) {
    out[i] = from_acc<Out<T>>(forward<Acc<T>>(to_acc(vol[i]), max_val));
  }
}

}  // namespace

template <typename T>
cudaError_t forward_cuda(const T* vol, Out<T>* out, int64_t n, double max_val, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  constexpr int kVec = VecWidth<T>::value;  // elements, or pixels, per thread
  const bool vectorized = is_aligned16(vol) && is_aligned16(out);
  const int blocks = num_blocks(vectorized ? (n + kVec - 1) / kVec : n);
  forward_kernel<T><<<blocks, kThreads, 0, stream>>>(vol, out, n, vectorized, Acc<T>(max_val));
  return cudaGetLastError();
}

// The dtypes this op was generated for.
template cudaError_t forward_cuda<uint16_t>(const uint16_t*, Out<uint16_t>*, int64_t, double, cudaStream_t);

}  // namespace normalize_volume
