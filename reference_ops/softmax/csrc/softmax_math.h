// softmax_math.h: the formulas of softmax, one element of a row at a time.
//
// This is the file to edit when the op should compute something else. Each row is
// reduced by the reduce_* functions, in order (sum, mean, max or min over the row, as
// the comment above each says); forward() then gives each output element. The CPU
// kernel (csrc/softmax.cpp) and the CUDA kernels (csrc/softmax_kernel.cu) both
// call these functions, so the two devices cannot drift apart. The backward
// reduces each row again (the grad_reduce_* functions, over grad, the incoming gradient,
// and y, the output element) and gives the gradient of each input element; the gradient
// of a per-column tensor is summed over the rows.
// x: the row's elements; n: the row
// length. acc_t is float (double for float64 tensors).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define SOFTMAX_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define SOFTMAX_HOST_DEVICE inline
#endif

namespace softmax {

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
SOFTMAX_HOST_DEVICE T integer_power(T base, int exponent) {
  if (exponent < 0) return T(1) / integer_power(base, -exponent);
  if (exponent > 16) return pow(base, T(exponent));
  T result = T(1);
  for (; exponent > 0; exponent >>= 1, base = base * base) {
    if (exponent & 1) result = result * base;
  }
  return result;
}
SOFTMAX_HOST_DEVICE float pow(float base, int exponent) { return integer_power(base, exponent); }
SOFTMAX_HOST_DEVICE double pow(double base, int exponent) { return integer_power(base, exponent); }

#if !defined(__CUDA_ARCH__)
// rsqrt(v) = 1 / sqrt(v): one instruction on the GPU (CUDA's rsqrt), the same by sqrt here.
inline float rsqrt(float v) { return 1.0f / std::sqrt(v); }
inline double rsqrt(double v) { return 1.0 / std::sqrt(v); }
#endif

// min, max and clamp as torch.minimum, torch.maximum and torch.clamp compute them: NaN in,
// NaN out (fmin and fmax return the other argument instead).
template <typename T>
SOFTMAX_HOST_DEVICE T min(T a, T b) {
  return (a < b || a != a) ? a : b;
}
template <typename T>
SOFTMAX_HOST_DEVICE T max(T a, T b) {
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
SOFTMAX_HOST_DEVICE T clamp(T v, T low, T high) {
  return min(max(v, low), high);
}
// divide(a, b): a / b as the formulas divide (the formulas' `/`, written out so). On the GPU a
// float is divided by the hardware's full-range approximation, within 2 ulp, as torch.compile's
// kernels divide: IEEE's correctly rounded division checks its range and branches on every
// element, which halved the speed of a row-wise softmax with a temperature. Doubles and the
// CPU divide as C++ does. `a / b` stays IEEE's division wherever you write it.
template <typename T>
SOFTMAX_HOST_DEVICE T divide(T a, T b) {
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
SOFTMAX_HOST_DEVICE T where(bool c, T a, T b) {
  return c ? a : b;
}

// m = max(x) over the row
template <typename acc_t>
SOFTMAX_HOST_DEVICE acc_t reduce_m(acc_t x, acc_t n) {
  return x;
}

// z = sum(exp(x - m)) over the row
template <typename acc_t>
SOFTMAX_HOST_DEVICE acc_t reduce_z(acc_t x, acc_t n, acc_t m) {
  return exp(x - m);
}

// One output element: exp(x - m) * (1 / z), over z_term, the term of z at this element (reduce_z):
// the CPU's vector loops keep each term from z's pass over the row rather than compute it again.
template <typename acc_t>
SOFTMAX_HOST_DEVICE acc_t forward_given_term(acc_t z_term, acc_t x, acc_t n, acc_t m, acc_t z) {
  return z_term * (divide(acc_t(1), z));
}

// The same, computing z's term (the CUDA kernels and the CPU's scalar loops).
template <typename acc_t>
SOFTMAX_HOST_DEVICE acc_t forward(acc_t x, acc_t n, acc_t m, acc_t z) {
  return forward_given_term(reduce_z<acc_t>(x, n, m), x, n, m, z);
}

// The backward's formulas read y, not x nor the reductions above: the forward saves its
// output, and the backward reads y and grad alone, without computing the forward again. y
// is the output as stored, rounded to its dtype (as PyTorch's softmax backward reads it).
// Gradients that need x or the reductions: change the op's gradients answer and run
// `opgen regen`, and the backward takes them instead.

// gy = sum(grad * y) over the row
template <typename acc_t>
SOFTMAX_HOST_DEVICE acc_t grad_reduce_gy(acc_t grad, acc_t y, acc_t n) {
  return grad * y;
}

// Gradient of the loss with respect to x, given grad = d(loss)/d(y).
template <typename acc_t>
SOFTMAX_HOST_DEVICE acc_t grad_wrt_x(acc_t grad, acc_t y, acc_t n, acc_t gy) {
  return y * (grad - gy);
}

// The arguments and the row's results by name, for the kernels of csrc/softmax.cpp
// and csrc/softmax_kernel.cu: V is what each member holds (a pointer, a value, a
// tensor). The kernels reach the arguments only through these members, so an argument
// may be named like anything the kernels declare themselves.
template <typename V>
struct Rows {
  V x;
};

// The output, which the backward reads instead of the rows.
template <typename V>
struct Output {
  V y;
};

template <typename V>
struct Columns {};

template <typename V>
struct Scalars {};

template <typename V>
struct Reductions {
  V m;
  V z;
};

template <typename V>
struct GradReductions {
  V gy;
};

// One gradient per differentiable row tensor, and per differentiable column tensor.
template <typename V>
struct RowGrads {
  V x;
};

template <typename V>
struct ColumnGrads {};

#if !defined(__CUDACC__)
// The processors the CPU loops are built for.
enum class CpuIsa { kAvx2, kAvx512 };

// What elements of type T compute in on the CPU: double for double, float for the rest.
template <typename T>
using acc_type = std::conditional_t<std::is_same_v<T, double>, double, float>;

// The forward of rows begin..end on vectors: defined in csrc/softmax_cpu_loops.h, built for
// AVX2 by csrc/softmax_cpu_avx2.cpp and for AVX512 by csrc/softmax_cpu_avx512.cpp (one
// instance per dtype), called by csrc/softmax.cpp where the CPU has them.
template <CpuIsa isa, typename scalar_t, typename out_t>
void forward_rows(const Rows<const scalar_t*>& data, const Columns<const scalar_t*>& column_data,
                  out_t* out, acc_type<scalar_t>* terms, int64_t rows, int64_t n, int64_t begin,
                  int64_t end, const Scalars<double>& s);

// The backward of rows begin..end on vectors: likewise.
template <CpuIsa isa, typename scalar_t>
void backward_rows(const scalar_t* grad, const Output<const scalar_t*>& data,
                   const Columns<const scalar_t*>& column_data,
                   GradReductions<acc_type<scalar_t>>* grad_red,
                   const RowGrads<scalar_t*>& row_grads, int64_t rows, int64_t n, int64_t begin,
                   int64_t end, const Scalars<double>& s);
#endif

}  // namespace softmax
