// cpu_lanes.h: the formulas of the ops on the CPU, 16 floats (8 doubles) at a time with AVX2,
// 32 (16) with AVX512.
//
// The formulas of csrc/<op>_math.h are templates over their arithmetic type acc_t. The CUDA
// kernels and the scalar CPU loops instantiate them with float or double; the vector loops
// (csrc/<op>_cpu_loops.h) with Lanes<float> or Lanes<double>: two of PyTorch's
// at::vec::Vectorized, with log, sin, ... from SLEEF, as PyTorch's own CPU kernels compute
// them (exp, tanh and erf of floats are this file's own, below). Lanes has C++'s operators and the
// math functions the formulas call; a comparison gives a Mask, and where(c, a, b) picks by it.
//
// Include this header first: it makes the whole file AVX2 code, as -mavx2 -mfma -mf16c would
// (which torch's build does not let one file have), or AVX512 code where the file defines
// CPU_LANES_AVX512 before it (as PyTorch's own AVX512 kernels are built: -mavx512f
// -mavx512bw -mavx512vl -mavx512dq -mfma). Only GCC on x86-64 is told so; elsewhere the same
// code compiles with at::vec's portable vectors, and is right, not faster.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#if defined(_IMMINTRIN_H_INCLUDED) || defined(__SLEEF_H__)
#error "cpu_lanes.h makes the whole file vector code: include it before every other header"
#endif
// What the compiler defines with the -m flags (the pragma does not): sleef.h declares its
// vector functions, and at::vec its vectors, only where they are defined.
#define __AVX__ 1
#define __AVX2__ 1
#define __FMA__ 1
#define __F16C__ 1
#if defined(CPU_LANES_AVX512)
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
#define __AVX512F__ 1
#define __AVX512BW__ 1
#define __AVX512VL__ 1
#define __AVX512DQ__ 1
#define CPU_CAPABILITY AVX512
#define CPU_CAPABILITY_AVX512
#else
#pragma GCC target("avx2,fma,f16c")
#define CPU_CAPABILITY AVX2
#define CPU_CAPABILITY_AVX2
#endif
#endif

#if defined(__GNUC__) && !defined(__clang__)
// The loops of csrc/<op>_cpu_loops.h capture CpuVec's types, which are internal to each file
// on purpose (below): GCC warns of that in a header.
#pragma GCC diagnostic ignored "-Wsubobject-linkage"
#if defined(CPU_LANES_AVX512)
// GCC 12's own AVX512 headers trip -Wmaybe-uninitialized once inlined (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#endif

// GCC builds some of at::vec's Vectorized<BFloat16> without the target (see to_float) and
// says so (-Wpsabi); nothing here calls those.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#include <ATen/cpu/vec/functional.h>
#include <ATen/cpu/vec/vec.h>
#pragma GCC diagnostic pop
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

// CamelCase, as no op name is (they are snake_case): an op's namespace never merges with this one.
namespace CpuVec {
// Internal to each file that includes it: no function here is shared with (or taken from)
// another file, whatever ISA that one is compiled for, and none is called through the PLT.
namespace {

template <typename T>
using Vec = at::vec::Vectorized<T>;

// A scalar that meets lanes (x * 2.0f, where the formulas would write x * acc_t(2)): any type
// that converts to T, not a second deduction of T.
template <typename T>
struct Scalar {
  using type = T;
};
template <typename T>
using scalar_of = typename Scalar<T>::type;

// Truth values of Lanes<T>: all bits set where true.
template <typename T>
struct Mask {
  Vec<T> lo, hi;

  Mask(Vec<T> lo, Vec<T> hi) : lo(lo), hi(hi) {}
  // A bool scalar: the same in every lane.
  Mask(bool value) : lo(value ? Vec<T>(T(0)) == Vec<T>(T(0)) : Vec<T>(T(0))), hi(lo) {}
};

template <typename T>
struct Lanes {
  Vec<T> lo, hi;

  static constexpr int64_t size() { return 2 * Vec<T>::size(); }

