// relu_kernel.cu: the CUDA kernels of relu and their launchers.
//
// Pure CUDA on raw pointers: no torch headers, so this file compiles in about a second
// and editing a kernel rebuilds quickly. csrc/relu.cpp checks the inputs, makes
// them contiguous, picks the dtype and passes the current stream. The formulas live in
// csrc/relu_math.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "relu_kernel.h"
#include "relu_math.h"

namespace relu {
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

// The gradient formulas over kVec elements of grad and of each tensor they read.
template <typename T, int kVec>
__device__ __forceinline__ Grads<Vec<T, kVec>> grads_vector(const Vec<T, kVec>& grad,
                                                            const GradReads<Vec<T, kVec>>& reads,
                                                            const Scalars<Acc<T>>& s) {
  Grads<Vec<T, kVec>> grads;
#pragma unroll
  for (int k = 0; k < kVec; ++k) {
    const Acc<T> g = to_acc(grad.v[k]);
    grads.x.v[k] = from_acc<T>(grad_wrt_x<Acc<T>>(g, to_acc(reads.x.v[k])));
  }
  return grads;
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    backward_kernel(const T* __restrict__ grad, int64_t grad_step, const GradReads<const T*> reads,
                    const Grads<T*> grads, int64_t n, bool vectorized, const Scalars<Acc<T>> s) {
  constexpr int kVec = 16 / sizeof(T);
  using V = Vec<T, kVec>;
  const int64_t n_vec = vectorized ? n / kVec : 0;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
#pragma unroll 1  // no trip-count division (see forward_kernel)
  for (int64_t i = first; i < n_vec; i += stride) {
    V grad_v;
    if (grad_step == 0) {  // one value for every element (uniform across the grid)
#pragma unroll
      for (int k = 0; k < kVec; ++k) grad_v.v[k] = grad[0];
    } else {
      grad_v = reinterpret_cast<const V*>(grad)[i];
    }
    const GradReads<V> reads_v{reinterpret_cast<const V*>(reads.x)[i]};
    const Grads<V> grads_v = grads_vector(grad_v, reads_v, s);
    reinterpret_cast<V*>(grads.x)[i] = grads_v.x;
  }
#pragma unroll 1
  for (int64_t i = n_vec * kVec + first; i < n; i += stride) {
    const Acc<T> g = to_acc(grad[i * grad_step]);
    grads.x[i] = from_acc<T>(grad_wrt_x<Acc<T>>(g, to_acc(reads.x[i])));
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

template <typename T>
cudaError_t launch_backward(const T* grad, int64_t grad_step, GradReads<const T*> reads,
                            Grads<T*> grads, int64_t n, Scalars<double> s, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  constexpr int kVec = 16 / sizeof(T);
  const bool vectorized =
      (grad_step == 0 || is_aligned16(grad)) && is_aligned16(reads.x) && is_aligned16(grads.x);
  const int blocks = num_blocks(vectorized ? (n + kVec - 1) / kVec : n);
  backward_kernel<T><<<blocks, kThreads, 0, stream>>>(grad, grad_step, reads, grads, n, vectorized,
                                                      Scalars<Acc<T>>{});
  return cudaGetLastError();
}

// The dtypes this op was generated for.
template cudaError_t launch_forward<float>(Tensors<const float*>, Out<float>*, int64_t,
                                           Scalars<double>, cudaStream_t);
template cudaError_t launch_backward<float>(const float*, int64_t, GradReads<const float*>,
                                            Grads<float*>, int64_t, Scalars<double>, cudaStream_t);
template cudaError_t launch_forward<double>(Tensors<const double*>, Out<double>*, int64_t,
                                            Scalars<double>, cudaStream_t);
template cudaError_t launch_backward<double>(const double*, int64_t, GradReads<const double*>,
                                             Grads<double*>, int64_t, Scalars<double>,
                                             cudaStream_t);
template cudaError_t launch_forward<__half>(Tensors<const __half*>, Out<__half>*, int64_t,
                                            Scalars<double>, cudaStream_t);
template cudaError_t launch_backward<__half>(const __half*, int64_t, GradReads<const __half*>,
                                             Grads<__half*>, int64_t, Scalars<double>,
                                             cudaStream_t);
template cudaError_t launch_forward<__nv_bfloat16>(Tensors<const __nv_bfloat16*>,
                                                   Out<__nv_bfloat16>*, int64_t, Scalars<double>,
                                                   cudaStream_t);
template cudaError_t launch_backward<__nv_bfloat16>(const __nv_bfloat16*, int64_t,
                                                    GradReads<const __nv_bfloat16*>,
                                                    Grads<__nv_bfloat16*>, int64_t, Scalars<double>,
                                                    cudaStream_t);

// The conditions the gradients read (csrc/relu_math.h), saved by the forward as bits:
// plane c of the mask holds condition_c of element i at bit i % 32 of its word i / 32, each
// plane (n + 31) / 32 words. The backward reads them instead of x.
namespace {

// Element e of p, or the last element for e past it: the loads of a vector that overhangs
// the end stay inside the tensor, and what they read is never stored.
template <typename T>
__device__ __forceinline__ T element_or_last(const T* p, int64_t e, int64_t n) {
  return p[e < n ? e : n - 1];
}

// Each thread computes kVec elements (one 16-byte vector); the kVec bits of each condition
// that it gets are gathered across the lanes that share a 32-bit word by shuffles, so whole
// warps step through the loop together (its bound is the warp's first vector).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    forward_saving_mask_kernel(const Tensors<const T*> in, Out<T>* __restrict__ out,
                               uint32_t* __restrict__ mask, int64_t n, bool vectorized,
                               const Scalars<Acc<T>> s) {
  constexpr int kVec = VecWidth<T>::value;
  constexpr int kLanesPerWord = 32 / kVec;
  using V = Vec<T, kVec>;
  using VOut = Vec<Out<T>, kVec>;
  const int64_t words = (n + 31) / 32;
  const int64_t n_vecs = (n + kVec - 1) / kVec;
  const int lane = threadIdx.x % 32;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
#pragma unroll 1
  for (int64_t warp_first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x - lane;
       warp_first < n_vecs; warp_first += stride) {
    const int64_t first = (warp_first + lane) * kVec;  // this thread's first element
    const bool whole = vectorized && first + kVec <= n;
    Tensors<V> v;
    if (whole) {
      v.x = reinterpret_cast<const V*>(in.x)[warp_first + lane];
    } else {
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        v.x.v[k] = element_or_last(in.x, first + k, n);
      }
    }
    VOut o;
    uint32_t bits[kSavedConditions] = {};
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      o.v[k] = from_acc<Out<T>>(forward<Acc<T>>(to_acc(v.x.v[k])));
      const uint32_t in_range = first + k < n;
      bits[0] |= (in_range & uint32_t(bool(condition_0<Acc<T>>(to_acc(v.x.v[k]))))) << k;
    }
    if (whole) {
      reinterpret_cast<VOut*>(out)[warp_first + lane] = o;
    } else {
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        if (first + k < n) out[first + k] = o.v[k];
      }
    }
    // The lanes of one word put their bits side by side; an OR across them (xor-shuffles
    // stay within aligned groups of kLanesPerWord lanes) leaves the word in each.
    const int64_t word = warp_first * kVec / 32 + lane / kLanesPerWord;
#pragma unroll
    for (int c = 0; c < kSavedConditions; ++c) {
      uint32_t w = bits[c] << (lane % kLanesPerWord * kVec);
#pragma unroll
      for (int offset = 1; offset < kLanesPerWord; offset *= 2) {
        w |= __shfl_xor_sync(0xffffffffu, w, offset);
      }
      if (lane % kLanesPerWord == 0 && word < words) mask[c * words + word] = w;
    }
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    backward_from_mask_kernel(const T* __restrict__ grad, int64_t grad_step,
                              const uint32_t* __restrict__ mask, const Grads<T*> grads, int64_t n,
                              bool vectorized, const Scalars<Acc<T>> s) {
  constexpr int kVec = 16 / sizeof(T);
  using V = Vec<T, kVec>;
  const int64_t words = (n + 31) / 32;
  const int64_t n_vecs = (n + kVec - 1) / kVec;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
#pragma unroll 1
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n_vecs; i += stride) {
    const int64_t first = i * kVec;
    const bool whole = vectorized && first + kVec <= n;
    // kVec divides 32: a vector's bits lie in one word.
    uint32_t bits[kSavedConditions];
#pragma unroll
    for (int c = 0; c < kSavedConditions; ++c)
      bits[c] = mask[c * words + first / 32] >> (first % 32);
    V grad_v;
    if (grad_step == 0) {  // one value for every element (uniform across the grid)
#pragma unroll
      for (int k = 0; k < kVec; ++k) grad_v.v[k] = grad[0];
    } else if (whole) {
      grad_v = reinterpret_cast<const V*>(grad)[i];
    } else {
#pragma unroll
      for (int k = 0; k < kVec; ++k) grad_v.v[k] = element_or_last(grad, first + k, n);
    }
    Grads<V> grads_v;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const Acc<T> g = to_acc(grad_v.v[k]);
      grads_v.x.v[k] =
          from_acc<T>(grad_from_conditions_wrt_x<Acc<T>>(g, bool((bits[0] >> k) & 1u)));
    }
    if (whole) {
      reinterpret_cast<V*>(grads.x)[i] = grads_v.x;
    } else {
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        if (first + k < n) {
          grads.x[first + k] = grads_v.x.v[k];
        }
      }
    }
  }
}

}  // namespace

