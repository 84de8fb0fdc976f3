// rgb_to_gray_kernel.cu: the CUDA kernels of rgb_to_gray and their launchers.
//
// Pure CUDA on raw pointers: no torch headers, so this file compiles in about a second
// and editing a kernel rebuilds quickly. csrc/rgb_to_gray.cpp checks the inputs, makes
// them contiguous, picks the dtype and passes the current stream. The formulas live in
// csrc/rgb_to_gray_math.h.
#include "rgb_to_gray_kernel.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "rgb_to_gray_math.h"

namespace rgb_to_gray {
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
// The channels of a pixel are contiguous: pixel i holds img[i * kChannels + c].
constexpr int kChannels = 3;

// Pixels per thread on the vectorized path: enough that both the pixels' channels and
// their outputs fill whole 16-byte vectors (16 for bytes, 8 for 16-bit, 4 for 32-bit
// types). One pixel per thread would read kChannels single elements: 3-byte loads move
// 56% of a device copy's bandwidth on an H200 for rgb_to_gray, 16 pixels per thread 104%.
// The same count as an elementwise op's vector width.
template <typename T>
struct PixelGroup {
  static constexpr int kPixels = VecWidth<T>::value;
  static constexpr int kInVecs = kPixels * kChannels * sizeof(T) / 16;
  static constexpr int kOutVecs = kPixels * sizeof(Out<T>) / 16;
};

// A group's inputs and outputs as 16-byte vectors and as elements.
template <typename T>
union PixelsIn {
  uint4 vecs[PixelGroup<T>::kInVecs];
  T elems[PixelGroup<T>::kPixels * kChannels];
};
template <typename T>
union PixelsOut {
  uint4 vecs[PixelGroup<T>::kOutVecs];
  Out<T> elems[PixelGroup<T>::kPixels];
};

// One output from the kChannels elements of one pixel.
template <typename T>
__device__ __forceinline__ Out<T> pixel_out(const T* pixel) {
  return from_acc<Out<T>>(forward<Acc<T>>(to_acc(pixel[0]), to_acc(pixel[1]), to_acc(pixel[2])));
}

// With `vectorized` (both pointers 16-byte aligned), pixels [0, n / kPixels * kPixels)
// move kPixels at a time, the rest one at a time; without it, all one at a time.
template <typename T>
__global__ void __launch_bounds__(kThreads) forward_kernel(
    const T* __restrict__ img, Out<T>* __restrict__ out, int64_t n, bool vectorized) {
  using G = PixelGroup<T>;
  const int64_t groups = vectorized ? n / G::kPixels : 0;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
#pragma unroll 1  // no trip-count division: one pass per thread is the common case
  for (int64_t g = first; g < groups; g += stride) {
    PixelsIn<T> in;
    PixelsOut<T> res;
    const uint4* src = reinterpret_cast<const uint4*>(img) + g * G::kInVecs;
#pragma unroll
    for (int v = 0; v < G::kInVecs; ++v) in.vecs[v] = src[v];
#pragma unroll
    for (int p = 0; p < G::kPixels; ++p) {
      res.elems[p] = pixel_out(in.elems + p * kChannels);
    }
    uint4* dst = reinterpret_cast<uint4*>(out) + g * G::kOutVecs;
#pragma unroll
    for (int v = 0; v < G::kOutVecs; ++v) dst[v] = res.vecs[v];
  }
#pragma unroll 1
  for (int64_t i = groups * G::kPixels + first; i < n; i += stride) {
    out[i] = pixel_out(img + i * kChannels);
  }
}

}  // namespace

template <typename T>
cudaError_t forward_cuda(const T* img, Out<T>* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  constexpr int kVec = VecWidth<T>::value;  // elements, or pixels, per thread
  const bool vectorized = is_aligned16(img) && is_aligned16(out);
  const int blocks = num_blocks(vectorized ? (n + kVec - 1) / kVec : n);
  forward_kernel<T><<<blocks, kThreads, 0, stream>>>(img, out, n, vectorized);
  return cudaGetLastError();
}

// The dtypes this op was generated for.
template cudaError_t forward_cuda<uint8_t>(const uint8_t*, Out<uint8_t>*, int64_t, cudaStream_t);

}  // namespace rgb_to_gray
