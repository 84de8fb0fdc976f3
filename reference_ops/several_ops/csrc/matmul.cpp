// matmul.cpp: matmul on the CPU, and on CUDA through the launchers of
// csrc/matmul_kernel.cu; both check their inputs first. csrc/library.cpp declares
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
#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#ifdef WITH_CUDA
#include <ATen/cuda/EmptyTensor.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "matmul_kernel.h"
#endif

// The dtypes matmul was generated for: float32, float64, float16, bfloat16.
#define MATMUL_DISPATCH_CASES(...)           \
  AT_DISPATCH_CASE(at::kFloat, __VA_ARGS__)  \
  AT_DISPATCH_CASE(at::kDouble, __VA_ARGS__) \
  AT_DISPATCH_CASE(at::kHalf, __VA_ARGS__)   \
  AT_DISPATCH_CASE(at::kBFloat16, __VA_ARGS__)

namespace matmul {
namespace {

constexpr const char* kSupportedDtypes =
    "torch.float32, torch.float64, torch.float16, torch.bfloat16";
// Elements per CPU task: small tensors stay on one thread.
constexpr int64_t kCpuGrain = 32768;

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

// A product needs two matrices of one supported dtype, on one device, whose inner
// dimensions agree.
void check_matrices(const char* op, NamedTensor a, NamedTensor b) {
  for (const NamedTensor& arg : {a, b}) {
    TORCH_CHECK(is_supported(arg.tensor.scalar_type()), op, ": ", arg.name, " has dtype ",
                dtype_name(arg.tensor.scalar_type()), "; supported dtypes are ", kSupportedDtypes);
    TORCH_CHECK(arg.tensor.dim() == 2, op, ": ", arg.name, " must be a 2-D matrix, got shape ",
                arg.tensor.sizes());
  }
  TORCH_CHECK(b.tensor.scalar_type() == a.tensor.scalar_type(), op, ": ", b.name, " has dtype ",
              dtype_name(b.tensor.scalar_type()), " but ", a.name, " has dtype ",
              dtype_name(a.tensor.scalar_type()), "; pass matrices of one dtype");
  TORCH_CHECK(b.tensor.device() == a.tensor.device(), op, ": ", b.name, " is on ",
              b.tensor.device(), " but ", a.name, " is on ", a.tensor.device(),
              "; move the matrices to one device");
  TORCH_CHECK(a.tensor.size(1) == b.tensor.size(0), op, ": ", a.name, " has shape ",
              a.tensor.sizes(), " and ", b.name, " has shape ", b.tensor.sizes(),
              "; the columns of ", a.name, " must match the rows of ", b.name);
}

// c = a · b on the CPU for a and b of any strides (the backward pass passes transposed
// views). Rows of c in parallel; each row is a sum of b's rows scaled by a's elements, the
// order that walks a row of b and of c contiguously.
at::Tensor matmul_cpu(const at::Tensor& a, const at::Tensor& b) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  at::Tensor c = new_tensor(a, {m, n}, a.scalar_type());
  AT_DISPATCH_SWITCH(a.scalar_type(), "matmul_cpu", MATMUL_DISPATCH_CASES([&] {
                       using acc_t = at::opmath_type<scalar_t>;
                       const scalar_t* a_p = a.const_data_ptr<scalar_t>();
                       const scalar_t* b_p = b.const_data_ptr<scalar_t>();
                       scalar_t* c_p = c.mutable_data_ptr<scalar_t>();
                       const int64_t a0 = a.stride(0), a1 = a.stride(1), b0 = b.stride(0),
                                     b1 = b.stride(1);
                       const int64_t rows_per_task = 1 + kCpuGrain / (1 + n * k);
                       at::parallel_for(0, m, rows_per_task, [&](int64_t begin, int64_t end) {
                         std::vector<acc_t> row(n);
                         for (int64_t i = begin; i < end; ++i) {
                           std::fill(row.begin(), row.end(), acc_t(0));
                           for (int64_t l = 0; l < k; ++l) {
                             const acc_t a_il = static_cast<acc_t>(a_p[i * a0 + l * a1]);
                             const scalar_t* b_row = b_p + l * b0;
                             for (int64_t j = 0; j < n; ++j)
                               row[j] += a_il * static_cast<acc_t>(b_row[j * b1]);
                           }
                           for (int64_t j = 0; j < n; ++j)
                             c_p[i * n + j] = static_cast<scalar_t>(row[j]);
                         }
                       });
                     }));
  return c;
}

// The functions the dispatcher calls: the matrices are a and b here, whatever the
// schema names them (a and b); the messages use the schema's names.
at::Tensor forward_cpu(const at::Tensor& a, const at::Tensor& b) {
  check_matrices("matmul", {"a", a}, {"b", b});
  return matmul_cpu(a, b);
}

// da = grad · bᵀ and db = aᵀ · grad, through transposed views.
std::tuple<at::Tensor, at::Tensor> backward_cpu(const at::Tensor& grad, const at::Tensor& a,
                                                const at::Tensor& b) {
  check_matrices("matmul_backward", {"grad", grad}, {"bᵀ", b.t()});
  check_matrices("matmul_backward", {"aᵀ", a.t()}, {"grad", grad});
  return {matmul_cpu(grad, b.t()), matmul_cpu(a.t(), grad)};
}

#ifdef WITH_CUDA
at::Tensor matmul_cuda_impl(const at::Tensor& a, const at::Tensor& b) {
  // Allocate and launch on the inputs' device, on its current stream.
  const c10::cuda::CUDAGuard device_guard(a.device());
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  at::Tensor c = new_tensor(a, {m, n}, a.scalar_type());
  if (c.numel() == 0) return c;
  // The kernel reads rows with 16-byte loads, so it takes row-major matrices: transposed
  // or strided views (the backward pass passes Aᵀ and Bᵀ) are copied, which moves
  // O(M·K + K·N) bytes against the product's O(M·N·K) arithmetic. Held in locals until the
  // asynchronous launch has been enqueued.
  const at::Tensor a_c = a.contiguous(), b_c = b.contiguous();
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_SWITCH(
      a.scalar_type(), "matmul_cuda", MATMUL_DISPATCH_CASES([&] {
        C10_CUDA_CHECK(matmul_cuda(cuda_data<scalar_t>(a_c), cuda_data<scalar_t>(b_c),
                                   cuda_mutable_data<scalar_t>(c), m, n, k, stream));
      }));
  return c;
}

at::Tensor forward_cuda(const at::Tensor& a, const at::Tensor& b) {
  check_matrices("matmul", {"a", a}, {"b", b});
  return matmul_cuda_impl(a, b);
}

std::tuple<at::Tensor, at::Tensor> backward_cuda(const at::Tensor& grad, const at::Tensor& a,
                                                 const at::Tensor& b) {
  check_matrices("matmul_backward", {"grad", grad}, {"bᵀ", b.t()});
  check_matrices("matmul_backward", {"aᵀ", a.t()}, {"grad", grad});
  return {matmul_cuda_impl(grad, b.t()), matmul_cuda_impl(a.t(), grad)};
}
#endif  // WITH_CUDA

}  // namespace

TORCH_LIBRARY_IMPL(several_ops, CPU, m) {
  m.impl("matmul", &forward_cpu);
  m.impl("matmul_backward", &backward_cpu);
}

#ifdef WITH_CUDA
TORCH_LIBRARY_IMPL(several_ops, CUDA, m) {
  m.impl("matmul", &forward_cuda);
  m.impl("matmul_backward", &backward_cuda);
}
#endif

}  // namespace matmul