template <typename T>
cudaError_t launch_forward_saving_mask(Tensors<const T*> in, Out<T>* out, uint32_t* mask, int64_t n,
                                       Scalars<double> s, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  constexpr int kVec = VecWidth<T>::value;
  const bool vectorized = is_aligned16(in.x) && is_aligned16(out);
  const int blocks = num_blocks((n + kVec - 1) / kVec);
  forward_saving_mask_kernel<T>
      <<<blocks, kThreads, 0, stream>>>(in, out, mask, n, vectorized, Scalars<Acc<T>>{});
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_backward_from_mask(const T* grad, int64_t grad_step, const uint32_t* mask,
                                      Grads<T*> grads, int64_t n, Scalars<double> s,
                                      cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  constexpr int kVec = 16 / sizeof(T);
  const bool vectorized = (grad_step == 0 || is_aligned16(grad)) && is_aligned16(grads.x);
  const int blocks = num_blocks((n + kVec - 1) / kVec);
  backward_from_mask_kernel<T><<<blocks, kThreads, 0, stream>>>(grad, grad_step, mask, grads, n,
                                                                vectorized, Scalars<Acc<T>>{});
  return cudaGetLastError();
}
template cudaError_t launch_forward_saving_mask<float>(Tensors<const float*>, Out<float>*,
                                                       uint32_t*, int64_t, Scalars<double>,
                                                       cudaStream_t);
template cudaError_t launch_backward_from_mask<float>(const float*, int64_t, const uint32_t*,
                                                      Grads<float*>, int64_t, Scalars<double>,
                                                      cudaStream_t);
template cudaError_t launch_forward_saving_mask<double>(Tensors<const double*>, Out<double>*,
                                                        uint32_t*, int64_t, Scalars<double>,
                                                        cudaStream_t);
template cudaError_t launch_backward_from_mask<double>(const double*, int64_t, const uint32_t*,
                                                       Grads<double*>, int64_t, Scalars<double>,
                                                       cudaStream_t);
template cudaError_t launch_forward_saving_mask<__half>(Tensors<const __half*>, Out<__half>*,
                                                        uint32_t*, int64_t, Scalars<double>,
                                                        cudaStream_t);
template cudaError_t launch_backward_from_mask<__half>(const __half*, int64_t, const uint32_t*,
                                                       Grads<__half*>, int64_t, Scalars<double>,
                                                       cudaStream_t);
template cudaError_t launch_forward_saving_mask<__nv_bfloat16>(Tensors<const __nv_bfloat16*>,
                                                               Out<__nv_bfloat16>*, uint32_t*,
                                                               int64_t, Scalars<double>,
                                                               cudaStream_t);
template cudaError_t launch_backward_from_mask<__nv_bfloat16>(const __nv_bfloat16*, int64_t,
                                                              const uint32_t*,
                                                              Grads<__nv_bfloat16*>, int64_t,
                                                              Scalars<double>, cudaStream_t);

}  // namespace relu