  Lanes() = default;
  Lanes(Vec<T> lo, Vec<T> hi) : lo(lo), hi(hi) {}
  // acc_t(0.5), acc_t(n), a float scalar: the same in every lane.
  Lanes(T value) : lo(value), hi(value) {}
  // acc_t(x > 0): 1 where true, 0 where false.
  explicit Lanes(const Mask<T>& m) : lo(m.lo & Vec<T>(T(1))), hi(m.hi & Vec<T>(T(1))) {}
};

#define CPU_LANES_OPERATOR(op, Result)                          \
  template <typename T>                                         \
  Result<T> operator op(const Lanes<T>& a, const Lanes<T>& b) { \
    return {a.lo op b.lo, a.hi op b.hi};                        \
  }                                                             \
  template <typename T>                                         \
  Result<T> operator op(const Lanes<T>& a, scalar_of<T> b) {    \
    return a op Lanes<T>(b);                                    \
  }                                                             \
  template <typename T>                                         \
  Result<T> operator op(scalar_of<T> a, const Lanes<T>& b) {    \
    return Lanes<T>(a) op b;                                    \
  }
CPU_LANES_OPERATOR(+, Lanes)
CPU_LANES_OPERATOR(-, Lanes)
CPU_LANES_OPERATOR(*, Lanes)
CPU_LANES_OPERATOR(/, Lanes)
CPU_LANES_OPERATOR(<, Mask)
CPU_LANES_OPERATOR(>, Mask)
CPU_LANES_OPERATOR(<=, Mask)
CPU_LANES_OPERATOR(>=, Mask)
CPU_LANES_OPERATOR(==, Mask)
CPU_LANES_OPERATOR(!=, Mask)
#undef CPU_LANES_OPERATOR

template <typename T>
Lanes<T> operator-(const Lanes<T>& a) {
  return {a.lo.neg(), a.hi.neg()};
}
template <typename T>
Lanes<T> operator+(const Lanes<T>& a) {
  return a;
}
template <typename T>
Mask<T> operator!(const Lanes<T>& a) {
  return a == Lanes<T>(T(0));
}

// Masks combine bit by bit; a bool scalar counts as the same value in every lane.
#define CPU_LANES_MASK_OPERATOR(op, bits)                   \
  template <typename T>                                     \
  Mask<T> operator op(const Mask<T>& a, const Mask<T>& b) { \
    return {a.lo bits b.lo, a.hi bits b.hi};                \
  }                                                         \
  template <typename T>                                     \
  Mask<T> operator op(const Mask<T>& a, bool b) {           \
    return a op Mask<T>(b);                                 \
  }                                                         \
  template <typename T>                                     \
  Mask<T> operator op(bool a, const Mask<T>& b) {           \
    return Mask<T>(a) op b;                                 \
  }
CPU_LANES_MASK_OPERATOR(&&, &)
CPU_LANES_MASK_OPERATOR(||, |)
CPU_LANES_MASK_OPERATOR(&, &)
CPU_LANES_MASK_OPERATOR(|, |)
CPU_LANES_MASK_OPERATOR(^, ^)
CPU_LANES_MASK_OPERATOR(!=, ^)
#undef CPU_LANES_MASK_OPERATOR

template <typename T>
Mask<T> operator!(const Mask<T>& a) {
  return a ^ Mask<T>(true);
}
template <typename T>
Mask<T> operator==(const Mask<T>& a, const Mask<T>& b) {
  return !(a ^ b);
}

// where(c, a, b): a where c holds, else b; lane by lane, as torch.where.
template <typename T>
Lanes<T> where(const Mask<T>& c, const Lanes<T>& a, const Lanes<T>& b) {
  return {Vec<T>::blendv(b.lo, a.lo, c.lo), Vec<T>::blendv(b.hi, a.hi, c.hi)};
}

// The math functions the formulas call, as the scalar ones compute them: at::vec's, which
// call SLEEF (as PyTorch's CPU kernels do); erf, exp and tanh of floats are this file's own
// (below).
#define CPU_LANES_UNARY(name, method)      \
  template <typename T>                    \
  Lanes<T> name(const Lanes<T>& a) {       \
    return {a.lo.method(), a.hi.method()}; \
  }
CPU_LANES_UNARY(abs, abs)
CPU_LANES_UNARY(fabs, abs)
CPU_LANES_UNARY(exp, exp)
CPU_LANES_UNARY(exp2, exp2)
CPU_LANES_UNARY(expm1, expm1)
CPU_LANES_UNARY(log, log)
CPU_LANES_UNARY(log2, log2)
CPU_LANES_UNARY(log10, log10)
CPU_LANES_UNARY(log1p, log1p)
CPU_LANES_UNARY(sqrt, sqrt)
CPU_LANES_UNARY(rsqrt, rsqrt)
CPU_LANES_UNARY(sin, sin)
CPU_LANES_UNARY(cos, cos)
CPU_LANES_UNARY(tan, tan)
CPU_LANES_UNARY(asin, asin)
CPU_LANES_UNARY(acos, acos)
CPU_LANES_UNARY(atan, atan)
CPU_LANES_UNARY(sinh, sinh)
CPU_LANES_UNARY(cosh, cosh)
CPU_LANES_UNARY(tanh, tanh)
CPU_LANES_UNARY(erf, erf)
CPU_LANES_UNARY(erfc, erfc)
CPU_LANES_UNARY(lgamma, lgamma)
CPU_LANES_UNARY(floor, floor)
CPU_LANES_UNARY(ceil, ceil)
CPU_LANES_UNARY(trunc, trunc)
// at::vec's round rounds halves to even, as rint and nearbyint do (C's round does not: below).
CPU_LANES_UNARY(rint, round)
CPU_LANES_UNARY(nearbyint, round)
#undef CPU_LANES_UNARY

#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
// erf of floats: at::vec's (Abramowitz and Stegun 7.1.26: a division and SLEEF's exp) is off
// by up to 5.7e-7 (near x = 0.05, where erf is 0.055) and takes 1.6-1.8 times as long in a
// GELU's loop as this one, which is within 1.7 ulp (9e-8) of the C library's erf. From
// a = min(|x|, 4) (erf rounds to 1 from 3.92 on): s = 2a, the interval k = min(floor(s), 7) of
// eight, v = s - k - 1/2 in [-1/2, 1/2], and erf(a) = a * p_k(v) + b_k with p_k of degree 6:
// b_k = 0 below a = 1.5, where p_k fits erf(a) / a (so that erf keeps its relative accuracy
// near 0), and 1 from there, where p_k fits -erfc(a) / a (so that 1 - erfc keeps erfc's
// digits). kErfTable[j][k] is p_k's coefficient of v^j; its last row is b. Fitted to the
// largest error relative to erf, each coefficient rounded to float: 0.30 * 2^-24 before float
// arithmetic, whose roundings are the rest.
alignas(32) constexpr float kErfTable[8][8] = {
    {1.1053056e+00f, 9.482075e-01f, 7.383201e-01f, -7.616188e-03f, -6.500964e-04f, -3.6589783e-05f,
     -1.3239261e-06f, -3.0326536e-08f},
    {-9.0582795e-02f, -2.0351763e-01f, -2.007196e-01f, 1.725476e-02f, 1.7316809e-03f,
     1.13257534e-04f, 4.6955365e-06f, 1.2165468e-07f},
    {-8.383756e-02f, -2.5053691e-02f, 2.115718e-02f, -1.8123673e-02f, -2.1703863e-03f,
     -1.6716227e-04f, -8.02025e-06f, -2.3665179e-07f},
    {1.3087115e-02f, 2.1166796e-02f, 8.29175e-03f, 1.1613619e-02f, 1.6881656e-03f, 1.5557761e-04f,
     8.725515e-06f, 2.9443822e-07f},
    {5.562393e-03f, -1.5594566e-03f, -3.6210686e-03f, -5.0362493e-03f, -9.054262e-04f,
     -1.023233e-04f, -6.843314e-06f, -2.6873343e-07f},
    {-1.0946495e-03f, -1.1689356e-03f, 2.5570093e-04f, 1.5922601e-03f, 3.577524e-04f,
     5.2225205e-05f, 4.385468e-06f, 2.1092318e-07f},
    {-2.7838827e-04f, 2.3468272e-04f, 1.5061525e-04f, -3.7408277e-04f, -9.867264e-05f,
     -1.8978257e-05f, -1.9970514e-06f, -1.1509263e-07f},
    {0, 0, 0, 1, 1, 1, 1, 1},  // b
};

// Row j of kErfTable at each lane's interval k: one permutation of a register.
inline Vec<float> erf_table_row(int j, const Vec<int32_t>& k) {
#if defined(CPU_CAPABILITY_AVX512)
  return _mm512_permutexvar_ps(k, _mm512_broadcast_f32x8(_mm256_load_ps(kErfTable[j])));
#else
  return _mm256_permutevar8x32_ps(_mm256_load_ps(kErfTable[j]), k);
#endif
}

inline Vec<float> erf_of_floats(const Vec<float>& x) {
  // clamp_max keeps a NaN (it is the second operand of the vector min), and the NaN's
  // interval index (cvtt gives INT_MIN, whose low bits are 0) reads a row as any other.
  const Vec<float> a = at::vec::clamp_max(x.abs(), Vec<float>(4.0f));
  const Vec<float> s = a * Vec<float>(2.0f);
  const Vec<int32_t> k = at::vec::minimum(at::vec::convert_to_int_of_same_size(s), Vec<int32_t>(7));
  const Vec<float> v = s - at::vec::convert_to_fp_of_same_size<float>(k) - Vec<float>(0.5f);
  Vec<float> p = erf_table_row(6, k);
  for (int j = 5; j >= 0; --j) p = at::vec::fmadd(p, v, erf_table_row(j, k));
  const Vec<float> erf_of_a = at::vec::fmadd(a, p, erf_table_row(7, k));
  return erf_of_a | (x & Vec<float>(-0.0f));  // x's sign
}

inline Lanes<float> erf(const Lanes<float>& a) {
  return {erf_of_floats(a.lo), erf_of_floats(a.hi)};
}

// 2^j for whole floats j from -126 to 127: j + 127 in a float's exponent bits.
inline Vec<float> two_to_the(const Vec<float>& j) {
#if defined(CPU_CAPABILITY_AVX512)
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtps_epi32(j + Vec<float>(127.0f)), 23));
#else
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtps_epi32(j + Vec<float>(127.0f)), 23));
#endif
}

