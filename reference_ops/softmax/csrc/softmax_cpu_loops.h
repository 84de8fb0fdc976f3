// softmax_cpu_loops.h: softmax's forward and backward on the CPU's vectors, with the formulas of
// csrc/softmax_math.h on Lanes (csrc/cpu_lanes.h): 16 floats (8 doubles) at a time as built by
// csrc/softmax_cpu_avx2.cpp, 32 (16) as built by csrc/softmax_cpu_avx512.cpp. Each of
// those includes csrc/cpu_lanes.h, which makes it code for its processors, then this file.
//
// csrc/softmax.cpp splits the rows over threads and calls forward_rows (and backward_rows) for each
// share of them where at::get_cpu_capability() is AVX2 or AVX512 (as PyTorch picks its own kernels:
// ATEN_CPU_CAPABILITY=avx2 or default turns them down), and its scalar loops elsewhere. Each
// reduction sums (or takes the max or min of) its lanes in double, as the scalar loops do, so both
// give the same values to a float's rounding. The files that include this are vector code, so
// nothing in them may run before that check: they hold no data with a dynamic initializer.
#pragma once

#include <cmath>
#include <limits>
#include <type_traits>

#include "softmax_math.h"

namespace softmax {

// The processors this file is built for, by csrc/cpu_lanes.h.
#if defined(CPU_CAPABILITY_AVX512)
constexpr CpuIsa kBuiltFor = CpuIsa::kAvx512;
#else
constexpr CpuIsa kBuiltFor = CpuIsa::kAvx2;
#endif

// A row's sum of vectors of terms, in double: each lane a partial sum of its own, kept in
// vectors of doubles.
template <typename acc_t>
class RowSum {
 public:
  using L = CpuVec::Lanes<acc_t>;
  using Parts = CpuVec::InDouble<acc_t>;
  RowSum() {
    for (auto& part : partial_.part) part = CpuVec::Vec<double>(0.0);
  }
  // The first `width` lanes of v (all but at the row's end).
  void add(const L& v, int64_t width) {
    if (width == L::size()) {
      const Parts d = CpuVec::in_double(v);
      for (int k = 0; k < Parts::kParts; ++k) partial_.part[k] = partial_.part[k] + d.part[k];
      return;
    }
    __at_align__ double sums[L::size()];
    store(sums);
    CpuVec::add_in_double(sums, v, width);
    for (int k = 0; k < Parts::kParts; ++k) {
      partial_.part[k] = CpuVec::Vec<double>::loadu(sums + k * CpuVec::Vec<double>::size());
    }
  }
  // The partial sums added up: vectors, then the lanes of their sum (a row of 64 floats spent
  // a fifth of its time adding them one after another).
  double value() const {
    CpuVec::Vec<double> total = partial_.part[0];
    for (int k = 1; k < Parts::kParts; ++k) total = total + partial_.part[k];
    // Through memory whole: at::vec's vec_reduce_all shuffles doubles through the stack in
    // halves, and each half-vector store stalled the load that read it back.
    __at_align__ double lanes[CpuVec::Vec<double>::size()];
    total.store(lanes);
    double sum = lanes[0];
    for (int j = 1; j < CpuVec::Vec<double>::size(); ++j) sum += lanes[j];
    return sum;
  }

 private:
  void store(double* sums) const {
    for (int k = 0; k < Parts::kParts; ++k)
      partial_.part[k].store(sums + k * CpuVec::Vec<double>::size());
  }
  Parts partial_;
};

// A row's max (kMax) or min of vectors of terms: NaN if a term is NaN, as torch.amax and
// torch.amin take it (the max and min of csrc/softmax_math.h, as the scalar loops).
template <typename acc_t, bool kMax>
class RowExtreme {
 public:
  using L = CpuVec::Lanes<acc_t>;
  // The first `width` lanes of v (all but at the row's end).
  void add(const L& v, int64_t width) {
    if (width == L::size()) {
      running_ = kMax ? CpuVec::max(running_, v) : CpuVec::min(running_, v);
      return;
    }
    __at_align__ acc_t lanes[L::size()];
    v.lo.store(lanes);
    v.hi.store(lanes + L::size() / 2);
    for (int64_t j = 0; j < width; ++j) combine(double(lanes[j]));
  }
  double value() {
    using V = CpuVec::Vec<acc_t>;
    const auto extreme = [](const V& a, const V& b) {
      return kMax ? at::vec::maximum(a, b) : at::vec::minimum(a, b);
    };
    combine(double(at::vec::vec_reduce_all<acc_t>(extreme, extreme(running_.lo, running_.hi))));
    return extreme_;
  }

