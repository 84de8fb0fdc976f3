// rgb_to_gray_math.h: the formulas of rgb_to_gray, one element at a time.
//
// This is the file to edit when the op should compute something else. The CPU kernel
// (csrc/rgb_to_gray.cpp) and the CUDA kernels (csrc/rgb_to_gray_kernel.cu) both call
// these functions, so the two devices cannot drift apart. acc_t is float for float32,
// float16 and bfloat16 inputs and double for float64. Write literals as acc_t(0.5)
// rather than 0.5 so that float math stays in float. Plain C math functions (exp, log,
// tanh, fmax, ...) work here on the host and on the device.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define RGB_TO_GRAY_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define RGB_TO_GRAY_HOST_DEVICE inline
#endif

namespace rgb_to_gray {

#if !defined(__CUDA_ARCH__)
// rsqrt(v) = 1 / sqrt(v): one instruction on the GPU (CUDA's rsqrt), the same by sqrt here.
inline float rsqrt(float v) { return 1.0f / std::sqrt(v); }
inline double rsqrt(double v) { return 1.0 / std::sqrt(v); }
#endif

// One output value per pixel, from its channels: 0.299f * r + 0.587f * g + 0.114f * b
template <typename acc_t>
RGB_TO_GRAY_HOST_DEVICE acc_t forward(acc_t r, acc_t g, acc_t b) {
  return 0.299f * r + 0.587f * g + 0.114f * b;
}

// The arguments by name, for the kernels of csrc/rgb_to_gray.cpp and
// csrc/rgb_to_gray_kernel.cu: V is what each member holds (a pointer, a value, a tensor).
// The kernels reach the arguments only through these members, so an argument may be
// named like anything the kernels declare themselves.
template <typename V>
struct Tensors {
  V img;
};

template <typename V>
struct Scalars {};

}  // namespace rgb_to_gray
