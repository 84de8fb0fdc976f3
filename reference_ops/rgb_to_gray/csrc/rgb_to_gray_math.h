// rgb_to_gray_math.h: the formulas of rgb_to_gray, one element at a time.
//
// This is the file to edit when the op should compute something else. The CPU kernel
// (csrc/rgb_to_gray.cpp) and the CUDA kernels (csrc/rgb_to_gray_kernel.cu) both call
// these functions, so the two devices cannot drift apart. acc_t is float for float32,
// float16 and bfloat16 inputs and double for float64. Write literals as acc_t(0.5)
// rather than 0.5 (a double) so that float math stays in float. The C math functions
// (exp, log, tanh, fmax, ...) and min, max and clamp work here on the host and on the
// device.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define RGB_TO_GRAY_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define RGB_TO_GRAY_HOST_DEVICE inline
#endif

namespace rgb_to_gray {

#if !defined(__CUDACC__)
// The C++ math functions, overloaded for float and double. Without these, exp(x) on a
// float would call C's exp(double): computed in double, and slower.
using std::abs;
using std::acos;
using std::acosh;
using std::asin;
using std::asinh;
using std::atan;
using std::atan2;
using std::atanh;
using std::cbrt;
using std::ceil;
using std::copysign;
using std::cos;
using std::cosh;
using std::erf;
using std::erfc;
using std::exp;
using std::exp2;
using std::expm1;
using std::fabs;
using std::floor;
using std::fma;
using std::fmax;
using std::fmin;
using std::fmod;
using std::hypot;
using std::lgamma;
using std::log;
using std::log10;
using std::log1p;
using std::log2;
using std::nearbyint;
using std::pow;
using std::rint;
using std::round;
using std::sin;
using std::sinh;
using std::sqrt;
using std::tan;
using std::tanh;
using std::tgamma;
using std::trunc;
#endif

#if defined(__CUDACC__)
// CUDA's pow, beside the integer power below (which would hide it otherwise).
using ::pow;
#endif
// pow(x, 2): an integer power in the type of x, by multiplication, on the host and the GPU
// alike, as on the CPU's vectors. std::pow(float, int) is a double, and with GCC's headers so
// is CUDA's: a float kernel computed it in double.
template <typename T>
RGB_TO_GRAY_HOST_DEVICE T integer_power(T base, int exponent) {
  if (exponent < 0) return T(1) / integer_power(base, -exponent);
  if (exponent > 16) return pow(base, T(exponent));
  T result = T(1);
  for (; exponent > 0; exponent >>= 1, base = base * base) {
    if (exponent & 1) result = result * base;
  }
  return result;
}
RGB_TO_GRAY_HOST_DEVICE float pow(float base, int exponent) {
  return integer_power(base, exponent);
}
RGB_TO_GRAY_HOST_DEVICE double pow(double base, int exponent) {
  return integer_power(base, exponent);
}

#if !defined(__CUDA_ARCH__)
// rsqrt(v) = 1 / sqrt(v): one instruction on the GPU (CUDA's rsqrt), the same by sqrt here.
inline float rsqrt(float v) { return 1.0f / std::sqrt(v); }
inline double rsqrt(double v) { return 1.0 / std::sqrt(v); }
#endif

// min, max and clamp as torch.minimum, torch.maximum and torch.clamp compute them: NaN in,
// NaN out (fmin and fmax return the other argument instead).
template <typename T>
RGB_TO_GRAY_HOST_DEVICE T min(T a, T b) {
  return (a < b || a != a) ? a : b;
}
template <typename T>
RGB_TO_GRAY_HOST_DEVICE T max(T a, T b) {
  return (a > b || a != a) ? a : b;
}
template <typename T>
RGB_TO_GRAY_HOST_DEVICE T clamp(T v, T low, T high) {
  return min(max(v, low), high);
}
// divide(a, b): a / b as the formulas divide (the formulas' `/`, written out so). This op is
// --exact: its GPU results match the CPU's bit for bit, so floats divide as IEEE's correctly
// rounded division here too (other ops divide floats on the GPU as torch.compile does).
template <typename T>
RGB_TO_GRAY_HOST_DEVICE T divide(T a, T b) {
  return a / b;
}

// where(c, a, b): a where c holds, else b, as torch.where. The formulas pick with it where
// the condition is on floating values, so that the same text also compiles for vectors of
// values, whose comparisons give masks that `?:` cannot take.
template <typename T>
RGB_TO_GRAY_HOST_DEVICE T where(bool c, T a, T b) {
  return c ? a : b;
}

// One output value per pixel, from its channels: 0.299f * r + 0.587f * g + 0.114f * b
template <typename acc_t>
RGB_TO_GRAY_HOST_DEVICE acc_t forward(acc_t r, acc_t g, acc_t b) {
  return acc_t(0.299) * r + acc_t(0.587) * g + acc_t(0.114) * b;
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
