// Torch glue for benchmarking the row kernels (not the generated project's glue).
#pragma once
#include <torch/library.h>
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/cuda/CUDAException.h>
#include "row_ops.cuh"

// The op namespace (torch.ops.<ns>): another name lets a second build of the library
// (a variant, or the last commit's) load beside this one in the same process.
#ifndef ROWK_NS
#define ROWK_NS rowk_bench
#endif
#define RK_BENCH_FRAGMENT(ns, m) TORCH_LIBRARY_FRAGMENT(ns, m)

namespace rowk_bench {

// A (..., N) tensor as rows: keeps its storage when the last dim is contiguous and the
// leading dims collapse to one stride; otherwise a contiguous copy.
inline at::Tensor as_rows(const at::Tensor& t, const char* name) {
  TORCH_CHECK(t.is_cuda(), name, " must be a CUDA tensor, got device ", t.device());
  TORCH_CHECK(t.dim() >= 1, name, " must have at least 1 dimension, got shape ", t.sizes());
  const int64_t N = t.size(-1);
  at::Tensor r = t.stride(-1) == 1 || N <= 1 ? t : t.contiguous();
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < t.dim(); ++d) rows *= t.size(d);
  return r.reshape({rows, N});  // a view when possible, else a copy
}

template <class T> struct ScalarOf;
template <> struct ScalarOf<float> { static constexpr at::ScalarType v = at::kFloat; };
template <> struct ScalarOf<__nv_bfloat16> { static constexpr at::ScalarType v = at::kBFloat16; };
template <> struct ScalarOf<__half> { static constexpr at::ScalarType v = at::kHalf; };
template <> struct ScalarOf<double> { static constexpr at::ScalarType v = at::kDouble; };

// dtype of the per-row statistics (the accumulation type): float, or double for double.
inline at::ScalarType stat_dtype(at::ScalarType t) { return t == at::kDouble ? at::kDouble : at::kFloat; }

// Runs spec F on prepared 2-D tensors.
template <class F, class T>
void run(std::vector<at::Tensor> in, std::vector<at::Tensor> col, std::vector<at::Tensor> stat_in,
         std::vector<at::Tensor> out, std::vector<at::Tensor> stat_out, std::vector<at::Tensor> colgrad,
         int64_t rows, int64_t N, rowk::scalars_t<F, T> s) {
  using A = rowk::acc_t<T>;
  rowk::RowProblem<F, T> pr;
  for (int i = 0; i < F::kRowIn; ++i) { pr.in[i] = (const T*)in[i].data_ptr(); pr.in_stride[i] = in[i].stride(0); }
  for (int i = 0; i < F::kColIn; ++i) pr.col[i] = (const T*)col[i].data_ptr();
  for (int i = 0; i < F::kStatIn; ++i) {
    TORCH_CHECK(stat_in[i].scalar_type() == ScalarOf<A>::v && stat_in[i].is_contiguous(), "per-row input ", i,
                " must be a contiguous ", ScalarOf<A>::v, " tensor, got ", stat_in[i].scalar_type());
    pr.stat_in[i] = stat_in[i].data_ptr<A>();
  }
  for (int i = 0; i < F::kRowOut; ++i) { pr.out[i] = (T*)out[i].data_ptr(); pr.out_stride[i] = out[i].stride(0); }
  for (int i = 0; i < F::kStatOut; ++i) pr.stat_out[i] = stat_out[i].data_ptr<A>();
  for (int i = 0; i < F::kColGrad; ++i) pr.colgrad[i] = (T*)colgrad[i].data_ptr();
  pr.rows = rows; pr.N = N; pr.s = s;
  const int dev = in[0].get_device();
  c10::cuda::CUDAGuard guard(in[0].device());
  auto stream = c10::cuda::getCurrentCUDAStream(dev);
  rowk::Plan pl = rowk::plan_rows_cached<F, T>(rows, N, dev);
  at::Tensor ws;
  if (pl.workspace_bytes) ws = at::empty({(int64_t)pl.workspace_bytes}, in[0].options().dtype(at::kByte));
  cudaError_t err = rowk::launch_rows<F, T>(pr, pl, pl.workspace_bytes ? ws.data_ptr() : nullptr, stream);
  TORCH_CHECK(err == cudaSuccess, "row kernel launch failed: ", cudaGetErrorString(err));
}

#define RK_DISPATCH(dtype, ...)                                                   \
  switch (dtype) {                                                                \
    case at::kFloat: { using T = float; __VA_ARGS__; break; }                    \
    case at::kBFloat16: { using T = __nv_bfloat16; __VA_ARGS__; break; }         \
    case at::kHalf: { using T = __half; __VA_ARGS__; break; }                    \
    case at::kDouble: { using T = double; __VA_ARGS__; break; }                  \
    default: TORCH_CHECK(false, "unsupported dtype ", dtype);                     \
  }

inline void check_col(const at::Tensor& w, const at::Tensor& x, int64_t N, const char* name) {
  TORCH_CHECK(w.dim() == 1 && w.size(0) == N, name, " must have shape (", N, "), got ", w.sizes());
  TORCH_CHECK(w.scalar_type() == x.scalar_type(), name, " must have dtype ", x.scalar_type(), ", got ", w.scalar_type());
  TORCH_CHECK(w.device() == x.device(), name, " must be on ", x.device(), ", got ", w.device());
}

}  // namespace rowk_bench