// exp of floats: SLEEF's is a call, and a call makes the loop spill every vector it holds
// (about a fifth of an erf GELU backward's time went there). This one is inline, and as
// accurate: within 1.01 ulp of the C library's exp in double (SLEEF's 0.98), with denormal
// results, overflow, infinities and NaN as the C library has them. e^x = 2^n e^r with
// n = round(x / ln 2) and r = x - n ln 2 in [-ln 2 / 2, ln 2 / 2] (ln 2 in two parts, so that
// r is exact), and e^r = 1 + (r + r^2 p(r)) with Cephes' expf polynomial p of degree 5: adding
// the 1 last rounds once, to the spacing of the result.
inline Vec<float> exp_of_floats(const Vec<float>& x) {
  // e^x rounds to 0 below -104 and overflows above 89 (the product with 2^n below does so);
  // the clamps keep a NaN (it is their second operand).
  const Vec<float> a =
      at::vec::clamp_min(at::vec::clamp_max(x, Vec<float>(89.0f)), Vec<float>(-104.0f));
  const Vec<float> n = (a * Vec<float>(1.44269504088896341f)).round();
  const Vec<float> r = at::vec::fmadd(n, Vec<float>(2.12194440e-4f),
                                      at::vec::fmadd(n, Vec<float>(-0.693359375f), a));
  Vec<float> p(1.9875691500e-4f);
  for (const float c :
       {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f}) {
    p = at::vec::fmadd(p, r, Vec<float>(c));
  }
  const Vec<float> e_to_the_r = at::vec::fmadd(p, r * r, r) + Vec<float>(1.0f);
  // Times 2^n as 2^h 2^(n - h), h = floor(n / 2): both are normal floats for every n here (-150
  // to 128), so that a denormal result rounds once and e^88.7 (n = 128) does not overflow early.
  // A NaN's n makes any factor, and the NaN stays.
  const Vec<float> h = (n * Vec<float>(0.5f)).floor();
  return e_to_the_r * two_to_the(h) * two_to_the(n - h);
}

