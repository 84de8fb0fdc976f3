// e_rs_kernel.cu: the CUDA kernels of e_rs and their launchers.
//
// Pure CUDA on raw pointers: no torch headers, so this file compiles in about a second
// and editing a kernel rebuilds quickly. csrc/e_rs.cpp checks the inputs, makes
// them contiguous, picks the dtype and passes the current stream. The formulas live in
// csrc/e_rs_math.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "e_rs_kernel.h"
#include "e_rs_math.h"

namespace e_rs {
namespace {

// Arithmetic happens in Acc<T>: double where the input or the output is double, float
// for everything else (float, the half types, integers).
template <typename T>
using Acc =
    std::conditional_t<std::is_same_v<T, double> || std::is_same_v<Out<T>, double>, double, float>;

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
// 16-byte ones for a wider type.
template <typename T, int kVec>
struct alignas(sizeof(T) * kVec < 16 ? sizeof(T) * kVec : 16) Vec {
  T v[kVec];
};

constexpr int kThreads = 256;
// Blocks for a one-dimensional grid: gridDim.x's limit. Past it (2^39 vectors), the
// grid-stride loops below take over.
constexpr int64_t kMostBlocks = 2147483647;

bool is_aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// One thread per work item: every load is issued at once and finished blocks make way for
// new ones. Measured on an H200: a grid that covers the work
// moves 101% of a device copy's bandwidth for relu, a grid of 8 resident blocks per
// multiprocessor looping over it 93%.
int num_blocks(int64_t work_items) {
  const int64_t wanted = (work_items + kThreads - 1) / kThreads;
  return int(wanted < 1 ? 1 : (wanted < kMostBlocks ? wanted : kMostBlocks));
}

// Work items (vectors) per thread on the vectorized path, kThreads apart so
// that each load and store is one contiguous access of the whole warp: two where the
// input is narrower than the output, whose loads are then narrower than 16 bytes; with
// two in flight, uint8 -> float32 moved 95.5% of a device copy's bandwidth on an H200,
// with one 90%.
template <typename T>
struct ItemsPerThread {
  static constexpr int value = sizeof(T) < sizeof(Out<T>) ? 2 : 1;
};
// Elements per thread on the vectorized path: 16 bytes of the wider of the input and
// output types, so that each thread stores at most one 16-byte vector and a warp's store
// covers whole 32-byte sectors. Sized by the narrower type instead (uint16 -> float32:
// one 16-byte load, two 16-byte stores), each store instruction of a warp wrote half of
// 32 sectors and normalize_volume moved 64% of a device copy's bandwidth on an H200, 76%
// with the division taken out; sized by the wider, 97%.
template <typename T>
struct VecWidth {
  static constexpr int value = 16 / (sizeof(T) > sizeof(Out<T>) ? sizeof(T) : sizeof(Out<T>));
};

// The formula over kVec elements of each input: kVec output elements.
template <typename T, int kVec>
__device__ __forceinline__ Vec<Out<T>, kVec> forward_vector(const Tensors<Vec<T, kVec>>& in,
                                                            const Scalars<Acc<T>>& s) {
  Vec<Out<T>, kVec> out;
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    out.v[k] = from_acc<Out<T>>(forward<Acc<T>>(to_acc(in.x.v[k])));
  }
  return out;
}

// With `vectorized` (every pointer 16-byte aligned), elements [0, n / kVec * kVec) move
// kVec at a time and the remaining n % kVec one at a time; without it (views with a
// storage offset), all of them one at a time. One kernel for both halves the build time
// of a second instantiation; the branch is uniform across the grid.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    forward_kernel(const Tensors<const T*> in, Out<T>* __restrict__ out, int64_t n, bool vectorized,
                   const Scalars<Acc<T>> s) {
  constexpr int kVec = VecWidth<T>::value;
  constexpr int kPer = ItemsPerThread<T>::value;
  using V = Vec<T, kVec>;
  using VOut = Vec<Out<T>, kVec>;
  const int64_t n_vec = vectorized ? n / kVec : 0;
  const int64_t block_vecs = int64_t(kThreads) * kPer;  // vectors per block and pass
  // unroll 1: an unrolled grid-stride loop starts with a 64-bit division for its trip
  // count, paid per thread; one pass per thread is the common case here.
#pragma unroll 1
  for (int64_t first = blockIdx.x * block_vecs + threadIdx.x; first < n_vec;
       first += gridDim.x * block_vecs) {
    // Every load before the first use: kPer loads of each input in flight.
    Tensors<V> loaded[kPer];
#pragma unroll
    for (int u = 0; u < kPer; ++u) {
      const int64_t i = first + u * kThreads;
      if (i < n_vec) {
        loaded[u].x = reinterpret_cast<const V*>(in.x)[i];
      }
    }
#pragma unroll
    for (int u = 0; u < kPer; ++u) {
      const int64_t i = first + u * kThreads;
      if (i < n_vec) {
        reinterpret_cast<VOut*>(out)[i] = forward_vector(loaded[u], s);
      }
    }
  }
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
#pragma unroll 1
  for (int64_t i = n_vec * kVec + first; i < n; i += stride) {
    out[i] = from_acc<Out<T>>(forward<Acc<T>>(to_acc(in.x[i])));
  }
}

}  // namespace

template <typename T>
cudaError_t launch_forward(Tensors<const T*> in, Out<T>* out, int64_t n, Scalars<double> s,
                           cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  // Elements per thread on the vectorized path.
  constexpr int kPerThread = VecWidth<T>::value * ItemsPerThread<T>::value;
  const bool vectorized = is_aligned16(in.x) && is_aligned16(out);
  const int blocks = num_blocks(vectorized ? (n + kPerThread - 1) / kPerThread : n);
  forward_kernel<T><<<blocks, kThreads, 0, stream>>>(in, out, n, vectorized, Scalars<Acc<T>>{});
  return cudaGetLastError();
}

// The dtypes this op was generated for.
template cudaError_t launch_forward<float>(Tensors<const float*>, Out<float>*, int64_t,
                                           Scalars<double>, cudaStream_t);
template cudaError_t launch_forward<double>(Tensors<const double*>, Out<double>*, int64_t,
                                            Scalars<double>, cudaStream_t);

}  // namespace e_rs
