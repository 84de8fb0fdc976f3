// fused_axpby_cpu_loops.h: fused_axpby's CPU loops on vectors, with the formulas of
// csrc/fused_axpby_math.h on Lanes (csrc/cpu_lanes.h): 16 floats (8 doubles) at a time as built by
// csrc/fused_axpby_cpu_avx2.cpp, 32 (16) as built by csrc/fused_axpby_cpu_avx512.cpp. Each of
// those includes csrc/cpu_lanes.h, which makes it code for its processors, then this file.
//
// csrc/fused_axpby.cpp splits the elements over threads and calls these for each run of them
// where at::get_cpu_capability() is AVX2 or AVX512 (as PyTorch picks its own kernels:
// ATEN_CPU_CAPABILITY=avx2 or default turns them down), and its scalar loops elsewhere. The
// files that include this are vector code, so nothing in them may run before that check: they
// hold no data with a dynamic initializer.
#pragma once

#include <algorithm>
#include <type_traits>

#include "fused_axpby_math.h"

namespace fused_axpby {

// The processors this file is built for, by csrc/cpu_lanes.h.
#if defined(CPU_CAPABILITY_AVX512)
constexpr CpuIsa kBuiltFor = CpuIsa::kAvx512;
#else
constexpr CpuIsa kBuiltFor = CpuIsa::kAvx2;
#endif

template <CpuIsa isa, typename scalar_t, typename out_t>
void forward_lanes(const Tensors<const scalar_t*>& data, const Tensors<int64_t>& step, out_t* out,
                   int64_t count, const Scalars<double>& s) {
  // double where the input or the output is double; float for the rest, as the scalar loops.
  using acc_t =
      std::conditional_t<std::is_same_v<scalar_t, double> || std::is_same_v<out_t, double>, double,
                         float>;
  using L = CpuVec::Lanes<acc_t>;
  static_assert(isa == kBuiltFor, "each file builds the loops for its own processors");
  // The float scalars in every lane; int and bool ones as they are.
  const Scalars<L> s_lanes{L(s.a)};
  // The loop for the inputs' steps: as given, or all 1 as a compile-time constant where no
  // input broadcasts (the usual case), which takes each load's checks out of the loop.
  const auto run = [&](const auto& steps) __attribute__((always_inline)) {
    CpuVec::for_each_vector<L>(count, [&](int64_t i, int64_t width) __attribute__((always_inline)) {
      CpuVec::store(out + i,
                    forward<L>(s_lanes.a, CpuVec::load<acc_t>(data.x + i * steps.x, steps.x, width),
                               CpuVec::load<acc_t>(data.b + i * steps.b, steps.b, width)),
                    width);
    });
  };
  if (step.x == 1 && step.b == 1) {
    run(Tensors<CpuVec::UnitStep>{});
  } else {
    run(step);
  }
}

template <CpuIsa isa, typename scalar_t>
void backward_lanes(const scalar_t* grad, int64_t grad_step, const GradReads<const scalar_t*>& data,
                    const GradReads<int64_t>& step, const Grads<scalar_t*>& grads, int64_t count,
                    const Scalars<double>& s) {
  using acc_t = std::conditional_t<std::is_same_v<scalar_t, double>, double, float>;
  using L = CpuVec::Lanes<acc_t>;
  static_assert(isa == kBuiltFor, "each file builds the loops for its own processors");
  const Scalars<L> s_lanes{L(s.a)};
  // As in forward_lanes: the loop for the steps as given, or all 1 as a compile-time constant.
  const auto run = [&](auto g_step, const auto& steps) __attribute__((always_inline)) {
    CpuVec::for_each_vector<L>(count, [&](int64_t i, int64_t width) __attribute__((always_inline)) {
      const L g = CpuVec::load<acc_t>(grad + i * g_step, g_step, width);
      CpuVec::store(grads.x + i, grad_wrt_x<L>(g, s_lanes.a), width);
    });
  };
  if (grad_step == 1) {
    run(CpuVec::UnitStep{}, GradReads<CpuVec::UnitStep>{});
  } else {
    run(grad_step, step);
  }
}

// The dtypes csrc/fused_axpby.cpp dispatches to, for the processors of the including file.
template void forward_lanes<kBuiltFor, float, float>(const Tensors<const float*>&,
                                                     const Tensors<int64_t>&, float*, int64_t,
                                                     const Scalars<double>&);
template void forward_lanes<kBuiltFor, double, double>(const Tensors<const double*>&,
                                                       const Tensors<int64_t>&, double*, int64_t,
                                                       const Scalars<double>&);
template void forward_lanes<kBuiltFor, c10::Half, c10::Half>(const Tensors<const c10::Half*>&,
                                                             const Tensors<int64_t>&, c10::Half*,
                                                             int64_t, const Scalars<double>&);
template void forward_lanes<kBuiltFor, c10::BFloat16, c10::BFloat16>(
    const Tensors<const c10::BFloat16*>&, const Tensors<int64_t>&, c10::BFloat16*, int64_t,
    const Scalars<double>&);
template void backward_lanes<kBuiltFor, float>(const float*, int64_t,
                                               const GradReads<const float*>&,
                                               const GradReads<int64_t>&, const Grads<float*>&,
                                               int64_t, const Scalars<double>&);
template void backward_lanes<kBuiltFor, double>(const double*, int64_t,
                                                const GradReads<const double*>&,
                                                const GradReads<int64_t>&, const Grads<double*>&,
                                                int64_t, const Scalars<double>&);
template void backward_lanes<kBuiltFor, c10::Half>(const c10::Half*, int64_t,
                                                   const GradReads<const c10::Half*>&,
                                                   const GradReads<int64_t>&,
                                                   const Grads<c10::Half*>&, int64_t,
                                                   const Scalars<double>&);
template void backward_lanes<kBuiltFor, c10::BFloat16>(const c10::BFloat16*, int64_t,
                                                       const GradReads<const c10::BFloat16*>&,
                                                       const GradReads<int64_t>&,
                                                       const Grads<c10::BFloat16*>&, int64_t,
                                                       const Scalars<double>&);

}  // namespace fused_axpby
