// softmax and log_softmax over the last dim, forward and backward, through the row kernels.
#include "rowwise_binding.cuh"
using namespace rowk_bench;
using namespace rowk::ops;

template <class Fwd>
at::Tensor smax_fwd(const at::Tensor& x_) {
  at::Tensor x = as_rows(x_, "x");
  const int64_t rows = x.size(0), N = x.size(1);
  at::Tensor y = at::empty({rows, N}, x.options());
  RK_DISPATCH(x.scalar_type(), (run<Fwd, T>({x}, {}, {}, {y}, {}, {}, rows, N, {})));
  return y.view(x_.sizes());
}
template <class Bwd>
at::Tensor smax_bwd(const at::Tensor& g_, const at::Tensor& y_) {
  at::Tensor y = as_rows(y_, "y"), g = as_rows(g_, "grad");
  const int64_t rows = y.size(0), N = y.size(1);
  at::Tensor dx = at::empty({rows, N}, y.options());
  RK_DISPATCH(y.scalar_type(), (run<Bwd, T>({y, g}, {}, {}, {dx}, {}, {}, rows, N, {})));
  return dx.view(y_.sizes());
}
at::Tensor softmax_fwd(const at::Tensor& x) { return smax_fwd<SoftmaxFwd>(x); }
at::Tensor softmax_bwd(const at::Tensor& g, const at::Tensor& y) { return smax_bwd<SoftmaxBwd>(g, y); }
at::Tensor log_softmax_fwd(const at::Tensor& x) { return smax_fwd<LogSoftmaxFwd>(x); }
at::Tensor log_softmax_bwd(const at::Tensor& g, const at::Tensor& y) { return smax_bwd<LogSoftmaxBwd>(g, y); }

RK_BENCH_FRAGMENT(ROWK_NS, m) {
  m.def("softmax_fwd", &softmax_fwd);
  m.def("softmax_bwd", &softmax_bwd);
  m.def("log_softmax_fwd", &log_softmax_fwd);
  m.def("log_softmax_bwd", &log_softmax_bwd);
}
