// relu_math.h: the formulas of relu, one element at a time.
//
// This is the file to edit when the op should compute something else. The CPU kernel
// (csrc/relu.cpp) and the CUDA kernels (csrc/relu_kernel.cu) both call
// these functions, so the two devices cannot drift apart. acc_t is float for float32,
// float16 and bfloat16 inputs and double for float64. Write literals as acc_t(0.5)
// rather than 0.5 (a double) so that float math stays in float. The C math functions
// (exp, log, tanh, fmax, ...) and min, max and clamp work here on the host and on the
// device. On a CPU with AVX2 or AVX512, acc_t is also Lanes<float> (16 or 32
// values at once, csrc/cpu_lanes.h): there a comparison of floating values is a mask, so pick with
// where(x > acc_t(0), a, b), not x > 0 ? a : b, and write acc_t(n) for an int that meets a
// float.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define RELU_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define RELU_HOST_DEVICE inline
#endif

namespace relu {

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
RELU_HOST_DEVICE T integer_power(T base, int exponent) {
  if (exponent < 0) return T(1) / integer_power(base, -exponent);
  if (exponent > 16) return pow(base, T(exponent));
  T result = T(1);
  for (; exponent > 0; exponent >>= 1, base = base * base) {
    if (exponent & 1) result = result * base;
  }
  return result;
}
RELU_HOST_DEVICE float pow(float base, int exponent) { return integer_power(base, exponent); }
RELU_HOST_DEVICE double pow(double base, int exponent) { return integer_power(base, exponent); }

#if !defined(__CUDA_ARCH__)
// rsqrt(v) = 1 / sqrt(v): one instruction on the GPU (CUDA's rsqrt), the same by sqrt here.
inline float rsqrt(float v) { return 1.0f / std::sqrt(v); }
inline double rsqrt(double v) { return 1.0 / std::sqrt(v); }
#endif

// min, max and clamp as torch.minimum, torch.maximum and torch.clamp compute them: NaN in,
// NaN out (fmin and fmax return the other argument instead).
template <typename T>
RELU_HOST_DEVICE T min(T a, T b) {
  return (a < b || a != a) ? a : b;
}
template <typename T>
RELU_HOST_DEVICE T max(T a, T b) {
  return (a > b || a != a) ? a : b;
}
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
// A float's min or max on the GPU (sm_80 and newer): one instruction that returns NaN for a
// NaN in, where the comparisons above take three (a clamp in a quantizer's formula kept the
// GPU's ALU pipe 73% busy). Declared before clamp, which calls them.
__device__ __forceinline__ float min(float a, float b) {
  float result;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(result) : "f"(a), "f"(b));
  return result;
}
__device__ __forceinline__ float max(float a, float b) {
  float result;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(result) : "f"(a), "f"(b));
  return result;
}
#endif
template <typename T>
RELU_HOST_DEVICE T clamp(T v, T low, T high) {
  return min(max(v, low), high);
}
// divide(a, b): a / b as the formulas divide (the formulas' `/`, written out so). On the GPU a
// float is divided by the hardware's full-range approximation, within 2 ulp, as torch.compile's
// kernels divide: IEEE's correctly rounded division checks its range and branches on every
// element, which halved the speed of a row-wise softmax with a temperature. Doubles and the
// CPU divide as C++ does. `a / b` stays IEEE's division wherever you write it.
template <typename T>
RELU_HOST_DEVICE T divide(T a, T b) {
  return a / b;
}
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ float divide(float a, float b) {
  float quotient;
  asm("div.full.f32 %0, %1, %2;" : "=f"(quotient) : "f"(a), "f"(b));
  return quotient;
}

// exp of a float on the GPU: the hardware's approximate 2^(x log2 e), as Triton's exp (and so
// torch.compile's and Liger's kernels) computes it, within a few ulp plus |x| 2^-24 relative
// of e^x, with results below 2^-126 flushed to 0. CUDA's accurate expf spends about six more
// instructions around the same approximation, which held a bfloat16 x / (1 + exp(-x)) 7%
// behind torch.compile at 2^28 elements. Doubles and the CPU keep the accurate exp.
__device__ __forceinline__ float exp(float x) {
  float result;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(result) : "f"(x * 1.4426950408889634f));
  return result;
}
__device__ __forceinline__ double exp(double x) { return ::exp(x); }
#endif

// where(c, a, b): a where c holds, else b, as torch.where. The formulas pick with it where
// the condition is on floating values, so that the same text also compiles for vectors of
// values, whose comparisons give masks that `?:` cannot take.
template <typename T>
RELU_HOST_DEVICE T where(bool c, T a, T b) {
  return c ? a : b;
}

// One output element: x > 0 ? x : 0
template <typename acc_t>
RELU_HOST_DEVICE acc_t forward(acc_t x) {
  return where(x > acc_t(0), x, acc_t(0));
}

// The gradients read x only through this condition. On CUDA the forward
// saves it as one bit an element, and the backward reads those bits instead of
// x (csrc/relu_kernel.cu): 1/32 of a float32 tensor's bytes. A gradient
// that needs more of x than this: change the op's gradients answer and
// run `opgen regen`, and the forward saves x instead.
constexpr int kSavedConditions = 1;

// x > 0
template <typename acc_t>
RELU_HOST_DEVICE auto condition_0(acc_t x) {
  return x > acc_t(0);
}

// Gradient of the loss with respect to x, given grad = d(loss)/d(output) and the
// conditions above (x > 0).
template <typename acc_t, typename truth_t>
RELU_HOST_DEVICE acc_t grad_from_conditions_wrt_x(acc_t grad, truth_t condition_0) {
  return where(condition_0, grad, acc_t(0));
}

// The same, given x: x > 0 ? grad : 0
template <typename acc_t>
RELU_HOST_DEVICE acc_t grad_wrt_x(acc_t grad, acc_t x) {
  return grad_from_conditions_wrt_x(grad, condition_0(x));
}

// The arguments by name, for the kernels of csrc/relu.cpp and
// csrc/relu_kernel.cu: V is what each member holds (a pointer, a value, a tensor).
// The kernels reach the arguments only through these members, so an argument may be
// named like anything the kernels declare themselves.
template <typename V>
struct Tensors {
  V x;
};

template <typename V>
struct Scalars {};

// The tensors the gradient formulas read.
template <typename V>
struct GradReads {
  V x;
};

// One gradient per differentiable input, named by the input.
template <typename V>
struct Grads {
  V x;
};

#if !defined(__CUDACC__)
// The processors the CPU loops are built for.
enum class CpuIsa { kAvx2, kAvx512 };

// The CPU loops on vectors, over `count` elements: defined in csrc/relu_cpu_loops.h,
// built for AVX2 by csrc/relu_cpu_avx2.cpp and for AVX512 by
// csrc/relu_cpu_avx512.cpp (one instance per dtype), called by csrc/relu.cpp
// where the CPU has them. Each tensor comes as a pointer and a step: 1 for consecutive
// elements, 0 for one value repeated (a broadcast), another for every step-th one.
template <CpuIsa isa, typename scalar_t, typename out_t>
void forward_lanes(const Tensors<const scalar_t*>& data, const Tensors<int64_t>& step, out_t* out,
                   int64_t count, const Scalars<double>& s);
template <CpuIsa isa, typename scalar_t>
void backward_lanes(const scalar_t* grad, int64_t grad_step, const GradReads<const scalar_t*>& data,
                    const GradReads<int64_t>& step, const Grads<scalar_t*>& grads, int64_t count,
                    const Scalars<double>& s);
#endif

}  // namespace relu