inline Lanes<float> exp(const Lanes<float>& a) {
  return {exp_of_floats(a.lo), exp_of_floats(a.hi)};
}

// tanh of floats, on the exp above: SLEEF's tanh is a call, and with it a tanh GELU's loop took
// 3.9 times an erf GELU's (1.5 times with this one). Within 1.33 ulp of the C library's tanh
// in double (SLEEF's: 1.0). Below |x| = 0.625 Cephes' tanhf polynomial, x + x^3 p(x^2) (where
// 1 - 2 / (e^2|x| + 1) would lose digits to the subtraction); from there 1 - 2 / (e^2|x| + 1),
// with x's sign, which is 1 once e^2|x| overflows.
inline Vec<float> tanh_of_floats(const Vec<float>& x) {
  const Vec<float> a = x.abs();
  const Vec<float> z = x * x;
  Vec<float> p(-5.70498872745e-3f);
  for (const float c :
       {2.06390887954e-2f, -5.37397155531e-2f, 1.33314422036e-1f, -3.33332819422e-1f}) {
    p = at::vec::fmadd(p, z, Vec<float>(c));
  }
  const Vec<float> near_zero = at::vec::fmadd(p * z, a, a);
  const Vec<float> far =
      Vec<float>(1.0f) - Vec<float>(2.0f) / (exp_of_floats(a + a) + Vec<float>(1.0f));
  // tanh of |x|, then x's sign (-0 keeps it); a NaN fails the comparison and stays one in far.
  return Vec<float>::blendv(far, near_zero, a < Vec<float>(0.625f)) | (x & Vec<float>(-0.0f));
}

