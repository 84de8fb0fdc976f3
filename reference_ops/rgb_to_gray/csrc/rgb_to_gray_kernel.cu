// rgb_to_gray_kernel.cu: the CUDA kernels of rgb_to_gray and their launchers.
//
// Pure CUDA on raw pointers: no torch headers, so this file compiles in about a second
// and editing a kernel rebuilds quickly. csrc/rgb_to_gray.cpp checks the inputs, makes
// them contiguous, picks the dtype and passes the current stream. The formulas live in
// csrc/rgb_to_gray_math.h.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "rgb_to_gray_kernel.h"
#include "rgb_to_gray_math.h"

namespace rgb_to_gray {
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

// To an output element; to integers by truncation toward zero, then wrapped around to the
// type's range as torch's integer arithmetic wraps (uint8: 1 - 2 is 255), through int64: the
// GPU's direct conversion clamps (1 - 2 would be 0), where the CPU's (undefined in C++) wraps.
template <typename O, typename A>
__device__ __forceinline__ O from_acc(A v) {
  if constexpr (std::is_integral_v<O>) {
    return static_cast<O>(static_cast<int64_t>(v));
  } else {
    return static_cast<O>(v);
  }
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

// Work items (vectors, pixel groups) per thread on the vectorized path, kThreads apart so
// that each load and store is one contiguous access of the whole warp: two where the
// input is narrower than the output, whose loads are then narrower than 16 bytes; with
// two in flight, uint8 -> float32 moved 95.5% of a device copy's bandwidth on an H200,
// with one 90%.
template <typename T>
struct ItemsPerThread {
  static constexpr int value = sizeof(T) < sizeof(Out<T>) ? 2 : 1;
};
// The channels of a pixel are contiguous: pixel i holds in.img[i * kChannels + c].
constexpr int kChannels = 3;

// The widest load (16, 8, 4, 2 or 1 bytes) that divides `bytes`, and a type of that size.
constexpr int widest_load(int bytes) {
  return bytes % 16 == 0 ? 16 : bytes % 8 == 0 ? 8 : bytes % 4 == 0 ? 4 : bytes % 2 == 0 ? 2 : 1;
}
template <int kBytes>
using Bytes = std::conditional_t<
    kBytes == 16, uint4,
    std::conditional_t<kBytes == 8, uint2,
                       std::conditional_t<kBytes == 4, uint32_t,
                                          std::conditional_t<kBytes == 2, uint16_t, uint8_t>>>>;

// Pixels per group, the vectorized path's unit of work: as many as 16 bytes of the wider
// of the input and output types hold, so that a group's outputs are one store of up to 16
// bytes (16 pixels for bytes, 8 for 16-bit, 4 for 32-bit types). A group's input,
// kChannels times as many elements, loads in the widest pieces that divide it (three
// 16-byte loads for 16 RGB bytes). One pixel per thread would read kChannels single
// elements: 56% of a device copy's bandwidth on an H200 for rgb_to_gray, 16 pixels per
// thread 104%. Groups sized by the narrower type made a uint8 -> float32 op store four
// 16-byte vectors per thread, 64 bytes apart across a warp: 57% of a copy.
template <typename T>
struct PixelGroup {
  static constexpr int kPixels = 16 / (sizeof(T) > sizeof(Out<T>) ? sizeof(T) : sizeof(Out<T>));
  static constexpr int kInBytes = kPixels * kChannels * sizeof(T);
  using InPiece = Bytes<widest_load(kInBytes)>;
  static constexpr int kInPieces = kInBytes / sizeof(InPiece);
};

// A group's input as load-sized pieces and as elements.
template <typename T>
union PixelsIn {
  typename PixelGroup<T>::InPiece pieces[PixelGroup<T>::kInPieces];
  T elems[PixelGroup<T>::kPixels * kChannels];
};

// One output from the kChannels elements of one pixel.
template <typename T>
__device__ __forceinline__ Out<T> pixel_out(const T* pixel, const Scalars<Acc<T>>& s) {
  return from_acc<Out<T>>(forward<Acc<T>>(to_acc(pixel[0]), to_acc(pixel[1]), to_acc(pixel[2])));
}

// With `vectorized` (both pointers 16-byte aligned), pixels [0, n / kPixels * kPixels)
// move kPixels at a time, the rest one at a time; without it, all one at a time.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    forward_kernel(const Tensors<const T*> in, Out<T>* __restrict__ out, int64_t n, bool vectorized,
                   const Scalars<Acc<T>> s) {
  using G = PixelGroup<T>;
  using Piece = typename G::InPiece;
  using VOut = Vec<Out<T>, G::kPixels>;
  constexpr int kPer = ItemsPerThread<T>::value;
  const int64_t groups = vectorized ? n / G::kPixels : 0;
  const int64_t block_groups = int64_t(kThreads) * kPer;  // groups per block and pass
#pragma unroll 1  // no trip-count division: one pass per thread is the common case
  for (int64_t first = blockIdx.x * block_groups + threadIdx.x; first < groups;
       first += gridDim.x * block_groups) {
    // Every load before the first use: kPer groups in flight.
    PixelsIn<T> loaded[kPer];
#pragma unroll
    for (int u = 0; u < kPer; ++u) {
      const int64_t g = first + u * kThreads;
      if (g < groups) {
        const Piece* src = reinterpret_cast<const Piece*>(in.img) + g * G::kInPieces;
#pragma unroll
        for (int v = 0; v < G::kInPieces; ++v) loaded[u].pieces[v] = src[v];
      }
    }
#pragma unroll
    for (int u = 0; u < kPer; ++u) {
      const int64_t g = first + u * kThreads;
      if (g < groups) {
        VOut res;
#pragma unroll
        for (int p = 0; p < G::kPixels; ++p) {
          res.v[p] = pixel_out(loaded[u].elems + p * kChannels, s);
        }
        reinterpret_cast<VOut*>(out)[g] = res;
      }
    }
  }
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
#pragma unroll 1
  for (int64_t i = groups * G::kPixels + first; i < n; i += stride) {
    out[i] = pixel_out(in.img + i * kChannels, s);
  }
}

}  // namespace

template <typename T>
cudaError_t launch_forward(Tensors<const T*> in, Out<T>* out, int64_t n, Scalars<double> s,
                           cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  // Pixels per thread on the vectorized path.
  constexpr int kPerThread = PixelGroup<T>::kPixels * ItemsPerThread<T>::value;
  const bool vectorized = is_aligned16(in.img) && is_aligned16(out);
  const int blocks = num_blocks(vectorized ? (n + kPerThread - 1) / kPerThread : n);
  forward_kernel<T><<<blocks, kThreads, 0, stream>>>(in, out, n, vectorized, Scalars<Acc<T>>{});
  return cudaGetLastError();
}

// The dtypes this op was generated for.
template cudaError_t launch_forward<uint8_t>(Tensors<const uint8_t*>, Out<uint8_t>*, int64_t,
                                             Scalars<double>, cudaStream_t);

}  // namespace rgb_to_gray
