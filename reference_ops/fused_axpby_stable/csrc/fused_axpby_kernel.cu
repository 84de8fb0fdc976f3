// fused_axpby_kernel.cu: the CUDA kernels of fused_axpby and their launchers.
//
// Pure CUDA on raw pointers: no torch headers, so this file compiles in a few seconds
// and editing a kernel rebuilds quickly. csrc/fused_axpby.cpp checks the inputs, makes
// them contiguous or describes how they broadcast, picks the dtype and passes the current stream.
// The formulas live in csrc/fused_axpby_math.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "fused_axpby_kernel.h"
#include "fused_axpby_math.h"

namespace fused_axpby {
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
    out.v[k] = from_acc<Out<T>>(forward<Acc<T>>(s.a, to_acc(in.x.v[k]), to_acc(in.b.v[k])));
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
        loaded[u].b = reinterpret_cast<const V*>(in.b)[i];
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
    out[i] = from_acc<Out<T>>(forward<Acc<T>>(s.a, to_acc(in.x[i]), to_acc(in.b[i])));
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
    grads.x.v[k] = from_acc<T>(grad_wrt_x<Acc<T>>(g, s.a));
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
    const Grads<V> grads_v = grads_vector(grad_v, GradReads<V>{}, s);
    reinterpret_cast<V*>(grads.x)[i] = grads_v.x;
  }
#pragma unroll 1
  for (int64_t i = n_vec * kVec + first; i < n; i += stride) {
    const Acc<T> g = to_acc(grad[i * grad_step]);
    grads.x[i] = from_acc<T>(grad_wrt_x<Acc<T>>(g, s.a));
  }
}

// Broadcast: each tensor is read at its own offset of output element i (see Broadcast in
// csrc/fused_axpby_kernel.h); the output and the gradients are written at i.

// Division by each merged dimension's size, fixed at launch: a multiply and a shift in
// place of a 32-bit division's dozens of instructions (the method of PyTorch's IntDivider,
// after Granlund and Montgomery). Exact for numerators below 2^31.
struct Dividers {
  uint32_t magic[kMaxDims];
  uint32_t shift[kMaxDims];
};

Dividers dividers_for(const int64_t* sizes, int ndim) {
  Dividers div{};
  for (int d = 0; d < ndim; ++d) {
    if (sizes[d] >= (int64_t(1) << 31)) continue;  // the kernels then index in 64 bits
    const uint64_t divisor = uint64_t(sizes[d]);
    uint32_t shift = 0;
    while ((uint64_t(1) << shift) < divisor) ++shift;
    div.shift[d] = shift;
    div.magic[d] =
        uint32_t(((uint64_t(1) << 32) * ((uint64_t(1) << shift) - divisor)) / divisor + 1);
  }
  return div;
}

// The offsets of output element i in every tensor b describes: one division per merged
// dimension but the outermost (a bias over rows: one). Index is uint32_t where every
// element and offset fits in 31 bits (the divisions are then Dividers'), else int64_t.
template <typename Index, typename Strides, typename AddOffsets>
__device__ __forceinline__ void for_each_dim(const Broadcast<Strides>& b, const Dividers& div,
                                             Index i, AddOffsets add) {
#pragma unroll
  for (int d = 0; d < kMaxDims; ++d) {
    if (d == b.ndim) break;
    Index index = i;
    if (d + 1 < b.ndim) {
      Index rest;
      if constexpr (sizeof(Index) == 4) {
        rest = (__umulhi(i, div.magic[d]) + i) >> div.shift[d];
      } else {
        rest = i / b.sizes[d];
      }
      index = i - rest * Index(b.sizes[d]);
      i = rest;
    }
    add(index, b.strides[d]);
  }
}

template <typename Index>
__device__ __forceinline__ Tensors<Index> offsets(const Broadcast<Tensors<int64_t>>& b,
                                                  const Dividers& div, Index i) {
  Tensors<Index> at{};
  for_each_dim(b, div, i, [&](Index index, const Tensors<int64_t>& stride) {
    at.x += index * Index(stride.x);
    at.b += index * Index(stride.b);
  });
  return at;
}

// grad's offset, then those of the tensors the gradient formulas read.
template <typename Index>
struct GradOffsets {
  Index grad;
  GradReads<Index> reads;
};

