// softmax.cpp: softmax on the CPU, and on CUDA through the launchers of
// csrc/softmax_kernel.cu; both check their inputs first. csrc/library.cpp declares
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

#include "softmax_math.h"

#ifdef WITH_CUDA
#include <ATen/cuda/EmptyTensor.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "softmax_kernel.h"
#endif

// The dtypes softmax was generated for: float32, float64, float16, bfloat16.
#define SOFTMAX_DISPATCH_CASES(...)          \
  AT_DISPATCH_CASE(at::kFloat, __VA_ARGS__)  \
  AT_DISPATCH_CASE(at::kDouble, __VA_ARGS__) \
  AT_DISPATCH_CASE(at::kHalf, __VA_ARGS__)   \
  AT_DISPATCH_CASE(at::kBFloat16, __VA_ARGS__)

namespace softmax {
namespace {

constexpr const char* kSupportedDtypes =
    "torch.float32, torch.float64, torch.float16, torch.bfloat16";
// Elements per CPU task: small tensors stay on one thread.
constexpr int64_t kCpuGrain = 32768;

// The vector loops this CPU runs (csrc/softmax_cpu_loops.h, AVX2 or AVX512), as
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
// (none here) that dtype and device, and the shape (n,) for rows of n elements.
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

// Rows per CPU task: about kCpuGrain elements, at least one row.
int64_t rows_per_task(int64_t n) {
  return std::max<int64_t>(1, kCpuGrain / std::max<int64_t>(n, 1));
}

// The forward's vector loops for the processors this CPU has.
template <typename scalar_t, typename out_t>
void forward_rows_vectors(CpuIsa isa, const Rows<const scalar_t*>& data,
                          const Columns<const scalar_t*>& column_data, out_t* out,
                          acc_type<scalar_t>* terms, int64_t rows, int64_t n, int64_t begin,
                          int64_t end, const Scalars<double>& s) {
  if (isa == CpuIsa::kAvx512) {
    forward_rows<CpuIsa::kAvx512, scalar_t, out_t>(data, column_data, out, terms, rows, n, begin,
                                                   end, s);
  } else {
    forward_rows<CpuIsa::kAvx2, scalar_t, out_t>(data, column_data, out, terms, rows, n, begin, end,
                                                 s);
  }
}

// The backward's vector loops for the processors this CPU has.
template <typename scalar_t>
void backward_rows_vectors(CpuIsa isa, const scalar_t* grad, const Output<const scalar_t*>& data,
                           const Columns<const scalar_t*>& column_data,
                           GradReductions<acc_type<scalar_t>>* grad_red,
                           const RowGrads<scalar_t*>& row_grads, int64_t rows, int64_t n,
                           int64_t begin, int64_t end, const Scalars<double>& s) {
  if (isa == CpuIsa::kAvx512) {
    backward_rows<CpuIsa::kAvx512, scalar_t>(grad, data, column_data, grad_red, row_grads, rows, n,
                                             begin, end, s);
  } else {
    backward_rows<CpuIsa::kAvx2, scalar_t>(grad, data, column_data, grad_red, row_grads, rows, n,
                                           begin, end, s);
  }
}

// The kernels take the arguments in the structs of csrc/softmax_math.h; the functions
// registered at the end of this file pass them on.
namespace cpu {

// Each row: its reductions in order, each a pass over the row, then its outputs.
at::Tensor forward_impl(const Rows<const at::Tensor&>& in,
                        const Columns<const at::Tensor&>& columns, const Scalars<double>& s) {
  check_arguments("softmax", {{"x", in.x}}, {});
  const Rows<at::Tensor> contiguous{in.x.contiguous()};
  const int64_t n = in.x.size(-1);
  const int64_t rows = n == 0 ? 0 : in.x.numel() / n;
  at::Tensor out = new_tensor(in.x, in.x.sizes(), in.x.scalar_type());
  AT_DISPATCH_SWITCH(in.x.scalar_type(), "softmax_cpu", SOFTMAX_DISPATCH_CASES([&] {
                       // float for float and the half types, double for double.
                       using acc_t = at::opmath_type<scalar_t>;
                       const Rows<const scalar_t*> data{contiguous.x.const_data_ptr<scalar_t>()};
                       const Columns<const scalar_t*> column_data{};
                       scalar_t* out_p = out.mutable_data_ptr<scalar_t>();
                       const acc_t n_acc = static_cast<acc_t>(n);
                       at::parallel_for(0, rows, rows_per_task(n), [&](int64_t begin, int64_t end) {
#ifndef NO_CPU_VECTOR_LOOPS
                         if (const std::optional<CpuIsa> isa = cpu_vector_isa()) {
                           // Each term of z over a row, which the outputs read back
                           // (csrc/softmax_math.h).
                           std::vector<acc_t> terms(n);
                           forward_rows_vectors<scalar_t, scalar_t>(*isa, data, column_data, out_p,
                                                                    terms.data(), rows, n, begin,
                                                                    end, s);
                           return;
                         }
#endif
                         for (int64_t r = begin; r < end; ++r) {
                           const int64_t row = r * n;
                           Reductions<acc_t> red;
                           {  // m = max(x)
                             double v = -std::numeric_limits<double>::infinity();
                             for (int64_t i = 0; i < n; ++i)
                               v = max(v, double(reduce_m<acc_t>(acc_t(data.x[row + i]), n_acc)));
                             red.m = static_cast<acc_t>(v);
                           }
                           {  // z = sum(exp(x - m))
                             double v = 0.0;
                             for (int64_t i = 0; i < n; ++i)
                               v += reduce_z<acc_t>(acc_t(data.x[row + i]), n_acc, red.m);
                             red.z = static_cast<acc_t>(v);
                           }
                           for (int64_t i = 0; i < n; ++i) {
                             out_p[row + i] = static_cast<scalar_t>(
                                 forward<acc_t>(acc_t(data.x[row + i]), n_acc, red.m, red.z));
                           }
                         }
                       });
                     }));
  return out;
}

// Each row: the backward's reductions (from y, the saved output), then the row tensors' gradients;
// then each column tensor's gradient, summed over the rows in order (the same sum
// whatever the number of threads).
at::Tensor backward_impl(const at::Tensor& grad, const Output<const at::Tensor&>& in,
                         const Columns<const at::Tensor&>& columns, const Scalars<double>& s) {
  check_arguments("softmax_backward", {{"grad", grad}, {"y", in.y}}, {});
  const Output<at::Tensor> contiguous{in.y.contiguous()};
  const int64_t n = in.y.size(-1);
  const int64_t rows = n == 0 ? 0 : in.y.numel() / n;
  const at::Tensor grad_c = grad.contiguous();
  RowGrads<at::Tensor> row_grads{new_tensor(in.y, in.y.sizes(), in.y.scalar_type())};
  AT_DISPATCH_SWITCH(
      in.y.scalar_type(), "softmax_backward_cpu", SOFTMAX_DISPATCH_CASES([&] {
        using acc_t = at::opmath_type<scalar_t>;
        const Output<const scalar_t*> data{contiguous.y.const_data_ptr<scalar_t>()};
        const Columns<const scalar_t*> column_data{};
        const scalar_t* grad_p = grad_c.const_data_ptr<scalar_t>();
        const RowGrads<scalar_t*> row_grads_p{row_grads.x.mutable_data_ptr<scalar_t>()};
        const acc_t n_acc = static_cast<acc_t>(n);
        // Each row's reductions, kept for the column gradients.
        std::vector<GradReductions<acc_t>> grad_red(rows);
#ifndef NO_CPU_VECTOR_LOOPS
        // The vector loops where the CPU has AVX2 or AVX512; the scalar ones below elsewhere.
        if (const std::optional<CpuIsa> isa = cpu_vector_isa()) {
          at::parallel_for(0, rows, rows_per_task(n), [&](int64_t begin, int64_t end) {
            backward_rows_vectors<scalar_t>(*isa, grad_p, data, column_data, grad_red.data(),
                                            row_grads_p, rows, n, begin, end, s);
          });
          return;
        }
#endif
        at::parallel_for(0, rows, rows_per_task(n), [&](int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; ++r) {
            const int64_t row = r * n;
            {  // gy = sum(grad * y)
              double v = 0.0;
              for (int64_t i = 0; i < n; ++i)
                v += grad_reduce_gy<acc_t>(acc_t(grad_p[row + i]), acc_t(data.y[row + i]), n_acc);
              grad_red[r].gy = static_cast<acc_t>(v);
            }
            for (int64_t i = 0; i < n; ++i) {
              const acc_t g = static_cast<acc_t>(grad_p[row + i]);
              const acc_t y = acc_t(data.y[row + i]);
              row_grads_p.x[row + i] =
                  static_cast<scalar_t>(grad_wrt_x<acc_t>(g, y, n_acc, grad_red[r].gy));
            }
          }
        });
      }));
  return row_grads.x;
}

}  // namespace cpu

#ifdef WITH_CUDA
namespace cuda {

at::Tensor forward_impl(const Rows<const at::Tensor&>& in,
                        const Columns<const at::Tensor&>& columns, const Scalars<double>& s) {
  check_arguments("softmax", {{"x", in.x}}, {});
  // Allocate, copy and launch on the inputs' device, whichever device is current.
  const c10::cuda::CUDAGuard device_guard(in.x.device());
  // Contiguous copies held in locals: they must outlive the asynchronous kernel launch.
  const Rows<at::Tensor> contiguous{in.x.contiguous()};
  const int64_t n = in.x.size(-1);
  const int64_t rows = n == 0 ? 0 : in.x.numel() / n;
  at::Tensor out = new_tensor(in.x, in.x.sizes(), in.x.scalar_type());
  if (out.numel() == 0) return out;
  // The current stream, not the default one: correct under user streams and CUDA graphs.
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_SWITCH(in.x.scalar_type(), "softmax_cuda", SOFTMAX_DISPATCH_CASES([&] {
                       using T = CudaScalar<scalar_t>;
                       // Scratch for the partial reductions of few long rows, from torch's caching
                       // allocator.
                       const int64_t workspace_bytes = forward_workspace_bytes<T>(rows, n);
                       const at::Tensor workspace =
                           workspace_bytes > 0 ? new_tensor(out, {workspace_bytes}, at::kByte)
                                               : at::Tensor();
                       const Rows<const T*> data{cuda_data<scalar_t>(contiguous.x)};
                       const Columns<const T*> column_data{};
                       C10_CUDA_CHECK(launch_forward(
                           data, column_data, cuda_mutable_data<scalar_t>(out), rows, n, s,
                           workspace.defined() ? workspace.mutable_data_ptr() : nullptr, stream));
                     }));
  return out;
}

at::Tensor backward_impl(const at::Tensor& grad, const Output<const at::Tensor&>& in,
                         const Columns<const at::Tensor&>& columns, const Scalars<double>& s) {
  check_arguments("softmax_backward", {{"grad", grad}, {"y", in.y}}, {});
  const c10::cuda::CUDAGuard device_guard(in.y.device());
  const Output<at::Tensor> contiguous{in.y.contiguous()};
  const int64_t n = in.y.size(-1);
  const int64_t rows = n == 0 ? 0 : in.y.numel() / n;
  const at::Tensor grad_c = grad.contiguous();
  RowGrads<at::Tensor> row_grads{new_tensor(in.y, in.y.sizes(), in.y.scalar_type())};
  if (n == 0) return row_grads.x;
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_SWITCH(
      in.y.scalar_type(), "softmax_backward_cuda", SOFTMAX_DISPATCH_CASES([&] {
        using T = CudaScalar<scalar_t>;
        // Scratch for the column gradients' partial sums, from torch's caching allocator.
        const at::Tensor workspace = new_tensor(
            grad_c, {std::max<int64_t>(backward_workspace_bytes<T>(rows, n), 1)}, at::kByte);
        const Output<const T*> data{cuda_data<scalar_t>(contiguous.y)};
        const Columns<const T*> column_data{};
        const RowGrads<T*> row_grads_p{cuda_mutable_data<scalar_t>(row_grads.x)};
        const ColumnGrads<T*> column_grads_p{};
        C10_CUDA_CHECK(launch_backward(cuda_data<scalar_t>(grad_c), data, column_data, row_grads_p,
                                       column_grads_p, rows, n, s, workspace.mutable_data_ptr(),
                                       stream));
      }));
  return row_grads.x;
}

}  // namespace cuda
#endif  // WITH_CUDA

// The functions the dispatcher calls, with the arguments one by one in the schema's order.
at::Tensor forward_cpu(const at::Tensor& x) { return cpu::forward_impl({x}, {}, {}); }

at::Tensor backward_cpu(const at::Tensor& grad, const at::Tensor& y) {
  return cpu::backward_impl(grad, {y}, {}, {});
}

#ifdef WITH_CUDA
at::Tensor forward_cuda(const at::Tensor& x) { return cuda::forward_impl({x}, {}, {}); }

at::Tensor backward_cuda(const at::Tensor& grad, const at::Tensor& y) {
  return cuda::backward_impl(grad, {y}, {}, {});
}
#endif  // WITH_CUDA
}  // namespace

TORCH_LIBRARY_IMPL(softmax, CPU, m) {
  m.impl("softmax", &forward_cpu);
  m.impl("softmax_backward", &backward_cpu);
}

#ifdef WITH_CUDA
TORCH_LIBRARY_IMPL(softmax, CUDA, m) {
  m.impl("softmax", &forward_cuda);
  m.impl("softmax_backward", &backward_cuda);
}
#endif

}  // namespace softmax
