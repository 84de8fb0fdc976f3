// normalize_volume_math.h: the formulas of normalize_volume, one element at a time.
//
// This is the file to edit when the op should compute something else. The CPU kernel
// (csrc/normalize_volume.cpp) and the CUDA kernels (csrc/normalize_volume_kernel.cu) both call
// these functions, so the two devices cannot drift apart. acc_t is float for float32,
// float16 and bfloat16 inputs and double for float64. Write literals as acc_t(0.5)
// rather than 0.5 so that float math stays in float. Plain C math functions (exp, log,
// tanh, fmax, ...) work here on the host and on the device.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define NORMALIZE_VOLUME_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define NORMALIZE_VOLUME_HOST_DEVICE inline
#endif

namespace normalize_volume {

#if !defined(__CUDA_ARCH__)
// rsqrt(v) = 1 / sqrt(v): one instruction on the GPU (CUDA's rsqrt), the same by sqrt here.
inline float rsqrt(float v) { return 1.0f / std::sqrt(v); }
inline double rsqrt(double v) { return 1.0 / std::sqrt(v); }
#endif

// One output element: vol / max_val
template <typename acc_t>
NORMALIZE_VOLUME_HOST_DEVICE acc_t forward(acc_t vol, acc_t max_val) {
  return vol / max_val;
}

// The arguments by name, for the kernels of csrc/normalize_volume.cpp and
// csrc/normalize_volume_kernel.cu: V is what each member holds (a pointer, a value, a tensor).
// The kernels reach the arguments only through these members, so an argument may be
// named like anything the kernels declare themselves.
template <typename V>
struct Tensors {
  V vol;
};

template <typename V>
struct Scalars {
  V max_val;
};

}  // namespace normalize_volume
