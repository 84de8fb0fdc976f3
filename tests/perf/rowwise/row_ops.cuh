// row_ops.cuh: the specs a generator would render for the rowwise presets.
// Each struct is one op direction; everything else lives in row_kernels.cuh.
// The formula lines (red / fin / out / stat / colgrad) are the editable part; the
// counts above them are what the generator derives from the formulas.
// Formulas compute in V = value_t<E> (float for float/half/bf16, double for double):
// literals as V(...) or exact float literals, math through rk_exp / rk_log / rk_rsqrt.
#pragma once
#include "row_kernels.cuh"

namespace rowk {
namespace ops {

// y = x * rstd * w,  rstd = 1 / sqrt(mean(x^2) + eps)             (keeps rstd per row)
struct RmsNormFwd {
  template <class V> struct Scalars { V eps; };
  static constexpr int kRowIn = 1, kColIn = 1, kStatIn = 0;   // x | weight | -
  static constexpr int kRed = 1, kStages = 1;                 // r0 = rstd
  static constexpr int kRowOut = 1, kStatOut = 1, kColGrad = 0;  // y | rstd | -
  RK_HD static constexpr Red red_op(int) { return Red::Sum; }
  RK_HD static constexpr int red_stage(int) { return 0; }
  template <class E> RK_DEV static value_t<E> red(int, const E& e) { return e.x[0] * e.x[0]; }
  template <class E> RK_DEV static value_t<E> fin(int, value_t<E> v, const E& e) { return rk_rsqrt(v / e.n + e.s.eps); }
  template <class E> RK_DEV static value_t<E> out(int, const E& e) { return e.x[0] * e.r[0] * e.c[0]; }
  template <class E> RK_DEV static value_t<E> stat(int, const E& e) { return e.r[0]; }
  template <class E> RK_DEV static value_t<E> colgrad(int, const E&) { return value_t<E>(0); }
};

// dx = rstd * (w*g - x * rstd^2 * mean(w*g*x)),  dw = sum_rows g * x * rstd
struct RmsNormBwd {
  template <class V> struct Scalars {};
  static constexpr int kRowIn = 2, kColIn = 1, kStatIn = 1;   // x, g | weight | rstd
  static constexpr int kRed = 1, kStages = 1;                 // r0 = mean(w*g*x)
  static constexpr int kRowOut = 1, kStatOut = 0, kColGrad = 1;  // dx | - | dw
  RK_HD static constexpr Red red_op(int) { return Red::Sum; }
  RK_HD static constexpr int red_stage(int) { return 0; }
  template <class E> RK_DEV static value_t<E> red(int, const E& e) { return e.c[0] * e.x[1] * e.x[0]; }
  template <class E> RK_DEV static value_t<E> fin(int, value_t<E> v, const E& e) { return v / e.n; }
  template <class E> RK_DEV static value_t<E> out(int, const E& e) {
    const value_t<E> rstd = e.st[0];
    return rstd * (e.c[0] * e.x[1] - e.x[0] * rstd * rstd * e.r[0]);
  }
  template <class E> RK_DEV static value_t<E> stat(int, const E&) { return value_t<E>(0); }
  template <class E> RK_DEV static value_t<E> colgrad(int, const E& e) { return e.x[1] * e.x[0] * e.st[0]; }
};

// y = (x - mean) * rstd * w + b                                  (keeps mean, rstd)
struct LayerNormFwd {
  template <class V> struct Scalars { V eps; };
  static constexpr int kRowIn = 1, kColIn = 2, kStatIn = 0;   // x | weight, bias | -
  static constexpr int kRed = 2, kStages = 2;                 // r0 = mean, r1 = rstd
  static constexpr int kRowOut = 1, kStatOut = 2, kColGrad = 0;  // y | mean, rstd | -
  RK_HD static constexpr Red red_op(int) { return Red::Sum; }
  RK_HD static constexpr int red_stage(int j) { return j; }
  template <class E> RK_DEV static value_t<E> red(int j, const E& e) {
    if (j == 0) return e.x[0];
    const value_t<E> d = e.x[0] - e.r[0];
    return d * d;
  }
  template <class E> RK_DEV static value_t<E> fin(int j, value_t<E> v, const E& e) {
    return j == 0 ? v / e.n : rk_rsqrt(v / e.n + e.s.eps);
  }
  template <class E> RK_DEV static value_t<E> out(int, const E& e) { return (e.x[0] - e.r[0]) * e.r[1] * e.c[0] + e.c[1]; }
  template <class E> RK_DEV static value_t<E> stat(int k, const E& e) { return e.r[k]; }
  template <class E> RK_DEV static value_t<E> colgrad(int, const E&) { return value_t<E>(0); }
};

// xhat = (x - mean) * rstd
// dx = rstd * (w*g - mean(w*g) - xhat * mean(w*g*xhat)),  dw = sum g*xhat,  db = sum g
struct LayerNormBwd {
  template <class V> struct Scalars {};
  static constexpr int kRowIn = 2, kColIn = 1, kStatIn = 2;   // x, g | weight | mean, rstd
  static constexpr int kRed = 2, kStages = 1;
  static constexpr int kRowOut = 1, kStatOut = 0, kColGrad = 2;  // dx | - | dw, db
  RK_HD static constexpr Red red_op(int) { return Red::Sum; }
  RK_HD static constexpr int red_stage(int) { return 0; }
  template <class E> RK_DEV static value_t<E> xhat(const E& e) { return (e.x[0] - e.st[0]) * e.st[1]; }
  template <class E> RK_DEV static value_t<E> red(int j, const E& e) {
    const value_t<E> wg = e.c[0] * e.x[1];
    return j == 0 ? wg : wg * xhat(e);
  }
  template <class E> RK_DEV static value_t<E> fin(int, value_t<E> v, const E& e) { return v / e.n; }
  template <class E> RK_DEV static value_t<E> out(int, const E& e) {
    return e.st[1] * (e.c[0] * e.x[1] - e.r[0] - xhat(e) * e.r[1]);
  }
  template <class E> RK_DEV static value_t<E> stat(int, const E&) { return value_t<E>(0); }
  template <class E> RK_DEV static value_t<E> colgrad(int k, const E& e) { return k == 0 ? e.x[1] * xhat(e) : e.x[1]; }
};

// y = exp(x - max) / sum(exp(x - max))
struct SoftmaxFwd {
  template <class V> struct Scalars {};
  static constexpr int kRowIn = 1, kColIn = 0, kStatIn = 0;
  static constexpr int kRed = 2, kStages = 2;                 // r0 = max, r1 = 1/sum
  static constexpr int kRowOut = 1, kStatOut = 0, kColGrad = 0;
  RK_HD static constexpr Red red_op(int j) { return j == 0 ? Red::Max : Red::Sum; }
  RK_HD static constexpr int red_stage(int j) { return j; }
  // Built with -DSOFTMAX_AS_GENERATED=1/2/3 (build_ext.py --define): as opgen's spec computes
  // it: 1 the C library's exp (expf: accurate, more instructions) instead of __expf, 2 the
  // reciprocal of the sum per element (forward's `* (1 / z)`) instead of once per row, 3 both.
#if defined(SOFTMAX_AS_GENERATED) && (SOFTMAX_AS_GENERATED & 1)
  template <class A> RK_DEV static A sm_exp(A v) { return exp(v); }
#else
  template <class A> RK_DEV static A sm_exp(A v) { return rk_exp(v); }
#endif
#if defined(SOFTMAX_AS_GENERATED) && (SOFTMAX_AS_GENERATED & 2)
  template <class E> RK_DEV static value_t<E> red(int j, const E& e) { return j == 0 ? e.x[0] : sm_exp(e.x[0] - e.r[0]); }
  template <class E> RK_DEV static value_t<E> fin(int, value_t<E> v, const E&) { return v; }
  template <class E> RK_DEV static value_t<E> out(int, const E& e) { return sm_exp(e.x[0] - e.r[0]) * (value_t<E>(1) / e.r[1]); }
#else
  template <class E> RK_DEV static value_t<E> red(int j, const E& e) { return j == 0 ? e.x[0] : sm_exp(e.x[0] - e.r[0]); }
  template <class E> RK_DEV static value_t<E> fin(int j, value_t<E> v, const E&) { return j == 0 ? v : value_t<E>(1) / v; }
  template <class E> RK_DEV static value_t<E> out(int, const E& e) { return sm_exp(e.x[0] - e.r[0]) * e.r[1]; }
#endif
  template <class E> RK_DEV static value_t<E> stat(int, const E&) { return value_t<E>(0); }
  template <class E> RK_DEV static value_t<E> colgrad(int, const E&) { return value_t<E>(0); }
};

// dx = y * (g - sum(g*y))            (row inputs: y, g)
struct SoftmaxBwd {
  template <class V> struct Scalars {};
  static constexpr int kRowIn = 2, kColIn = 0, kStatIn = 0;
  static constexpr int kRed = 1, kStages = 1;
  static constexpr int kRowOut = 1, kStatOut = 0, kColGrad = 0;
  RK_HD static constexpr Red red_op(int) { return Red::Sum; }
  RK_HD static constexpr int red_stage(int) { return 0; }
  template <class E> RK_DEV static value_t<E> red(int, const E& e) { return e.x[1] * e.x[0]; }
  template <class E> RK_DEV static value_t<E> fin(int, value_t<E> v, const E&) { return v; }
  template <class E> RK_DEV static value_t<E> out(int, const E& e) { return e.x[0] * (e.x[1] - e.r[0]); }
  template <class E> RK_DEV static value_t<E> stat(int, const E&) { return value_t<E>(0); }
  template <class E> RK_DEV static value_t<E> colgrad(int, const E&) { return value_t<E>(0); }
};

// y = x - max - log(sum(exp(x - max)))
struct LogSoftmaxFwd {
  template <class V> struct Scalars {};
  static constexpr int kRowIn = 1, kColIn = 0, kStatIn = 0;
  static constexpr int kRed = 2, kStages = 2;                 // r0 = max, r1 = log(sum)
  static constexpr int kRowOut = 1, kStatOut = 0, kColGrad = 0;
  RK_HD static constexpr Red red_op(int j) { return j == 0 ? Red::Max : Red::Sum; }
  RK_HD static constexpr int red_stage(int j) { return j; }
  template <class E> RK_DEV static value_t<E> red(int j, const E& e) { return j == 0 ? e.x[0] : rk_exp(e.x[0] - e.r[0]); }
  template <class E> RK_DEV static value_t<E> fin(int j, value_t<E> v, const E&) { return j == 0 ? v : rk_log(v); }
  template <class E> RK_DEV static value_t<E> out(int, const E& e) { return e.x[0] - e.r[0] - e.r[1]; }
  template <class E> RK_DEV static value_t<E> stat(int, const E&) { return value_t<E>(0); }
  template <class E> RK_DEV static value_t<E> colgrad(int, const E&) { return value_t<E>(0); }
};

// dx = g - exp(y) * sum(g)            (row inputs: y = log-probabilities, g)
struct LogSoftmaxBwd {
  template <class V> struct Scalars {};
  static constexpr int kRowIn = 2, kColIn = 0, kStatIn = 0;
  static constexpr int kRed = 1, kStages = 1;
  static constexpr int kRowOut = 1, kStatOut = 0, kColGrad = 0;
  RK_HD static constexpr Red red_op(int) { return Red::Sum; }
  RK_HD static constexpr int red_stage(int) { return 0; }
  template <class E> RK_DEV static value_t<E> red(int, const E& e) { return e.x[1]; }
  template <class E> RK_DEV static value_t<E> fin(int, value_t<E> v, const E&) { return v; }
  template <class E> RK_DEV static value_t<E> out(int, const E& e) { return e.x[1] - rk_exp(e.x[0]) * e.r[0]; }
  template <class E> RK_DEV static value_t<E> stat(int, const E&) { return value_t<E>(0); }
  template <class E> RK_DEV static value_t<E> colgrad(int, const E&) { return value_t<E>(0); }
};

}  // namespace ops
}  // namespace rowk