 private:
  static constexpr double kStart = (kMax ? -1 : 1) * std::numeric_limits<double>::infinity();
  void combine(double v) { extreme_ = kMax ? max(extreme_, v) : min(extreme_, v); }
  L running_ = L(static_cast<acc_t>(kStart));
  double extreme_ = kStart;
};

// Rows begin..end of the forward: each reduction a pass over the row's vectors, then the
// outputs.
template <CpuIsa isa, typename scalar_t, typename out_t>
void forward_rows(const Rows<const scalar_t*>& data, const Columns<const scalar_t*>& column_data,
                  out_t* out, acc_type<scalar_t>* terms, int64_t rows, int64_t n, int64_t begin,
                  int64_t end, const Scalars<double>& s) {
  // double for double; float for float and the half types, as the scalar loops.
  using acc_t = acc_type<scalar_t>;
  using L = CpuVec::Lanes<acc_t>;
  static_assert(isa == kBuiltFor, "each file builds the loops for its own processors");
  const acc_t n_acc = static_cast<acc_t>(n);
  const L n_lanes(n_acc);
  for (int64_t r = begin; r < end; ++r) {
    const int64_t row = r * n;
    Reductions<acc_t> red;
    Reductions<L> red_lanes;
    {  // m = max(x)
      RowExtreme<acc_t, true> v;
      CpuVec::for_each_vector<L>(n, [&](int64_t i, int64_t width) __attribute__((always_inline)) {
        v.add(reduce_m<L>(CpuVec::load<acc_t>(data.x + row + i, 1, width), n_lanes), width);
      });
      red.m = static_cast<acc_t>(v.value());
      red_lanes.m = L(red.m);
    }
    {  // z = sum(exp(x - m)), each term kept in `terms` for the outputs
      RowSum<acc_t> v;
      CpuVec::for_each_vector<L>(n, [&](int64_t i, int64_t width) __attribute__((always_inline)) {
        const L term =
            reduce_z<L>(CpuVec::load<acc_t>(data.x + row + i, 1, width), n_lanes, red_lanes.m);
        CpuVec::store(terms + i, term, width);
        v.add(term, width);
      });
      red.z = static_cast<acc_t>(v.value());
      red_lanes.z = L(red.z);
    }
    CpuVec::for_each_vector<L>(n, [&](int64_t i, int64_t width) __attribute__((always_inline)) {
      const L z_term = CpuVec::load<acc_t>(terms + i, 1, width);
      CpuVec::store(out + row + i,
                    forward_given_term<L>(z_term, CpuVec::load<acc_t>(data.x + row + i, 1, width),
                                          n_lanes, red_lanes.m, red_lanes.z),
                    width);
    });
  }
}

// Rows begin..end of the backward: the backward's, each a pass
// over the row's vectors; then the row tensors' gradients. Each row's reductions go to
// grad_red[r], for backward_columns.
template <CpuIsa isa, typename scalar_t>
void backward_rows(const scalar_t* grad, const Output<const scalar_t*>& data,
                   const Columns<const scalar_t*>& column_data,
                   GradReductions<acc_type<scalar_t>>* grad_red,
                   const RowGrads<scalar_t*>& row_grads, int64_t rows, int64_t n, int64_t begin,
                   int64_t end, const Scalars<double>& s) {
  using acc_t = acc_type<scalar_t>;
  using L = CpuVec::Lanes<acc_t>;
  static_assert(isa == kBuiltFor, "each file builds the loops for its own processors");
  const L n_lanes(static_cast<acc_t>(n));
  for (int64_t r = begin; r < end; ++r) {
    const int64_t row = r * n;
    GradReductions<L> grad_lanes;
    {  // gy = sum(grad * y)
      RowSum<acc_t> v;
      CpuVec::for_each_vector<L>(n, [&](int64_t i, int64_t width) __attribute__((always_inline)) {
        const L g = CpuVec::load<acc_t>(grad + row + i, 1, width);
        const L y = CpuVec::load<acc_t>(data.y + row + i, 1, width);
        v.add(grad_reduce_gy<L>(g, y, n_lanes), width);
      });
      grad_red[r].gy = static_cast<acc_t>(v.value());
      grad_lanes.gy = L(grad_red[r].gy);
    }
    CpuVec::for_each_vector<L>(n, [&](int64_t i, int64_t width) __attribute__((always_inline)) {
      const L g = CpuVec::load<acc_t>(grad + row + i, 1, width);
      const L y = CpuVec::load<acc_t>(data.y + row + i, 1, width);
      CpuVec::store(row_grads.x + row + i, grad_wrt_x<L>(g, y, n_lanes, grad_lanes.gy), width);
    });
  }
}

// The dtypes csrc/softmax.cpp dispatches to, for the processors of the including file.
template void forward_rows<kBuiltFor, float, float>(const Rows<const float*>& data,
                                                    const Columns<const float*>& column_data,
                                                    float* out, acc_type<float>* terms,
                                                    int64_t rows, int64_t n, int64_t begin,
                                                    int64_t end, const Scalars<double>& s);
template void backward_rows<kBuiltFor, float>(const float* grad, const Output<const float*>& data,
                                              const Columns<const float*>& column_data,
                                              GradReductions<acc_type<float>>* grad_red,
                                              const RowGrads<float*>& row_grads, int64_t rows,
                                              int64_t n, int64_t begin, int64_t end,
                                              const Scalars<double>& s);
template void forward_rows<kBuiltFor, double, double>(const Rows<const double*>& data,
                                                      const Columns<const double*>& column_data,
                                                      double* out, acc_type<double>* terms,
                                                      int64_t rows, int64_t n, int64_t begin,
                                                      int64_t end, const Scalars<double>& s);
template void backward_rows<kBuiltFor, double>(const double* grad,
                                               const Output<const double*>& data,
                                               const Columns<const double*>& column_data,
                                               GradReductions<acc_type<double>>* grad_red,
                                               const RowGrads<double*>& row_grads, int64_t rows,
                                               int64_t n, int64_t begin, int64_t end,
                                               const Scalars<double>& s);
template void forward_rows<kBuiltFor, c10::Half, c10::Half>(
    const Rows<const c10::Half*>& data, const Columns<const c10::Half*>& column_data,
    c10::Half* out, acc_type<c10::Half>* terms, int64_t rows, int64_t n, int64_t begin, int64_t end,
    const Scalars<double>& s);
template void backward_rows<kBuiltFor, c10::Half>(const c10::Half* grad,
                                                  const Output<const c10::Half*>& data,
                                                  const Columns<const c10::Half*>& column_data,
                                                  GradReductions<acc_type<c10::Half>>* grad_red,
                                                  const RowGrads<c10::Half*>& row_grads,
                                                  int64_t rows, int64_t n, int64_t begin,
                                                  int64_t end, const Scalars<double>& s);
template void forward_rows<kBuiltFor, c10::BFloat16, c10::BFloat16>(
    const Rows<const c10::BFloat16*>& data, const Columns<const c10::BFloat16*>& column_data,
    c10::BFloat16* out, acc_type<c10::BFloat16>* terms, int64_t rows, int64_t n, int64_t begin,
    int64_t end, const Scalars<double>& s);
template void backward_rows<kBuiltFor, c10::BFloat16>(
    const c10::BFloat16* grad, const Output<const c10::BFloat16*>& data,
    const Columns<const c10::BFloat16*>& column_data,
    GradReductions<acc_type<c10::BFloat16>>* grad_red, const RowGrads<c10::BFloat16*>& row_grads,
    int64_t rows, int64_t n, int64_t begin, int64_t end, const Scalars<double>& s);

}  // namespace softmax
