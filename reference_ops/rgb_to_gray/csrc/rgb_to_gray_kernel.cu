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

// kVec elements that move as one load or store: 16 bytes on the vectorized path.
template <typename T, int kVec>
struct alignas(sizeof(T) * kVec) Vec {
  T v[kVec];
};

// Elements per vector: as many as keep every load and store within 16 bytes.
template <typename T>
struct VecWidth {
  static constexpr int value = 16 / (sizeof(T) > sizeof(Out<T>) ? sizeof(T) : sizeof(Out<T>));
};

constexpr int kThreads = 256;
// 2048 resident threads per multiprocessor on current GPUs: 8 blocks of 256 fill one.
constexpr int kBlocksPerMultiprocessor = 8;

bool is_aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// Enough blocks to fill the GPU once; the grid-stride loops cover the rest, so the grid
// never exceeds what the hardware accepts whatever n is.
cudaError_t num_blocks(int64_t work_items, int* blocks) {
  int device = 0;
  int multiprocessors = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) {
    err = cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device);
  }
  if (err != cudaSuccess) return err;
  const int64_t wanted = (work_items + kThreads - 1) / kThreads;
  const int64_t most = int64_t(multiprocessors) * kBlocksPerMultiprocessor;
  // No <algorithm> for std::min: every header here costs build time on each arch.
  *blocks = int(wanted < 1 ? 1 : (wanted < most ? wanted : most));
  return cudaSuccess;
}
// The channels of a pixel are contiguous: pixel i holds img[i * kChannels + c].
constexpr int kChannels = 3;

// One pixel per thread and step of the grid-stride loop; n counts pixels.
template <typename T>
__global__ void __launch_bounds__(kThreads) forward_kernel(
    const T* __restrict__ img, Out<T>* __restrict__ out, int64_t n, bool /*vectorized*/) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const T* pixel = img + i * kChannels;
    out[i] = from_acc<Out<T>>(forward<Acc<T>>(to_acc(pixel[0]), to_acc(pixel[1]), to_acc(pixel[2])));
  }
}

}  // namespace

template <typename T>
cudaError_t forward_cuda(const T* img, Out<T>* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  constexpr int kVec = VecWidth<T>::value;
  const bool vectorized = false;
  int blocks = 0;
  cudaError_t err = num_blocks(vectorized ? (n + kVec - 1) / kVec : n, &blocks);
  if (err != cudaSuccess) return err;
  forward_kernel<T><<<blocks, kThreads, 0, stream>>>(img, out, n, vectorized);
  return cudaGetLastError();
}

// The dtypes this op was generated for.
template cudaError_t forward_cuda<uint8_t>(const uint8_t*, Out<uint8_t>*, int64_t, cudaStream_t);

}  // namespace rgb_to_gray
