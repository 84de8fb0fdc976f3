// layer_norm_math.h: the formulas of layer_norm, one element of a row at a time.
//
// This is the file to edit when the op should compute something else. Each row is
// reduced by the reduce_* functions, in order (sum, mean, max or min over the row, as
// the comment above each says); forward() then gives each output element. The CPU
// kernel (csrc/layer_norm.cpp) and the CUDA kernels (csrc/layer_norm_kernel.cu) both
// call these functions, so the two devices cannot drift apart. The backward
// reduces each row again (the grad_reduce_* functions, over grad, the incoming gradient,
// and y, the output element) and gives the gradient of each input element; the gradient
// of a per-column tensor is summed over the rows.
// x: the row's elements; weight, bias: the column's elements; n: the row
// length. acc_t is float (double for float64 tensors).
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define LAYER_NORM_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define LAYER_NORM_HOST_DEVICE inline
#endif

namespace layer_norm {

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
LAYER_NORM_HOST_DEVICE T integer_power(T base, int exponent) {
  if (exponent < 0) return T(1) / integer_power(base, -exponent);
  if (exponent > 16) return pow(base, T(exponent));
  T result = T(1);
  for (; exponent > 0; exponent >>= 1, base = base * base) {
    if (exponent & 1) result = result * base;
  }
  return result;
}
LAYER_NORM_HOST_DEVICE float pow(float base, int exponent) { return integer_power(base, exponent); }
LAYER_NORM_HOST_DEVICE double pow(double base, int exponent) {
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
LAYER_NORM_HOST_DEVICE T min(T a, T b) {
  return (a < b || a != a) ? a : b;
}
template <typename T>
LAYER_NORM_HOST_DEVICE T max(T a, T b) {
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
LAYER_NORM_HOST_DEVICE T clamp(T v, T low, T high) {
  return min(max(v, low), high);
}
// divide(a, b): a / b as the formulas divide (the formulas' `/`, written out so). On the GPU a
// float is divided by the hardware's full-range approximation, within 2 ulp, as torch.compile's
// kernels divide: IEEE's correctly rounded division checks its range and branches on every
// element, which halved the speed of a row-wise softmax with a temperature. Doubles and the
// CPU divide as C++ does. `a / b` stays IEEE's division wherever you write it.
template <typename T>
LAYER_NORM_HOST_DEVICE T divide(T a, T b) {
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
LAYER_NORM_HOST_DEVICE T where(bool c, T a, T b) {
  return c ? a : b;
}

// mu = mean(x) over the row
template <typename acc_t>
LAYER_NORM_HOST_DEVICE acc_t reduce_mu(acc_t x, acc_t weight, acc_t bias, acc_t eps, acc_t n) {
  return x;
}

// var = mean((x - mu) * (x - mu)) over the row
template <typename acc_t>
LAYER_NORM_HOST_DEVICE acc_t reduce_var(acc_t x, acc_t weight, acc_t bias, acc_t eps, acc_t n,
                                        acc_t mu) {
  return (x - mu) * (x - mu);
}

// One output element: (x - mu) * rsqrt(var + eps) * weight + bias
template <typename acc_t>
LAYER_NORM_HOST_DEVICE acc_t forward(acc_t x, acc_t weight, acc_t bias, acc_t eps, acc_t n,
                                     acc_t mu, acc_t var) {
  return (x - mu) * rsqrt(var + eps) * weight + bias;
}

// g1 = mean(grad * weight) over the row
template <typename acc_t>
LAYER_NORM_HOST_DEVICE acc_t grad_reduce_g1(acc_t grad, acc_t y, acc_t x, acc_t weight, acc_t bias,
                                            acc_t eps, acc_t n, acc_t mu, acc_t var) {
  return grad * weight;
}

// g2 = mean(grad * weight * (x - mu)) over the row
template <typename acc_t>
LAYER_NORM_HOST_DEVICE acc_t grad_reduce_g2(acc_t grad, acc_t y, acc_t x, acc_t weight, acc_t bias,
                                            acc_t eps, acc_t n, acc_t mu, acc_t var, acc_t g1) {
  return grad * weight * (x - mu);
}

// Gradient of the loss with respect to x, given grad = d(loss)/d(y).
template <typename acc_t>
LAYER_NORM_HOST_DEVICE acc_t grad_wrt_x(acc_t grad, acc_t y, acc_t x, acc_t weight, acc_t bias,
                                        acc_t eps, acc_t n, acc_t mu, acc_t var, acc_t g1,
                                        acc_t g2) {
  return (grad * weight - g1 - (x - mu) * (divide(g2, var + eps))) * rsqrt(var + eps);
}

// Gradient of the loss with respect to weight (summed over the rows), given grad = d(loss)/d(y).
template <typename acc_t>
LAYER_NORM_HOST_DEVICE acc_t grad_wrt_weight(acc_t grad, acc_t y, acc_t x, acc_t weight, acc_t bias,
                                             acc_t eps, acc_t n, acc_t mu, acc_t var, acc_t g1,
                                             acc_t g2) {
  return grad * (x - mu) * rsqrt(var + eps);
}

// Gradient of the loss with respect to bias (summed over the rows), given grad = d(loss)/d(y).
template <typename acc_t>
LAYER_NORM_HOST_DEVICE acc_t grad_wrt_bias(acc_t grad, acc_t y, acc_t x, acc_t weight, acc_t bias,
                                           acc_t eps, acc_t n, acc_t mu, acc_t var, acc_t g1,
                                           acc_t g2) {
  return grad;
}

// The arguments and the row's results by name, for the kernels of csrc/layer_norm.cpp
// and csrc/layer_norm_kernel.cu: V is what each member holds (a pointer, a value, a
// tensor). The kernels reach the arguments only through these members, so an argument
// may be named like anything the kernels declare themselves.
template <typename V>
struct Rows {
  V x;
};

template <typename V>
struct Columns {
  V weight;
  V bias;
};

template <typename V>
struct Scalars {
  V eps;
};

template <typename V>
struct Reductions {
  V mu;
  V var;
};

template <typename V>
struct GradReductions {
  V g1;
  V g2;
};

// One gradient per differentiable row tensor, and per differentiable column tensor.
template <typename V>
struct RowGrads {
  V x;
};

// Where the gradient of a column tensor goes: `same`, in the rows' element type T, or `acc`,
// in float, where that column is float32 and the rows are float16 or bfloat16 (a float32
// weight with half-type activations, as autocast passes them). One of the two is set.
template <typename T>
struct ColumnGrad {
  T* same;
  float* acc;
  // Element i of the gradient, from its sum in double (the CPU kernels').
  void store(int64_t i, double v) const {
    if (acc)
      acc[i] = static_cast<float>(v);
    else
      same[i] = static_cast<T>(v);
  }
};

template <typename V>
struct ColumnGrads {
  V weight;
  V bias;
};

#if !defined(__CUDACC__)
// The processors the CPU loops are built for.
enum class CpuIsa { kAvx2, kAvx512 };

// What elements of type T compute in on the CPU: double for double, float for the rest.
template <typename T>
using acc_type = std::conditional_t<std::is_same_v<T, double>, double, float>;

// The forward of rows begin..end on vectors: defined in csrc/layer_norm_cpu_loops.h, built for
// AVX2 by csrc/layer_norm_cpu_avx2.cpp and for AVX512 by csrc/layer_norm_cpu_avx512.cpp (one
// instance per dtype), called by csrc/layer_norm.cpp where the CPU has them.
template <CpuIsa isa, typename scalar_t, typename out_t>
void forward_rows(const Rows<const scalar_t*>& data, const Columns<const scalar_t*>& column_data,
                  out_t* out, acc_type<scalar_t>* saved, int64_t rows, int64_t n, int64_t begin,
                  int64_t end, const Scalars<double>& s);

// The backward of rows begin..end on vectors, and the column tensors' gradients of columns
// begin..end: likewise.
template <CpuIsa isa, typename scalar_t>
void backward_rows(const scalar_t* grad, const Rows<const scalar_t*>& data,
                   const Columns<const scalar_t*>& column_data, const acc_type<scalar_t>* saved,
                   Reductions<acc_type<scalar_t>>* red,
                   GradReductions<acc_type<scalar_t>>* grad_red,
                   const RowGrads<scalar_t*>& row_grads, int64_t rows, int64_t n, int64_t begin,
                   int64_t end, const Scalars<double>& s);
template <CpuIsa isa, typename scalar_t>
void backward_columns(const scalar_t* grad, const Rows<const scalar_t*>& data,
                      const Columns<const scalar_t*>& column_data,
                      const Reductions<acc_type<scalar_t>>* red,
                      const GradReductions<acc_type<scalar_t>>* grad_red,
                      const ColumnGrads<ColumnGrad<scalar_t>>& column_grads, double* sums,
                      int64_t rows, int64_t n, int64_t begin, int64_t end,
                      const Scalars<double>& s);
#endif

}  // namespace layer_norm
