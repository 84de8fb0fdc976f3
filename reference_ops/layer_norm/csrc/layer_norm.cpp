// layer_norm.cpp: layer_norm on the CPU, and on CUDA through the launchers of
// csrc/layer_norm_kernel.cu; both check their inputs first. csrc/library.cpp declares
// its schema.
//
// Light ATen headers only (not torch/extension.h, not ATen/ops/*.h: outputs come from
// at::detail::empty_cpu and empty_cuda), so this file compiles in a few seconds.
// The op goes through the dispatcher (TORCH_LIBRARY_IMPL), so it works with autograd,
// torch.compile and every device that has a kernel registered below.
#include <ATen/Dispatch.h>
#include <ATen/EmptyTensor.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "layer_norm_math.h"

#ifdef WITH_CUDA
#include <ATen/cuda/EmptyTensor.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "layer_norm_kernel.h"
#endif

// The dtypes layer_norm was generated for: float32, float64, float16, bfloat16.
#define LAYER_NORM_DISPATCH_CASES(...)       \
  AT_DISPATCH_CASE(at::kFloat, __VA_ARGS__)  \
  AT_DISPATCH_CASE(at::kDouble, __VA_ARGS__) \
  AT_DISPATCH_CASE(at::kHalf, __VA_ARGS__)   \
  AT_DISPATCH_CASE(at::kBFloat16, __VA_ARGS__)