template <typename Index>
__device__ __forceinline__ GradOffsets<Index> offsets(const Broadcast<GradStrides>& b,
                                                      const Dividers& div, Index i) {
  GradOffsets<Index> at{};
  for_each_dim(b, div, i, [&](Index index, const GradStrides& stride) {
    at.grad += index * Index(stride.grad);
  });
  return at;
}

// kVec elements from p on: a vector where the tensor steps by 1 along the innermost
// dimension, its one value repeated where it broadcasts there (step 0).
template <int kVec, typename T>
__device__ __forceinline__ Vec<T, kVec> load_vector(const T* p, int64_t step) {
  if (step != 0) return *reinterpret_cast<const Vec<T, kVec>*>(p);
  Vec<T, kVec> v;
#pragma unroll
  for (int k = 0; k < kVec; ++k) v.v[k] = p[0];
  return v;
}

// kVec output elements per work item, from one vector or one repeated value of each input
// (see vector_width); kVec 1 reads any layout.
template <typename T, typename Index, int kVec>
__global__ void __launch_bounds__(kThreads)
    forward_broadcast_kernel(const Tensors<const T*> in, Out<T>* __restrict__ out, int64_t n,
                             const Broadcast<Tensors<int64_t>> b, const Dividers div,
                             const Scalars<Acc<T>> s) {
  using V = Vec<T, kVec>;
  using VOut = Vec<Out<T>, kVec>;
  const int64_t n_vec = n / kVec;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
#pragma unroll 1  // no trip-count division (see forward_kernel)
  for (int64_t i = first; i < n_vec; i += stride) {
    const Tensors<Index> at = offsets(b, div, Index(i * kVec));
    Tensors<V> loaded;
    loaded.x = load_vector<kVec>(in.x + at.x, b.strides[0].x);
    loaded.b = load_vector<kVec>(in.b + at.b, b.strides[0].b);
    reinterpret_cast<VOut*>(out)[i] = forward_vector(loaded, s);
  }
}

template <typename T, typename Index, int kVec>
__global__ void __launch_bounds__(kThreads)
    backward_broadcast_kernel(const T* __restrict__ grad, const GradReads<const T*> reads,
                              const Grads<T*> grads, int64_t n, const Broadcast<GradStrides> b,
                              const Dividers div, const Scalars<Acc<T>> s) {
  using V = Vec<T, kVec>;
  const int64_t n_vec = n / kVec;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
#pragma unroll 1
  for (int64_t i = first; i < n_vec; i += stride) {
    const GradOffsets<Index> at = offsets(b, div, Index(i * kVec));
    const V grad_v = load_vector<kVec>(grad + at.grad, b.strides[0].grad);
    const Grads<V> grads_v = grads_vector(grad_v, GradReads<V>{}, s);
    reinterpret_cast<V*>(grads.x)[i] = grads_v.x;
  }
}

// Whether a tensor's offsets stay below 2^31 (with n, the kernels then index in 32 bits).
template <typename Strides, typename StrideOf>
bool fits_31_bits(const Broadcast<Strides>& b, StrideOf stride_of) {
  int64_t last = 0;  // the largest offset: strides are never negative
  for (int d = 0; d < b.ndim; ++d) last += (b.sizes[d] - 1) * stride_of(b.strides[d]);
  return last < (int64_t(1) << 31);
}

// Whether a tensor can be read `width` elements at a time: it broadcasts along the
// innermost dimension (one value per vector), or steps by 1 there from a start aligned to
// the vector with every outer stride a multiple of width (each vector starts aligned).
template <typename Strides, typename T, typename StrideOf>
bool reads_as_vectors(const T* p, const Broadcast<Strides>& b, int width, StrideOf stride_of) {
  if (stride_of(b.strides[0]) == 0) return true;
  if (stride_of(b.strides[0]) != 1 || reinterpret_cast<uintptr_t>(p) % (sizeof(T) * width) != 0) {
    return false;
  }
  for (int d = 1; d < b.ndim; ++d) {
    if (stride_of(b.strides[d]) % width != 0) return false;
  }
  return true;
}

