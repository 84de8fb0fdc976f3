// rms_norm and layer_norm, forward and backward, through the row kernels.
#include "rowwise_binding.cuh"
using namespace rowk_bench;
using namespace rowk::ops;

std::tuple<at::Tensor, at::Tensor> rms_fwd(const at::Tensor& x_, const at::Tensor& w_, double eps) {
  at::Tensor x = as_rows(x_, "x");
  const int64_t rows = x.size(0), N = x.size(1);
  check_col(w_, x_, N, "weight");
  at::Tensor w = w_.contiguous();
  at::Tensor y = at::empty({rows, N}, x.options());
  at::Tensor rstd = at::empty({rows}, x.options().dtype(stat_dtype(x.scalar_type())));
  RK_DISPATCH(x.scalar_type(), (run<RmsNormFwd, T>({x}, {w}, {}, {y}, {rstd}, {}, rows, N, {(rowk::acc_t<T>)eps})));
  return {y.view(x_.sizes()), rstd};
}

std::tuple<at::Tensor, at::Tensor> rms_bwd(const at::Tensor& g_, const at::Tensor& x_, const at::Tensor& w_,
                                           const at::Tensor& rstd) {
  at::Tensor x = as_rows(x_, "x"), g = as_rows(g_, "grad");
  const int64_t rows = x.size(0), N = x.size(1);
  at::Tensor w = w_.contiguous();
  at::Tensor dx = at::empty({rows, N}, x.options());
  at::Tensor dw = at::empty({N}, x.options());
  RK_DISPATCH(x.scalar_type(), (run<RmsNormBwd, T>({x, g}, {w}, {rstd}, {dx}, {}, {dw}, rows, N, {})));
  return {dx.view(x_.sizes()), dw};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> ln_fwd(const at::Tensor& x_, const at::Tensor& w_,
                                                      const at::Tensor& b_, double eps) {
  at::Tensor x = as_rows(x_, "x");
  const int64_t rows = x.size(0), N = x.size(1);
  check_col(w_, x_, N, "weight");
  check_col(b_, x_, N, "bias");
  at::Tensor w = w_.contiguous(), b = b_.contiguous();
  at::Tensor y = at::empty({rows, N}, x.options());
  at::Tensor mean = at::empty({rows}, x.options().dtype(stat_dtype(x.scalar_type())));
  at::Tensor rstd = at::empty({rows}, x.options().dtype(stat_dtype(x.scalar_type())));
  RK_DISPATCH(x.scalar_type(), (run<LayerNormFwd, T>({x}, {w, b}, {}, {y}, {mean, rstd}, {}, rows, N, {(rowk::acc_t<T>)eps})));
  return {y.view(x_.sizes()), mean, rstd};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> ln_bwd(const at::Tensor& g_, const at::Tensor& x_,
                                                      const at::Tensor& w_, const at::Tensor& mean,
                                                      const at::Tensor& rstd) {
  at::Tensor x = as_rows(x_, "x"), g = as_rows(g_, "grad");
  const int64_t rows = x.size(0), N = x.size(1);
  at::Tensor w = w_.contiguous();
  at::Tensor dx = at::empty({rows, N}, x.options());
  at::Tensor dw = at::empty({N}, x.options());
  at::Tensor db = at::empty({N}, x.options());
  RK_DISPATCH(x.scalar_type(), (run<LayerNormBwd, T>({x, g}, {w}, {mean, rstd}, {dx}, {}, {dw, db}, rows, N, {})));
  return {dx.view(x_.sizes()), dw, db};
}

RK_BENCH_FRAGMENT(ROWK_NS, m) {
  m.def("rms_fwd", &rms_fwd);
  m.def("rms_bwd", &rms_bwd);
  m.def("ln_fwd", &ln_fwd);
  m.def("ln_bwd", &ln_bwd);
}