namespace layer_norm {
namespace {

constexpr const char* kSupportedDtypes =
    "torch.float32, torch.float64, torch.float16, torch.bfloat16";
// Elements per CPU task: small tensors stay on one thread.
constexpr int64_t kCpuGrain = 32768;

// The vector loops this CPU runs (csrc/layer_norm_cpu_loops.h, AVX2 or AVX512), as
// PyTorch picks its own kernels (ATEN_CPU_CAPABILITY=avx2 or default turns them down, for
// both): none where it has neither.
std::optional<CpuIsa> cpu_vector_isa() {
  static const std::optional<CpuIsa> isa = []() -> std::optional<CpuIsa> {
    const std::string capability = at::get_cpu_capability();
    if (capability == "AVX512") return CpuIsa::kAvx512;
    if (capability == "AVX2") return CpuIsa::kAvx2;
    return std::nullopt;
  }();
  return isa;
}

bool is_supported(at::ScalarType dtype) {
  return dtype == at::kFloat || dtype == at::kDouble || dtype == at::kHalf ||
         dtype == at::kBFloat16;
}

std::string dtype_name(at::ScalarType dtype) {
  return "torch." + std::string(c10::getDtypeNames(dtype).first);
}

struct NamedTensor {
  const char* name;
  const at::Tensor& tensor;
};

// A new contiguous tensor on like's device. at::detail::empty_cpu and empty_cuda allocate
// directly; Tensor::new_empty goes through the dispatcher twice (new_empty, then empty),
// which took a quarter of a microsecond of a 1.8 us call on small CPU tensors.
at::Tensor new_tensor(const at::Tensor& like, at::IntArrayRef sizes, at::ScalarType dtype) {
#ifdef WITH_CUDA
  if (like.is_cuda()) return at::detail::empty_cuda(sizes, dtype, like.device(), std::nullopt);
#endif
  return at::detail::empty_cpu(sizes, dtype, /*pin_memory=*/false, std::nullopt);
}

#ifdef WITH_CUDA
// c10::Half and c10::BFloat16 have the layouts of __half and __nv_bfloat16, so tensor
// data can be handed to the kernels as the CUDA types.
template <typename scalar_t>
struct CudaType {
  using type = scalar_t;
};
template <>
struct CudaType<c10::Half> {
  using type = __half;
};
template <>
struct CudaType<c10::BFloat16> {
  using type = __nv_bfloat16;
};
static_assert(sizeof(c10::Half) == sizeof(__half), "c10::Half must match __half");
static_assert(sizeof(c10::BFloat16) == sizeof(__nv_bfloat16),
              "c10::BFloat16 must match __nv_bfloat16");

template <typename scalar_t>
const typename CudaType<scalar_t>::type* cuda_data(const at::Tensor& t) {
  return reinterpret_cast<const typename CudaType<scalar_t>::type*>(t.const_data_ptr<scalar_t>());
}

template <typename scalar_t>
typename CudaType<scalar_t>::type* cuda_mutable_data(at::Tensor& t) {
  return reinterpret_cast<typename CudaType<scalar_t>::type*>(t.mutable_data_ptr<scalar_t>());
}

template <typename scalar_t>
using CudaScalar = typename CudaType<scalar_t>::type;
#endif  // WITH_CUDA

// The row tensors (x) must have a supported dtype, at least one
// dimension, and the dtype, device and shape of the first; the column tensors
// (weight, bias) that dtype and device, and the shape (n,) for rows of n elements.
// A column tensor may also be float32 where the rows are float16 or bfloat16, as autocast
// passes a float32 weight with half-type activations.
// Each message names the argument, what it got and what was expected.
void check_arguments(const char* op, std::initializer_list<NamedTensor> rows,
                     std::initializer_list<NamedTensor> columns) {
  const NamedTensor& first = *rows.begin();
  TORCH_CHECK(first.tensor.dim() >= 1, op, ": ", first.name, " has shape ", first.tensor.sizes(),
              "; it needs a dimension of rows, the last");
  for (const NamedTensor& arg : rows) {
    const at::Tensor& t = arg.tensor;
    TORCH_CHECK(is_supported(t.scalar_type()), op, ": ", arg.name, " has dtype ",
                dtype_name(t.scalar_type()), "; supported dtypes are ", kSupportedDtypes);
    TORCH_CHECK(t.scalar_type() == first.tensor.scalar_type(), op, ": ", arg.name, " has dtype ",
                dtype_name(t.scalar_type()), " but ", first.name, " has dtype ",
                dtype_name(first.tensor.scalar_type()), "; pass tensors of one dtype");
    TORCH_CHECK(t.device() == first.tensor.device(), op, ": ", arg.name, " is on ", t.device(),
                " but ", first.name, " is on ", first.tensor.device(),
                "; move the tensors to one device");
    TORCH_CHECK(t.sizes() == first.tensor.sizes(), op, ": ", arg.name, " has shape ", t.sizes(),
                " but ", first.name, " has shape ", first.tensor.sizes(),
                "; pass row tensors of one shape");
  }
  const int64_t n = first.tensor.size(-1);
  const at::ScalarType dtype = first.tensor.scalar_type();
  const bool half_rows = dtype == at::kHalf || dtype == at::kBFloat16;
  for (const NamedTensor& arg : columns) {
    const at::Tensor& t = arg.tensor;
    TORCH_CHECK(t.scalar_type() == dtype || (half_rows && t.scalar_type() == at::kFloat), op, ": ",
                arg.name, " has dtype ", dtype_name(t.scalar_type()), " but ", first.name,
                " has dtype ", dtype_name(dtype), "; pass ", arg.name, " in ", dtype_name(dtype),
                half_rows ? " or torch.float32" : "");
    TORCH_CHECK(t.device() == first.tensor.device(), op, ": ", arg.name, " is on ", t.device(),
                " but ", first.name, " is on ", first.tensor.device(),
                "; move the tensors to one device");
    TORCH_CHECK(t.dim() == 1 && t.size(0) == n, op, ": ", arg.name, " has shape ", t.sizes(),
                " but the rows of ", first.name, " have ", n, " elements; pass a tensor of shape (",
                n, ")");
  }
}

// A column gradient's data (ColumnGrad, csrc/layer_norm_math.h) for rows of element type T
// and dtype rows_dtype: in T where it has that dtype, else in float.
template <typename T>
ColumnGrad<T> column_grad_data(const at::Tensor& grad, at::ScalarType rows_dtype) {
  if (grad.scalar_type() == rows_dtype) return {static_cast<T*>(grad.mutable_data_ptr()), nullptr};
  return {nullptr, static_cast<float*>(grad.mutable_data_ptr())};
}

// Rows per CPU task: about kCpuGrain elements, at least one row.
int64_t rows_per_task(int64_t n) {
  return std::max<int64_t>(1, kCpuGrain / std::max<int64_t>(n, 1));
}

// The forward's reductions (mu, var) of each row of `rows_like`, as it saves them
// for the backward: shape (2, rows_like's shape but the last), in the arithmetic type
// (float, double for double).
std::vector<int64_t> reductions_shape(const at::Tensor& rows_like) {
  std::vector<int64_t> sizes{2};
  sizes.insert(sizes.end(), rows_like.sizes().begin(), rows_like.sizes().end() - 1);
  return sizes;
}

at::Tensor new_reductions(const at::Tensor& rows_like) {
  return new_tensor(rows_like, reductions_shape(rows_like),
                    at::toOpMathType(rows_like.scalar_type()));
}

// The backward's reductions argument must be what new_reductions gives for its rows.
void check_reductions(const at::Tensor& reductions, const at::Tensor& rows_like) {
  const std::vector<int64_t> shape = reductions_shape(rows_like);
  const at::ScalarType dtype = at::toOpMathType(rows_like.scalar_type());
  TORCH_CHECK(reductions.sizes() == at::IntArrayRef(shape) && reductions.scalar_type() == dtype &&
                  reductions.device() == rows_like.device(),
              "layer_norm_backward: reductions has shape ", reductions.sizes(), ", dtype ",
              dtype_name(reductions.scalar_type()), " on ", reductions.device(),
              "; expected shape ", at::IntArrayRef(shape), ", dtype ", dtype_name(dtype), " on ",
              rows_like.device(),
              ": pass the second output of layer_norm_forward_saving_reductions");
}

// The forward's vector loops for the processors this CPU has.
template <typename scalar_t, typename out_t>
void forward_rows_vectors(CpuIsa isa, const Rows<const scalar_t*>& data,
                          const Columns<const scalar_t*>& column_data, out_t* out,
                          acc_type<scalar_t>* saved, int64_t rows, int64_t n, int64_t begin,
                          int64_t end, const Scalars<double>& s) {
  if (isa == CpuIsa::kAvx512) {
    forward_rows<CpuIsa::kAvx512, scalar_t, out_t>(data, column_data, out, saved, rows, n, begin,
                                                   end, s);
  } else {
    forward_rows<CpuIsa::kAvx2, scalar_t, out_t>(data, column_data, out, saved, rows, n, begin, end,
                                                 s);
  }
}

// The backward's vector loops for the processors this CPU has.
template <typename scalar_t>
void backward_rows_vectors(CpuIsa isa, const scalar_t* grad, const Rows<const scalar_t*>& data,
                           const Columns<const scalar_t*>& column_data,
                           const acc_type<scalar_t>* saved, Reductions<acc_type<scalar_t>>* red,
                           GradReductions<acc_type<scalar_t>>* grad_red,
                           const RowGrads<scalar_t*>& row_grads, int64_t rows, int64_t n,
                           int64_t begin, int64_t end, const Scalars<double>& s) {
  if (isa == CpuIsa::kAvx512) {
    backward_rows<CpuIsa::kAvx512, scalar_t>(grad, data, column_data, saved, red, grad_red,
                                             row_grads, rows, n, begin, end, s);
  } else {
    backward_rows<CpuIsa::kAvx2, scalar_t>(grad, data, column_data, saved, red, grad_red, row_grads,
                                           rows, n, begin, end, s);
  }
}

template <typename scalar_t>
void backward_columns_vectors(CpuIsa isa, const scalar_t* grad, const Rows<const scalar_t*>& data,
                              const Columns<const scalar_t*>& column_data,
                              const Reductions<acc_type<scalar_t>>* red,
                              const GradReductions<acc_type<scalar_t>>* grad_red,
                              const ColumnGrads<ColumnGrad<scalar_t>>& column_grads, double* sums,
                              int64_t rows, int64_t n, int64_t begin, int64_t end,
                              const Scalars<double>& s) {
  if (isa == CpuIsa::kAvx512) {
    backward_columns<CpuIsa::kAvx512, scalar_t>(grad, data, column_data, red, grad_red,
                                                column_grads, sums, rows, n, begin, end, s);
  } else {
    backward_columns<CpuIsa::kAvx2, scalar_t>(grad, data, column_data, red, grad_red, column_grads,
                                              sums, rows, n, begin, end, s);
  }
}

// The kernels take the arguments in the structs of csrc/layer_norm_math.h; the functions
// registered at the end of this file pass them on.
namespace cpu {

// Each row: its reductions in order, each a pass over the row, then its outputs; and where
// `reductions` is given, the reductions into a new tensor there (new_reductions).
at::Tensor forward_impl(const Rows<const at::Tensor&>& in,
                        const Columns<const at::Tensor&>& columns, const Scalars<double>& s,
                        at::Tensor* reductions = nullptr) {
  check_arguments("layer_norm", {{"x", in.x}},
                  {{"weight", columns.weight}, {"bias", columns.bias}});
  const Rows<at::Tensor> contiguous{in.x.contiguous()};
  // In the rows' dtype: a float32 column of half-type rows too, since the kernels read the
  // columns in vectors of the rows' type (its gradient is still summed in float).
  const Columns<at::Tensor> contiguous_columns{columns.weight.to(in.x.scalar_type()).contiguous(),
                                               columns.bias.to(in.x.scalar_type()).contiguous()};
  const int64_t n = in.x.size(-1);
  const int64_t rows = n == 0 ? 0 : in.x.numel() / n;
  at::Tensor out = new_tensor(in.x, in.x.sizes(), in.x.scalar_type());
  if (reductions) *reductions = new_reductions(in.x);
  AT_DISPATCH_SWITCH(
      in.x.scalar_type(), "layer_norm_cpu", LAYER_NORM_DISPATCH_CASES([&] {
        // float for float and the half types, double for double.
        using acc_t = at::opmath_type<scalar_t>;
        const Scalars<acc_t> s_acc{static_cast<acc_t>(s.eps)};
        const Rows<const scalar_t*> data{contiguous.x.const_data_ptr<scalar_t>()};
        const Columns<const scalar_t*> column_data{
            contiguous_columns.weight.const_data_ptr<scalar_t>(),
            contiguous_columns.bias.const_data_ptr<scalar_t>()};
        scalar_t* out_p = out.mutable_data_ptr<scalar_t>();
        acc_t* saved = reductions ? reductions->mutable_data_ptr<acc_t>() : nullptr;
        const acc_t n_acc = static_cast<acc_t>(n);
        at::parallel_for(0, rows, rows_per_task(n), [&](int64_t begin, int64_t end) {
#ifndef NO_CPU_VECTOR_LOOPS
          if (const std::optional<CpuIsa> isa = cpu_vector_isa()) {
            forward_rows_vectors<scalar_t, scalar_t>(*isa, data, column_data, out_p, saved, rows, n,
                                                     begin, end, s);
            return;
          }
#endif
          for (int64_t r = begin; r < end; ++r) {
            const int64_t row = r * n;
            Reductions<acc_t> red;
            {  // mu = mean(x)
              double v = 0.0;
              for (int64_t i = 0; i < n; ++i)
                v += reduce_mu<acc_t>(acc_t(data.x[row + i]), acc_t(column_data.weight[i]),
                                      acc_t(column_data.bias[i]), s_acc.eps, n_acc);
              red.mu = static_cast<acc_t>(v / n);
            }
            {  // var = mean((x - mu) * (x - mu))
              double v = 0.0;
              for (int64_t i = 0; i < n; ++i)
                v += reduce_var<acc_t>(acc_t(data.x[row + i]), acc_t(column_data.weight[i]),
                                       acc_t(column_data.bias[i]), s_acc.eps, n_acc, red.mu);
              red.var = static_cast<acc_t>(v / n);
            }
            for (int64_t i = 0; i < n; ++i) {
              out_p[row + i] = static_cast<scalar_t>(
                  forward<acc_t>(acc_t(data.x[row + i]), acc_t(column_data.weight[i]),
                                 acc_t(column_data.bias[i]), s_acc.eps, n_acc, red.mu, red.var));
            }
            if (saved) {
              saved[0 * rows + r] = red.mu;
              saved[1 * rows + r] = red.var;
            }
          }
        });
      }));
  return out;
}

// Each row: the backward's reductions (the forward's as it saved them), then the row tensors'
// gradients; then each column tensor's gradient, summed over the rows in order (the same sum
// whatever the number of threads).
std::tuple<at::Tensor, at::Tensor, at::Tensor> backward_impl(
    const at::Tensor& grad, const Rows<const at::Tensor&>& in,
    const Columns<const at::Tensor&>& columns, const at::Tensor& reductions,
    const Scalars<double>& s) {
  check_arguments("layer_norm_backward", {{"grad", grad}, {"x", in.x}},
                  {{"weight", columns.weight}, {"bias", columns.bias}});
  check_reductions(reductions, in.x);
  const Rows<at::Tensor> contiguous{in.x.contiguous()};
  // In the rows' dtype: a float32 column of half-type rows too, since the kernels read the
  // columns in vectors of the rows' type (its gradient is still summed in float).
  const Columns<at::Tensor> contiguous_columns{columns.weight.to(in.x.scalar_type()).contiguous(),
                                               columns.bias.to(in.x.scalar_type()).contiguous()};
  const int64_t n = in.x.size(-1);
  const int64_t rows = n == 0 ? 0 : in.x.numel() / n;
  const at::Tensor grad_c = grad.contiguous();
  const at::Tensor reductions_c = reductions.contiguous();
  RowGrads<at::Tensor> row_grads{new_tensor(in.x, in.x.sizes(), in.x.scalar_type())};
  ColumnGrads<at::Tensor> column_grads{new_tensor(in.x, {n}, columns.weight.scalar_type()),
                                       new_tensor(in.x, {n}, columns.bias.scalar_type())};
  AT_DISPATCH_SWITCH(
      in.x.scalar_type(), "layer_norm_backward_cpu", LAYER_NORM_DISPATCH_CASES([&] {
        using acc_t = at::opmath_type<scalar_t>;
        const Scalars<acc_t> s_acc{static_cast<acc_t>(s.eps)};
        const Rows<const scalar_t*> data{contiguous.x.const_data_ptr<scalar_t>()};
        const Columns<const scalar_t*> column_data{
            contiguous_columns.weight.const_data_ptr<scalar_t>(),
            contiguous_columns.bias.const_data_ptr<scalar_t>()};
        const scalar_t* grad_p = grad_c.const_data_ptr<scalar_t>();
        const RowGrads<scalar_t*> row_grads_p{row_grads.x.mutable_data_ptr<scalar_t>()};
        const ColumnGrads<ColumnGrad<scalar_t>> column_grads_p{
            column_grad_data<scalar_t>(column_grads.weight, in.x.scalar_type()),
            column_grad_data<scalar_t>(column_grads.bias, in.x.scalar_type())};
        const acc_t n_acc = static_cast<acc_t>(n);
        const acc_t* saved = reductions_c.const_data_ptr<acc_t>();
        // Each row's reductions, kept for the column gradients.
        std::vector<Reductions<acc_t>> red(rows);
        std::vector<GradReductions<acc_t>> grad_red(rows);
#ifndef NO_CPU_VECTOR_LOOPS
        // The vector loops where the CPU has AVX2 or AVX512; the scalar ones below elsewhere.
        if (const std::optional<CpuIsa> isa = cpu_vector_isa()) {
          at::parallel_for(0, rows, rows_per_task(n), [&](int64_t begin, int64_t end) {
            backward_rows_vectors<scalar_t>(*isa, grad_p, data, column_data, saved, red.data(),
                                            grad_red.data(), row_grads_p, rows, n, begin, end, s);
          });
          // Each column tensor's gradient summed in double: n for each, each thread its columns.
          std::vector<double> sums(2 * n, 0.0);
          at::parallel_for(0, n, 64, [&](int64_t begin, int64_t end) {
            backward_columns_vectors<scalar_t>(*isa, grad_p, data, column_data, red.data(),
                                               grad_red.data(), column_grads_p, sums.data(), rows,
                                               n, begin, end, s);
          });
          return;
        }
#endif
        at::parallel_for(0, rows, rows_per_task(n), [&](int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; ++r) {
            const int64_t row = r * n;
            // The forward's reductions of this row, as it saved them.
            red[r].mu = saved[0 * rows + r];
            red[r].var = saved[1 * rows + r];
            {  // g1 = mean(grad * weight)
              double v = 0.0;
              for (int64_t i = 0; i < n; ++i)
                v += grad_reduce_g1<acc_t>(
                    acc_t(grad_p[row + i]),
                    forward<acc_t>(acc_t(data.x[row + i]), acc_t(column_data.weight[i]),
                                   acc_t(column_data.bias[i]), s_acc.eps, n_acc, red[r].mu,
                                   red[r].var),
                    acc_t(data.x[row + i]), acc_t(column_data.weight[i]),
                    acc_t(column_data.bias[i]), s_acc.eps, n_acc, red[r].mu, red[r].var);
              grad_red[r].g1 = static_cast<acc_t>(v / n);
            }
            {  // g2 = mean(grad * weight * (x - mu))
              double v = 0.0;
              for (int64_t i = 0; i < n; ++i)
                v += grad_reduce_g2<acc_t>(
                    acc_t(grad_p[row + i]),
                    forward<acc_t>(acc_t(data.x[row + i]), acc_t(column_data.weight[i]),
                                   acc_t(column_data.bias[i]), s_acc.eps, n_acc, red[r].mu,
                                   red[r].var),
                    acc_t(data.x[row + i]), acc_t(column_data.weight[i]),
                    acc_t(column_data.bias[i]), s_acc.eps, n_acc, red[r].mu, red[r].var,
                    grad_red[r].g1);
              grad_red[r].g2 = static_cast<acc_t>(v / n);
            }
            for (int64_t i = 0; i < n; ++i) {
              const acc_t g = static_cast<acc_t>(grad_p[row + i]);
              const acc_t y = forward<acc_t>(acc_t(data.x[row + i]), acc_t(column_data.weight[i]),
                                             acc_t(column_data.bias[i]), s_acc.eps, n_acc,
                                             red[r].mu, red[r].var);
              row_grads_p.x[row + i] = static_cast<scalar_t>(
                  grad_wrt_x<acc_t>(g, y, acc_t(data.x[row + i]), acc_t(column_data.weight[i]),
                                    acc_t(column_data.bias[i]), s_acc.eps, n_acc, red[r].mu,
                                    red[r].var, grad_red[r].g1, grad_red[r].g2));
            }
          }
        });
        // The gradient of weight: each column's sum over the rows, in row order.
        at::parallel_for(0, n, 64, [&](int64_t begin, int64_t end) {
          std::vector<double> sums(end - begin, 0.0);
          for (int64_t r = 0; r < rows; ++r) {
            const int64_t row = r * n;
            for (int64_t i = begin; i < end; ++i) {
              const acc_t g = static_cast<acc_t>(grad_p[row + i]);
              const acc_t y = forward<acc_t>(acc_t(data.x[row + i]), acc_t(column_data.weight[i]),
                                             acc_t(column_data.bias[i]), s_acc.eps, n_acc,
                                             red[r].mu, red[r].var);
              sums[i - begin] +=
                  grad_wrt_weight<acc_t>(g, y, acc_t(data.x[row + i]), acc_t(column_data.weight[i]),
                                         acc_t(column_data.bias[i]), s_acc.eps, n_acc, red[r].mu,
                                         red[r].var, grad_red[r].g1, grad_red[r].g2);
            }
          }
          for (int64_t i = begin; i < end; ++i) column_grads_p.weight.store(i, sums[i - begin]);
        });
        // The gradient of bias: each column's sum over the rows, in row order.
        at::parallel_for(0, n, 64, [&](int64_t begin, int64_t end) {
          std::vector<double> sums(end - begin, 0.0);
          for (int64_t r = 0; r < rows; ++r) {
            const int64_t row = r * n;
            for (int64_t i = begin; i < end; ++i) {
              const acc_t g = static_cast<acc_t>(grad_p[row + i]);
              const acc_t y = forward<acc_t>(acc_t(data.x[row + i]), acc_t(column_data.weight[i]),
                                             acc_t(column_data.bias[i]), s_acc.eps, n_acc,
                                             red[r].mu, red[r].var);
              sums[i - begin] +=
                  grad_wrt_bias<acc_t>(g, y, acc_t(data.x[row + i]), acc_t(column_data.weight[i]),
                                       acc_t(column_data.bias[i]), s_acc.eps, n_acc, red[r].mu,
                                       red[r].var, grad_red[r].g1, grad_red[r].g2);
            }
          }
          for (int64_t i = begin; i < end; ++i) column_grads_p.bias.store(i, sums[i - begin]);
        });
      }));
  return {row_grads.x, column_grads.weight, column_grads.bias};
}

}  // namespace cpu

#ifdef WITH_CUDA
namespace cuda {

at::Tensor forward_impl(const Rows<const at::Tensor&>& in,
                        const Columns<const at::Tensor&>& columns, const Scalars<double>& s,
                        at::Tensor* reductions = nullptr) {
  check_arguments("layer_norm", {{"x", in.x}},
                  {{"weight", columns.weight}, {"bias", columns.bias}});
  // Allocate, copy and launch on the inputs' device, whichever device is current.
  const c10::cuda::CUDAGuard device_guard(in.x.device());
  // Contiguous copies held in locals: they must outlive the asynchronous kernel launch.
  const Rows<at::Tensor> contiguous{in.x.contiguous()};
  // In the rows' dtype: a float32 column of half-type rows too, since the kernels read the
  // columns in vectors of the rows' type (its gradient is still summed in float).
  const Columns<at::Tensor> contiguous_columns{columns.weight.to(in.x.scalar_type()).contiguous(),
                                               columns.bias.to(in.x.scalar_type()).contiguous()};
  const int64_t n = in.x.size(-1);
  const int64_t rows = n == 0 ? 0 : in.x.numel() / n;
  at::Tensor out = new_tensor(in.x, in.x.sizes(), in.x.scalar_type());
  if (reductions) *reductions = new_reductions(in.x);
  if (out.numel() == 0) return out;
  // The current stream, not the default one: correct under user streams and CUDA graphs.
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_SWITCH(
      in.x.scalar_type(), "layer_norm_cuda", LAYER_NORM_DISPATCH_CASES([&] {
        using T = CudaScalar<scalar_t>;
        // Scratch for the partial reductions of few long rows, from torch's caching allocator.
        const int64_t workspace_bytes = forward_workspace_bytes<T>(rows, n);
        const at::Tensor workspace =
            workspace_bytes > 0 ? new_tensor(out, {workspace_bytes}, at::kByte) : at::Tensor();
        const Rows<const T*> data{cuda_data<scalar_t>(contiguous.x)};
        const Columns<const T*> column_data{cuda_data<scalar_t>(contiguous_columns.weight),
                                            cuda_data<scalar_t>(contiguous_columns.bias)};
        Acc<T>* saved = reductions ? static_cast<Acc<T>*>(reductions->mutable_data_ptr()) : nullptr;
        C10_CUDA_CHECK(
            launch_forward(data, column_data, cuda_mutable_data<scalar_t>(out), saved, rows, n, s,
                           workspace.defined() ? workspace.mutable_data_ptr() : nullptr, stream));
      }));
  return out;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> backward_impl(
    const at::Tensor& grad, const Rows<const at::Tensor&>& in,
    const Columns<const at::Tensor&>& columns, const at::Tensor& reductions,
    const Scalars<double>& s) {
  check_arguments("layer_norm_backward", {{"grad", grad}, {"x", in.x}},
                  {{"weight", columns.weight}, {"bias", columns.bias}});
  check_reductions(reductions, in.x);
  const c10::cuda::CUDAGuard device_guard(in.x.device());
  const Rows<at::Tensor> contiguous{in.x.contiguous()};
  // In the rows' dtype: a float32 column of half-type rows too, since the kernels read the
  // columns in vectors of the rows' type (its gradient is still summed in float).
  const Columns<at::Tensor> contiguous_columns{columns.weight.to(in.x.scalar_type()).contiguous(),
                                               columns.bias.to(in.x.scalar_type()).contiguous()};
  const int64_t n = in.x.size(-1);
  const int64_t rows = n == 0 ? 0 : in.x.numel() / n;
  const at::Tensor grad_c = grad.contiguous();
  const at::Tensor reductions_c = reductions.contiguous();
  RowGrads<at::Tensor> row_grads{new_tensor(in.x, in.x.sizes(), in.x.scalar_type())};
  ColumnGrads<at::Tensor> column_grads{new_tensor(in.x, {n}, columns.weight.scalar_type()),
                                       new_tensor(in.x, {n}, columns.bias.scalar_type())};
  if (n == 0) return {row_grads.x, column_grads.weight, column_grads.bias};
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_SWITCH(
      in.x.scalar_type(), "layer_norm_backward_cuda", LAYER_NORM_DISPATCH_CASES([&] {
        using T = CudaScalar<scalar_t>;
        // Scratch for the column gradients' partial sums, from torch's caching allocator.
        const at::Tensor workspace = new_tensor(
            grad_c, {std::max<int64_t>(backward_workspace_bytes<T>(rows, n), 1)}, at::kByte);
        const Rows<const T*> data{cuda_data<scalar_t>(contiguous.x)};
        const Columns<const T*> column_data{cuda_data<scalar_t>(contiguous_columns.weight),
                                            cuda_data<scalar_t>(contiguous_columns.bias)};
        const RowGrads<T*> row_grads_p{cuda_mutable_data<scalar_t>(row_grads.x)};
        const ColumnGrads<ColumnGrad<T>> column_grads_p{
            column_grad_data<T>(column_grads.weight, in.x.scalar_type()),
            column_grad_data<T>(column_grads.bias, in.x.scalar_type())};
        C10_CUDA_CHECK(launch_backward(cuda_data<scalar_t>(grad_c), data, column_data,
                                       static_cast<const Acc<T>*>(reductions_c.const_data_ptr()),
                                       row_grads_p, column_grads_p, rows, n, s,
                                       workspace.mutable_data_ptr(), stream));
      }));
  return {row_grads.x, column_grads.weight, column_grads.bias};
}

}  // namespace cuda
#endif  // WITH_CUDA

// The functions the dispatcher calls, with the arguments one by one in the schema's order.
at::Tensor forward_cpu(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                       double eps) {
  return cpu::forward_impl({x}, {weight, bias}, {eps});
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> backward_cpu(
    const at::Tensor& grad, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
    const at::Tensor& reductions, double eps) {
  return cpu::backward_impl(grad, {x}, {weight, bias}, reductions, {eps});
}

// The forward, and its reductions for the backward (the autograd of csrc/layer_norm_autograd.cpp).
std::tuple<at::Tensor, at::Tensor> forward_saving_reductions_cpu(const at::Tensor& x,
                                                                 const at::Tensor& weight,
                                                                 const at::Tensor& bias,
                                                                 double eps) {
  at::Tensor reductions;
  at::Tensor out = cpu::forward_impl({x}, {weight, bias}, {eps}, &reductions);
  return {out, reductions};
}

#ifdef WITH_CUDA
at::Tensor forward_cuda(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                        double eps) {
  return cuda::forward_impl({x}, {weight, bias}, {eps});
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> backward_cuda(
    const at::Tensor& grad, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
    const at::Tensor& reductions, double eps) {
  return cuda::backward_impl(grad, {x}, {weight, bias}, reductions, {eps});
}

std::tuple<at::Tensor, at::Tensor> forward_saving_reductions_cuda(const at::Tensor& x,
                                                                  const at::Tensor& weight,
                                                                  const at::Tensor& bias,
                                                                  double eps) {
  at::Tensor reductions;
  at::Tensor out = cuda::forward_impl({x}, {weight, bias}, {eps}, &reductions);
  return {out, reductions};
}
#endif  // WITH_CUDA
}  // namespace

TORCH_LIBRARY_IMPL(layer_norm, CPU, m) {
  m.impl("layer_norm", &forward_cpu);
  m.impl("layer_norm_backward", &backward_cpu);
  m.impl("layer_norm_forward_saving_reductions", &forward_saving_reductions_cpu);
}

#ifdef WITH_CUDA
TORCH_LIBRARY_IMPL(layer_norm, CUDA, m) {
  m.impl("layer_norm", &forward_cuda);
  m.impl("layer_norm_backward", &backward_cuda);
  m.impl("layer_norm_forward_saving_reductions", &forward_saving_reductions_cuda);
}
#endif

}  // namespace layer_norm