// The widest vector, up to `widest` elements and halving down to 1, that divides the
// innermost dimension and that every tensor can be read and written in.
template <typename Strides, typename Fits>
int vector_width(const Broadcast<Strides>& b, int widest, Fits fits) {
  int width = widest;
  while (width > 1 && (b.ndim == 0 || b.sizes[0] % width != 0 || !fits(width))) width /= 2;
  return width;
}

// Launches kernel<kVec> for the width chosen: each width its own instantiation, so that the
// vectors' sizes are known to the compiler.
template <int kVec, typename Launch>
void launch_width(int width, Launch launch) {
  if constexpr (kVec > 1) {
    if (width < kVec) return launch_width<kVec / 2>(width, launch);
  }
  launch(std::integral_constant<int, kVec>{});
}

}  // namespace

template <typename T>
cudaError_t launch_forward(Tensors<const T*> in, Out<T>* out, int64_t n, Scalars<double> s,
                           cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  // Elements per thread on the vectorized path.
  constexpr int kPerThread = VecWidth<T>::value * ItemsPerThread<T>::value;
  const bool vectorized = is_aligned16(in.x) && is_aligned16(in.b) && is_aligned16(out);
  const int blocks = num_blocks(vectorized ? (n + kPerThread - 1) / kPerThread : n);
  forward_kernel<T>
      <<<blocks, kThreads, 0, stream>>>(in, out, n, vectorized, Scalars<Acc<T>>{Acc<T>(s.a)});
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_backward(const T* grad, int64_t grad_step, GradReads<const T*> reads,
                            Grads<T*> grads, int64_t n, Scalars<double> s, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  constexpr int kVec = 16 / sizeof(T);
  const bool vectorized = (grad_step == 0 || is_aligned16(grad)) && is_aligned16(grads.x);
  const int blocks = num_blocks(vectorized ? (n + kVec - 1) / kVec : n);
  backward_kernel<T><<<blocks, kThreads, 0, stream>>>(grad, grad_step, reads, grads, n, vectorized,
                                                      Scalars<Acc<T>>{Acc<T>(s.a)});
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_forward_broadcast(Tensors<const T*> in, Out<T>* out, int64_t n,
                                     const Broadcast<Tensors<int64_t>>& b, Scalars<double> s,
                                     cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  constexpr int kWidest = VecWidth<T>::value;
  const int width = vector_width(b, kWidest, [&](int width) {
    return reinterpret_cast<uintptr_t>(out) % (sizeof(Out<T>) * width) == 0 &&
           reads_as_vectors(in.x, b, width, [](const Tensors<int64_t>& st) { return st.x; }) &&
           reads_as_vectors(in.b, b, width, [](const Tensors<int64_t>& st) { return st.b; });
  });
  const bool narrow = n < (int64_t(1) << 31) &&
                      fits_31_bits(
                          b, [](const Tensors<int64_t>& st) { return st.x; }) &&
                      fits_31_bits(b, [](const Tensors<int64_t>& st) { return st.b; });
  const int blocks = num_blocks(n / width);
  const Dividers div = dividers_for(b.sizes, b.ndim);
  launch_width<kWidest>(width, [&](auto vec) {
    if (narrow) {
      forward_broadcast_kernel<T, uint32_t, vec>
          <<<blocks, kThreads, 0, stream>>>(in, out, n, b, div, Scalars<Acc<T>>{Acc<T>(s.a)});
    } else {
      forward_broadcast_kernel<T, int64_t, vec>
          <<<blocks, kThreads, 0, stream>>>(in, out, n, b, div, Scalars<Acc<T>>{Acc<T>(s.a)});
    }
  });
  return cudaGetLastError();
}

template <typename T>
cudaError_t launch_backward_broadcast(const T* grad, GradReads<const T*> reads, Grads<T*> grads,
                                      int64_t n, const Broadcast<GradStrides>& b, Scalars<double> s,
                                      cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  constexpr int kWidest = 16 / sizeof(T);
  const int width = vector_width(b, kWidest, [&](int width) {
    return reads_as_vectors(grad, b, width, [](const GradStrides& st) { return st.grad; }) &&
           reinterpret_cast<uintptr_t>(grads.x) % (sizeof(T) * width) == 0;
  });
  const bool narrow =
      n < (int64_t(1) << 31) && fits_31_bits(b, [](const GradStrides& st) { return st.grad; });
  const int blocks = num_blocks(n / width);
  const Dividers div = dividers_for(b.sizes, b.ndim);
  launch_width<kWidest>(width, [&](auto vec) {
    if (narrow) {
      backward_broadcast_kernel<T, uint32_t, vec><<<blocks, kThreads, 0, stream>>>(
          grad, reads, grads, n, b, div, Scalars<Acc<T>>{Acc<T>(s.a)});
    } else {
      backward_broadcast_kernel<T, int64_t, vec><<<blocks, kThreads, 0, stream>>>(
          grad, reads, grads, n, b, div, Scalars<Acc<T>>{Acc<T>(s.a)});
    }
  });
  return cudaGetLastError();
}

// The dtypes this op was generated for.
template cudaError_t launch_forward<float>(Tensors<const float*>, Out<float>*, int64_t,
                                           Scalars<double>, cudaStream_t);
template cudaError_t launch_backward<float>(const float*, int64_t, GradReads<const float*>,
                                            Grads<float*>, int64_t, Scalars<double>, cudaStream_t);
template cudaError_t launch_forward_broadcast<float>(Tensors<const float*>, Out<float>*, int64_t,
                                                     const Broadcast<Tensors<int64_t>>&,
                                                     Scalars<double>, cudaStream_t);
template cudaError_t launch_backward_broadcast<float>(const float*, GradReads<const float*>,
                                                      Grads<float*>, int64_t,
                                                      const Broadcast<GradStrides>&,
                                                      Scalars<double>, cudaStream_t);
template cudaError_t launch_forward<double>(Tensors<const double*>, Out<double>*, int64_t,
                                            Scalars<double>, cudaStream_t);
template cudaError_t launch_backward<double>(const double*, int64_t, GradReads<const double*>,
                                             Grads<double*>, int64_t, Scalars<double>,
                                             cudaStream_t);
template cudaError_t launch_forward_broadcast<double>(Tensors<const double*>, Out<double>*, int64_t,
                                                      const Broadcast<Tensors<int64_t>>&,
                                                      Scalars<double>, cudaStream_t);
template cudaError_t launch_backward_broadcast<double>(const double*, GradReads<const double*>,
                                                       Grads<double*>, int64_t,
                                                       const Broadcast<GradStrides>&,
                                                       Scalars<double>, cudaStream_t);
template cudaError_t launch_forward<__half>(Tensors<const __half*>, Out<__half>*, int64_t,
                                            Scalars<double>, cudaStream_t);
template cudaError_t launch_backward<__half>(const __half*, int64_t, GradReads<const __half*>,
                                             Grads<__half*>, int64_t, Scalars<double>,
                                             cudaStream_t);
template cudaError_t launch_forward_broadcast<__half>(Tensors<const __half*>, Out<__half>*, int64_t,
                                                      const Broadcast<Tensors<int64_t>>&,
                                                      Scalars<double>, cudaStream_t);
template cudaError_t launch_backward_broadcast<__half>(const __half*, GradReads<const __half*>,
                                                       Grads<__half*>, int64_t,
                                                       const Broadcast<GradStrides>&,
                                                       Scalars<double>, cudaStream_t);
template cudaError_t launch_forward<__nv_bfloat16>(Tensors<const __nv_bfloat16*>,
                                                   Out<__nv_bfloat16>*, int64_t, Scalars<double>,
                                                   cudaStream_t);
template cudaError_t launch_backward<__nv_bfloat16>(const __nv_bfloat16*, int64_t,
                                                    GradReads<const __nv_bfloat16*>,
                                                    Grads<__nv_bfloat16*>, int64_t, Scalars<double>,
                                                    cudaStream_t);
template cudaError_t launch_forward_broadcast<__nv_bfloat16>(Tensors<const __nv_bfloat16*>,
                                                             Out<__nv_bfloat16>*, int64_t,
                                                             const Broadcast<Tensors<int64_t>>&,
                                                             Scalars<double>, cudaStream_t);
template cudaError_t launch_backward_broadcast<__nv_bfloat16>(const __nv_bfloat16*,
                                                              GradReads<const __nv_bfloat16*>,
                                                              Grads<__nv_bfloat16*>, int64_t,
                                                              const Broadcast<GradStrides>&,
                                                              Scalars<double>, cudaStream_t);

}  // namespace fused_axpby
