// vector_add_cpu_avx2.cpp: vector_add's CPU loops for processors with AVX2, 16 floats (8 doubles)
// at a time, with the formulas of csrc/vector_add_math.h on Lanes (csrc/cpu_lanes.h).
//
// csrc/vector_add.cpp splits the elements over threads and calls these for each run of them
// where at::get_cpu_capability() is AVX2 or AVX512 (as PyTorch picks its own kernels:
// ATEN_CPU_CAPABILITY=default turns them off), and its scalar loops elsewhere. This whole
// file is AVX2 code, so nothing in it may run before that check: it holds no data with a
// dynamic initializer.
// clang-format off
#include "cpu_lanes.h"  // first, before any other header: it makes the file AVX2 code
// clang-format on

#include <algorithm>
#include <type_traits>

#include "vector_add_math.h"

namespace vector_add {

template <typename scalar_t, typename out_t>
void forward_avx2(const Tensors<const scalar_t*>& data, const Tensors<int64_t>& step, out_t* out,
                  int64_t count, const Scalars<double>& s) {
  // double where the input or the output is double; float for the rest, as the scalar loops.
  using acc_t =
      std::conditional_t<std::is_same_v<scalar_t, double> || std::is_same_v<out_t, double>, double,
                         float>;
  using L = CpuVec::Lanes<acc_t>;
  CpuVec::for_each_vector<L>(count, [&](int64_t i, int64_t width) __attribute__((always_inline)) {
    CpuVec::store(out + i,
                  forward<L>(CpuVec::load<acc_t>(data.a + i * step.a, step.a, width),
                             CpuVec::load<acc_t>(data.b + i * step.b, step.b, width)),
                  width);
  });
}

// The dtypes csrc/vector_add.cpp dispatches to.
template void forward_avx2<float, float>(const Tensors<const float*>&, const Tensors<int64_t>&,
                                         float*, int64_t, const Scalars<double>&);
template void forward_avx2<double, double>(const Tensors<const double*>&, const Tensors<int64_t>&,
                                           double*, int64_t, const Scalars<double>&);
template void forward_avx2<c10::Half, c10::Half>(const Tensors<const c10::Half*>&,
                                                 const Tensors<int64_t>&, c10::Half*, int64_t,
                                                 const Scalars<double>&);
template void forward_avx2<c10::BFloat16, c10::BFloat16>(const Tensors<const c10::BFloat16*>&,
                                                         const Tensors<int64_t>&, c10::BFloat16*,
                                                         int64_t, const Scalars<double>&);

}  // namespace vector_add
