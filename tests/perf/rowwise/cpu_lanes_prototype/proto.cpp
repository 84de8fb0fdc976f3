// Prototype ops proto::ln and proto::sm calling the Lanes rows of proto_cpu_avx2.cpp.
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <c10/util/BFloat16.h>
#include <torch/library.h>

namespace proto {
template <typename scalar_t>
void ln_rows(const scalar_t*, const scalar_t*, const scalar_t*, scalar_t*, int64_t, int64_t,
             int64_t, double);
template <typename scalar_t>
void sm_rows(const scalar_t*, scalar_t*, int64_t, int64_t, int64_t);

at::Tensor ln(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, double eps) {
  at::Tensor out = at::empty_like(x);
  const int64_t n = x.size(-1), rows = x.numel() / n;
  const int64_t grain = std::max<int64_t>(1, 32768 / n);
  if (x.scalar_type() == at::kFloat) {
    at::parallel_for(0, rows, grain, [&](int64_t b0, int64_t e0) {
      ln_rows<float>(x.const_data_ptr<float>(), w.const_data_ptr<float>(),
                     b.const_data_ptr<float>(), out.mutable_data_ptr<float>(), b0, e0, n, eps);
    });
  } else {
    using B = c10::BFloat16;
    at::parallel_for(0, rows, grain, [&](int64_t b0, int64_t e0) {
      ln_rows<B>(x.const_data_ptr<B>(), w.const_data_ptr<B>(), b.const_data_ptr<B>(),
                 out.mutable_data_ptr<B>(), b0, e0, n, eps);
    });
  }
  return out;
}
at::Tensor sm(const at::Tensor& x) {
  at::Tensor out = at::empty_like(x);
  const int64_t n = x.size(-1), rows = x.numel() / n;
  const int64_t grain = std::max<int64_t>(1, 32768 / n);
  if (x.scalar_type() == at::kFloat) {
    at::parallel_for(0, rows, grain, [&](int64_t b0, int64_t e0) {
      sm_rows<float>(x.const_data_ptr<float>(), out.mutable_data_ptr<float>(), b0, e0, n);
    });
  } else {
    using B = c10::BFloat16;
    at::parallel_for(0, rows, grain, [&](int64_t b0, int64_t e0) {
      sm_rows<B>(x.const_data_ptr<B>(), out.mutable_data_ptr<B>(), b0, e0, n);
    });
  }
  return out;
}
}  // namespace proto

TORCH_LIBRARY(proto, m) {
  m.def("ln(Tensor x, Tensor w, Tensor b, float eps) -> Tensor");
  m.def("sm(Tensor x) -> Tensor");
}
TORCH_LIBRARY_IMPL(proto, CPU, m) {
  m.impl("ln", &proto::ln);
  m.impl("sm", &proto::sm);
}
