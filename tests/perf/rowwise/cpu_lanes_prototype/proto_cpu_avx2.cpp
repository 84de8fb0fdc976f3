// Prototype: layer_norm and softmax forward rows on Lanes (AVX2), to measure against eager.
// clang-format off
#include "cpu_lanes.h"
// clang-format on
#include <c10/util/BFloat16.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "ln_math.h"
#include "sm_math.h"

namespace proto {

// Sum of `count` lanes of v into the double partials p (count < size only at a row's end).
template <typename L, typename acc_t>
[[gnu::always_inline]] inline void add_into(double* p, const L& v, int64_t count) {
  __at_align__ acc_t t[L::size()];
  v.lo.store(t);
  v.hi.store(t + L::size() / 2);
  if (count == L::size()) {
    for (int j = 0; j < L::size(); ++j) p[j] += t[j];
  } else {
    for (int64_t j = 0; j < count; ++j) p[j] += t[j];
  }
}
template <typename L, typename acc_t>
[[gnu::always_inline]] inline void max_into(double* p, const L& v, int64_t count) {
  __at_align__ acc_t t[L::size()];
  v.lo.store(t);
  v.hi.store(t + L::size() / 2);
  for (int64_t j = 0; j < count; ++j) p[j] = std::fmax(p[j], double(t[j]));
}
template <int N>
double total(const double* p) {
  double s = 0;
  for (int j = 0; j < N; ++j) s += p[j];
  return s;
}

template <typename scalar_t>
void ln_rows(const scalar_t* x, const scalar_t* w, const scalar_t* b, scalar_t* out, int64_t begin,
             int64_t end, int64_t n, double eps_d) {
  using acc_t = std::conditional_t<std::is_same_v<scalar_t, double>, double, float>;
  using L = CpuVec::Lanes<acc_t>;
  const L n_l(static_cast<acc_t>(n)), eps(static_cast<acc_t>(eps_d));
  for (int64_t r = begin; r < end; ++r) {
    const scalar_t* xr = x + r * n;
    scalar_t* outr = out + r * n;
    __at_align__ double p[L::size()] = {};
    CpuVec::for_each_vector<L>(n, [&](int64_t i, int64_t width) __attribute__((always_inline)) {
      add_into<L, acc_t>(p,
                         ln::reduce_mu<L>(CpuVec::load<acc_t>(xr + i, 1, width),
                                          CpuVec::load<acc_t>(w + i, 1, width),
                                          CpuVec::load<acc_t>(b + i, 1, width), eps, n_l),
                         width);
    });
    const acc_t mu = static_cast<acc_t>(total<L::size()>(p) / n);
    __at_align__ double q[L::size()] = {};
    const L mu_l(mu);
    CpuVec::for_each_vector<L>(n, [&](int64_t i, int64_t width) __attribute__((always_inline)) {
      add_into<L, acc_t>(q,
                         ln::reduce_var<L>(CpuVec::load<acc_t>(xr + i, 1, width),
                                           CpuVec::load<acc_t>(w + i, 1, width),
                                           CpuVec::load<acc_t>(b + i, 1, width), eps, n_l, mu_l),
                         width);
    });
    const L var_l(static_cast<acc_t>(total<L::size()>(q) / n));
    CpuVec::for_each_vector<L>(n, [&](int64_t i, int64_t width) __attribute__((always_inline)) {
      CpuVec::store(outr + i,
                    ln::forward<L>(CpuVec::load<acc_t>(xr + i, 1, width),
                                   CpuVec::load<acc_t>(w + i, 1, width),
                                   CpuVec::load<acc_t>(b + i, 1, width), eps, n_l, mu_l, var_l),
                    width);
    });
  }
}

template <typename scalar_t>
void sm_rows(const scalar_t* x, scalar_t* out, int64_t begin, int64_t end, int64_t n) {
  using acc_t = std::conditional_t<std::is_same_v<scalar_t, double>, double, float>;
  using L = CpuVec::Lanes<acc_t>;
  const L n_l(static_cast<acc_t>(n));
  for (int64_t r = begin; r < end; ++r) {
    const scalar_t* xr = x + r * n;
    scalar_t* outr = out + r * n;
    __at_align__ double p[L::size()];
    for (auto& v : p) v = -std::numeric_limits<double>::infinity();
    CpuVec::for_each_vector<L>(n, [&](int64_t i, int64_t width) __attribute__((always_inline)) {
      max_into<L, acc_t>(p, sm::reduce_m<L>(CpuVec::load<acc_t>(xr + i, 1, width), n_l), width);
    });
    double m = p[0];
    for (auto v : p) m = std::fmax(m, v);
    const L m_l(static_cast<acc_t>(m));
    __at_align__ double q[L::size()] = {};
    CpuVec::for_each_vector<L>(n, [&](int64_t i, int64_t width) __attribute__((always_inline)) {
      add_into<L, acc_t>(q, sm::reduce_z<L>(CpuVec::load<acc_t>(xr + i, 1, width), n_l, m_l),
                         width);
    });
    const L z_l(static_cast<acc_t>(total<L::size()>(q)));
    CpuVec::for_each_vector<L>(n, [&](int64_t i, int64_t width) __attribute__((always_inline)) {
      CpuVec::store(outr + i, sm::forward<L>(CpuVec::load<acc_t>(xr + i, 1, width), n_l, m_l, z_l),
                    width);
    });
  }
}

template void ln_rows<float>(const float*, const float*, const float*, float*, int64_t, int64_t,
                             int64_t, double);
template void ln_rows<c10::BFloat16>(const c10::BFloat16*, const c10::BFloat16*,
                                     const c10::BFloat16*, c10::BFloat16*, int64_t, int64_t,
                                     int64_t, double);
template void sm_rows<float>(const float*, float*, int64_t, int64_t, int64_t);
template void sm_rows<c10::BFloat16>(const c10::BFloat16*, c10::BFloat16*, int64_t, int64_t,
                                     int64_t);
}  // namespace proto