inline Lanes<float> tanh(const Lanes<float>& a) {
  return {tanh_of_floats(a.lo), tanh_of_floats(a.hi)};
}
#endif

#define CPU_LANES_BINARY(name, method)                  \
  template <typename T>                                 \
  Lanes<T> name(const Lanes<T>& a, const Lanes<T>& b) { \
    return {a.lo.method(b.lo), a.hi.method(b.hi)};      \
  }
CPU_LANES_BINARY(pow, pow)
CPU_LANES_BINARY(atan2, atan2)
CPU_LANES_BINARY(hypot, hypot)
CPU_LANES_BINARY(fmod, fmod)
CPU_LANES_BINARY(copysign, copysign)
#undef CPU_LANES_BINARY

// The functions at::vec has no vector version of (or computes otherwise: its round rounds
// halves to even, C's away from zero): lane by lane, with the C++ function.
#define CPU_LANES_EACH(name)                                                \
  template <typename T>                                                     \
  Lanes<T> name(const Lanes<T>& a) {                                        \
    __at_align__ T values[Lanes<T>::size()];                                \
    a.lo.store(values);                                                     \
    a.hi.store(values + Vec<T>::size());                                    \
    for (T& value : values) value = std::name(value);                       \
    return {Vec<T>::loadu(values), Vec<T>::loadu(values + Vec<T>::size())}; \
  }
CPU_LANES_EACH(cbrt)
CPU_LANES_EACH(tgamma)
CPU_LANES_EACH(asinh)
CPU_LANES_EACH(acosh)
CPU_LANES_EACH(atanh)
CPU_LANES_EACH(round)
#undef CPU_LANES_EACH

// pow(x, 2): an integer power by multiplication, as CUDA's pow(float, int).
template <typename T>
Lanes<T> pow(const Lanes<T>& a, int n) {
  if (n < 0) return Lanes<T>(T(1)) / pow(a, -n);
  if (n > 16) return pow(a, Lanes<T>(T(n)));
  Lanes<T> result(T(1)), power = a;
  for (; n > 0; n >>= 1, power = power * power) {
    if (n & 1) result = result * power;
  }
  return result;
}

// min, max and clamp: NaN in, NaN out, as torch.minimum, maximum and clamp.
template <typename T>
Lanes<T> min(const Lanes<T>& a, const Lanes<T>& b) {
  return {at::vec::minimum(a.lo, b.lo), at::vec::minimum(a.hi, b.hi)};
}
template <typename T>
Lanes<T> max(const Lanes<T>& a, const Lanes<T>& b) {
  return {at::vec::maximum(a.lo, b.lo), at::vec::maximum(a.hi, b.hi)};
}
template <typename T>
Lanes<T> clamp(const Lanes<T>& v, const Lanes<T>& low, const Lanes<T>& high) {
  return min(max(v, low), high);
}
// fmin and fmax: the other argument where one is NaN, as C's.
template <typename T>
Lanes<T> fmin(const Lanes<T>& a, const Lanes<T>& b) {
  return where(a != a, b, where(b != b, a, min(a, b)));
}
template <typename T>
Lanes<T> fmax(const Lanes<T>& a, const Lanes<T>& b) {
  return where(a != a, b, where(b != b, a, max(a, b)));
}
template <typename T>
Lanes<T> fma(const Lanes<T>& a, const Lanes<T>& b, const Lanes<T>& c) {
  return {at::vec::fmadd(a.lo, b.lo, c.lo), at::vec::fmadd(a.hi, b.hi, c.hi)};
}

