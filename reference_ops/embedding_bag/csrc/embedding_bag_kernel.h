// embedding_bag_kernel.h: embedding_bag's arguments as your kernels receive them.
//
// Generated from the signature and kept up to date by opgen update; do not edit. Your
// code (csrc/embedding_bag_cpu.h, csrc/embedding_bag_cuda.cuh) implements the functions
// declared at the end, and csrc/embedding_bag.cpp calls them with checked, contiguous
// tensors and outputs already allocated. No torch types here, so the CUDA code compiles
// with nvcc alone. T is the op's dtype: float, double, c10::Half or c10::BFloat16 on the
// CPU, and float, double, __half or __nv_bfloat16 (the same bits) in CUDA.
#pragma once

#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__) || defined(WITH_CUDA)
#include <cuda_runtime.h>
#endif
#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#define EMBEDDING_BAG_HOST_DEVICE __host__ __device__
#else
#define EMBEDDING_BAG_HOST_DEVICE
#endif

namespace embedding_bag {

// The most dimensions a tensor of embedding_bag may have: TensorArg holds its sizes in an array.
constexpr int kMaxDims = 8;

// A contiguous tensor: numel elements of type E in row-major order, and its sizes.
template <typename E>
struct TensorArg {
  E* data;
  int64_t numel;
  int dim;
  int64_t sizes[kMaxDims];

  // As in PyTorch: size(-1) is the last dimension.
  EMBEDDING_BAG_HOST_DEVICE int64_t size(int d) const { return sizes[d < 0 ? d + dim : d]; }
};

// The tensors embedding_bag reads.
template <typename T>
struct Inputs {
  TensorArg<const T> weight;         // weight: Tensor[float, 2]
  TensorArg<const int64_t> indices;  // indices: Tensor[int64, 1]
  TensorArg<const int64_t> offsets;  // offsets: Tensor[int64, 1]
};

// The scalars, as the dispatcher passes them.
struct Scalars {};

// The tensors embedding_bag writes, allocated with the shapes of the op's --returns.
template <typename T>
struct Outputs {
  TensorArg<T> out;  // (offsets.size(0), weight.size(1))
};

// The gradients of the outputs, which the backward reads (embedding_bag_backward's grad_*).
template <typename T>
struct GradOutputs {
  TensorArg<const T> out;
};

// The gradients the backward writes, each of its input's shape.
template <typename T>
struct GradInputs {
  TensorArg<T> weight;
};

// Implemented in csrc/embedding_bag_cpu.h: write every element of every output (backward: of every
// gradient).
namespace cpu {
template <typename T>
void forward(const Inputs<T>& in, const Scalars& s, const Outputs<T>& out);
template <typename T>
void backward(const GradOutputs<T>& grad, const Inputs<T>& in, const Scalars& s,
              const GradInputs<T>& grad_in);
}  // namespace cpu

#if defined(__CUDACC__) || defined(WITH_CUDA)
// Implemented in csrc/embedding_bag_cuda.cuh: enqueue the kernels on `stream`, on the current
// device (csrc/embedding_bag.cpp has set it to the inputs'); the caller checks the launch.
namespace cuda {
template <typename T>
void forward(const Inputs<T>& in, const Scalars& s, const Outputs<T>& out, cudaStream_t stream);
template <typename T>
void backward(const GradOutputs<T>& grad, const Inputs<T>& in, const Scalars& s,
              const GradInputs<T>& grad_in, cudaStream_t stream);
}  // namespace cuda
#endif

#ifdef __CUDACC__
// For CUDA kernels: arithmetic in Acc<T>, double for double and float for everything else
// (the half types have no arithmetic of their own here: torch compiles CUDA code with
// __CUDA_NO_HALF_CONVERSIONS__).
template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <typename A, typename E>
__device__ __forceinline__ A to_acc(E v) {
  if constexpr (std::is_same_v<E, __half>) {
    return static_cast<A>(__half2float(v));
  } else if constexpr (std::is_same_v<E, __nv_bfloat16>) {
    return static_cast<A>(__bfloat162float(v));
  } else {
    return static_cast<A>(v);
  }
}

// To an element type, rounding to nearest; to integers by truncation toward zero, as C++
// (and torch's .to()) converts.
template <typename E, typename A>
__device__ __forceinline__ E from_acc(A v) {
  if constexpr (std::is_same_v<E, __half>) {
    return __float2half_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<E, __nv_bfloat16>) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else {
    return static_cast<E>(v);
  }
}

// Blocks of `threads` threads for a grid-stride loop over n elements: enough to fill any
// GPU, few enough that each thread loops a few times over a large tensor.
inline unsigned int grid_for(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned int>(blocks < 65536 ? (blocks > 0 ? blocks : 1) : 65536);
}
#endif  // __CUDACC__

}  // namespace embedding_bag