template <typename T>
constexpr bool is_reduced_float = std::is_same_v<T, c10::BFloat16> || std::is_same_v<T, c10::Half>;

// Lanes<float>::size() half or bfloat16 values to Lanes<float> and back. With AVX2 or AVX512,
// by at::vec's conversions on the registers: its Vectorized<BFloat16> and <Half> take their
// constructors from a class template, which GCC compiles without the file's target (not
// inlined, and another ABI).
template <typename T>
[[gnu::always_inline]] inline Lanes<float> to_float(const T* p) {
#if defined(CPU_CAPABILITY_AVX512)
  const __m512i bits = _mm512_loadu_si512(p);
  __m512 lo, hi;
#elif defined(CPU_CAPABILITY_AVX2)
  const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  __m256 lo, hi;
#endif
#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
  if constexpr (std::is_same_v<T, c10::BFloat16>) {
    at::vec::cvtbf16_fp32(bits, lo, hi);
  } else {
    at::vec::cvtfp16_fp32(bits, lo, hi);
  }
  return {Vec<float>(lo), Vec<float>(hi)};
#else
  const auto [lo, hi] = at::vec::convert_to_float<T>(Vec<T>::loadu(p));
  return {lo, hi};
#endif
}
template <typename T>
[[gnu::always_inline]] inline void from_float(T* p, const Lanes<float>& v) {
#if defined(CPU_CAPABILITY_AVX512) || defined(CPU_CAPABILITY_AVX2)
  const auto bits = std::is_same_v<T, c10::BFloat16> ? at::vec::cvtfp32_bf16(v.lo, v.hi)
                                                     : at::vec::cvtfp32_fp16(v.lo, v.hi);
#endif
#if defined(CPU_CAPABILITY_AVX512)
  _mm512_storeu_si512(p, bits);
#elif defined(CPU_CAPABILITY_AVX2)
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), bits);
#else
  at::vec::convert_from_float<T>(v.lo, v.hi).store(p);
#endif
}

// The elements load() and store() take one by one: the last ones of a range, and those of
// a tensor read every `step` elements. Apart, so that the whole vectors' path is inlined.
template <typename acc_t, typename scalar_t>
[[gnu::noinline]] Lanes<acc_t> load_each(const scalar_t* p, int64_t step, int64_t count) {
  __at_align__ acc_t values[Lanes<acc_t>::size()] = {};
  for (int64_t j = 0; j < count; ++j) values[j] = static_cast<acc_t>(p[j * step]);
  return {Vec<acc_t>::loadu(values), Vec<acc_t>::loadu(values + Vec<acc_t>::size())};
}
template <typename out_t, typename acc_t>
[[gnu::noinline]] void store_each(out_t* p, const Lanes<acc_t>& v, int64_t count) {
  __at_align__ acc_t values[Lanes<acc_t>::size()];
  v.lo.store(values);
  v.hi.store(values + Vec<acc_t>::size());
  for (int64_t j = 0; j < count; ++j) {
    if constexpr (std::is_integral_v<out_t>) {
      // truncated, then wrapped around as torch's integer arithmetic wraps (the glue's to_out)
      p[j] = static_cast<out_t>(static_cast<int64_t>(values[j]));
    } else {
      p[j] = static_cast<out_t>(values[j]);
    }
  }
}

// Lanes<acc_t>::size() elements (`count` of them, fewer at the end of a range) from p, one
// every `step` (1: consecutive, 0: one value for all, as a broadcast input), in acc_t.
template <typename acc_t, typename scalar_t>
[[gnu::always_inline]] inline Lanes<acc_t> load(const scalar_t* p, int64_t step, int64_t count) {
  if (step == 1 && count == Lanes<acc_t>::size()) {
    if constexpr (std::is_same_v<scalar_t, acc_t>) {
      return {Vec<acc_t>::loadu(p), Vec<acc_t>::loadu(p + Vec<acc_t>::size())};
    } else if constexpr (is_reduced_float<scalar_t> && std::is_same_v<acc_t, float>) {
      return to_float(p);
    }
  }
  if (step == 0) return Lanes<acc_t>(static_cast<acc_t>(*p));
  return load_each<acc_t>(p, step, count);
}

// The first `count` lanes of v to p, consecutive, as out_t.
template <typename out_t, typename acc_t>
[[gnu::always_inline]] inline void store(out_t* p, const Lanes<acc_t>& v, int64_t count) {
  if (count == Lanes<acc_t>::size()) {
    if constexpr (std::is_same_v<out_t, acc_t>) {
      v.lo.store(p);
      v.hi.store(p + Vec<acc_t>::size());
      return;
    } else if constexpr (is_reduced_float<out_t> && std::is_same_v<acc_t, float>) {
      return from_float(p, v);
    }
  }
  store_each(p, v, count);
}

// f(i, width) for the vectors of `count` elements: i = 0, size, 2 size, ..., and width the
// elements of each (size but at the end). Two whole vectors a step: two chains of work that
// the CPU overlaps, and half the loop's own instructions.
template <typename L, typename F>
[[gnu::always_inline]] inline void for_each_vector(int64_t count, const F& f) {
  constexpr int64_t kSize = L::size();
  int64_t i = 0;
  for (; i + 2 * kSize <= count; i += 2 * kSize) {
    f(i, kSize);
    f(i + kSize, kSize);
  }
  for (; i < count; i += kSize) f(i, std::min(kSize, count - i));
}

// The lanes of v in double, Vec<double>::size() of them a part, in lane order: for loops
// whose sums add their terms in double. Converted whole vectors at a time: lane by lane
// (through an array), the conversions and additions took a third of a float32 softmax's
// time on the CPU.
template <typename T>
struct InDouble {
  static constexpr int kParts = Lanes<T>::size() / Vec<double>::size();
  Vec<double> part[kParts];
};
[[gnu::always_inline]] inline InDouble<double> in_double(const Lanes<double>& v) {
  return {{v.lo, v.hi}};
}
[[gnu::always_inline]] inline InDouble<float> in_double(const Lanes<float>& v) {
#if defined(CPU_CAPABILITY_AVX512)
  const __m512 lo = v.lo, hi = v.hi;
  return {{_mm512_cvtps_pd(_mm512_castps512_ps256(lo)),
           _mm512_cvtps_pd(_mm512_extractf32x8_ps(lo, 1)),
           _mm512_cvtps_pd(_mm512_castps512_ps256(hi)),
           _mm512_cvtps_pd(_mm512_extractf32x8_ps(hi, 1))}};
#elif defined(CPU_CAPABILITY_AVX2)
  const __m256 lo = v.lo, hi = v.hi;
  return {
      {_mm256_cvtps_pd(_mm256_castps256_ps128(lo)), _mm256_cvtps_pd(_mm256_extractf128_ps(lo, 1)),
       _mm256_cvtps_pd(_mm256_castps256_ps128(hi)), _mm256_cvtps_pd(_mm256_extractf128_ps(hi, 1))}};
#else
  __at_align__ float lanes[Lanes<float>::size()];
  v.lo.store(lanes);
  v.hi.store(lanes + Vec<float>::size());
  InDouble<float> result;
  for (int k = 0; k < InDouble<float>::kParts; ++k) {
    __at_align__ double part[Vec<double>::size()];
    for (int j = 0; j < Vec<double>::size(); ++j) part[j] = lanes[k * Vec<double>::size() + j];
    result.part[k] = Vec<double>::loadu(part);
  }
  return result;
#endif
}

// sums[j] += lane j of v, in double, for the first `count` lanes.
template <typename T>
[[gnu::always_inline]] inline void add_in_double(double* sums, const Lanes<T>& v, int64_t count) {
  if (count == Lanes<T>::size()) {
    const InDouble<T> d = in_double(v);
    for (int k = 0; k < InDouble<T>::kParts; ++k) {
      double* at = sums + k * Vec<double>::size();
      (Vec<double>::loadu(at) + d.part[k]).store(at);
    }
    return;
  }
  __at_align__ T lanes[Lanes<T>::size()];
  v.lo.store(lanes);
  v.hi.store(lanes + Vec<T>::size());
  for (int64_t j = 0; j < count; ++j) sums[j] += lanes[j];
}

// The step of an input read element after element, as a compile-time constant: a loop
// instantiated with it loads whole vectors without checking the step.
using UnitStep = std::integral_constant<int64_t, 1>;

}  // namespace
}  // namespace CpuVec
