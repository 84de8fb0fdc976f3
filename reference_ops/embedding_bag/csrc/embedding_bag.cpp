// embedding_bag.cpp: embedding_bag on the CPU, and on CUDA through the launchers of
// csrc/embedding_bag_kernel.cu; both check their inputs first. csrc/library.cpp declares
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

#include <initializer_list>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "embedding_bag_cpu.h"
#include "embedding_bag_kernel.h"

#ifdef WITH_CUDA
#include <ATen/cuda/EmptyTensor.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "embedding_bag_kernel.h"
#endif

// The dtypes embedding_bag was generated for: float32, float64, float16, bfloat16.
#define EMBEDDING_BAG_DISPATCH_CASES(...)    \
  AT_DISPATCH_CASE(at::kFloat, __VA_ARGS__)  \
  AT_DISPATCH_CASE(at::kDouble, __VA_ARGS__) \
  AT_DISPATCH_CASE(at::kHalf, __VA_ARGS__)   \
  AT_DISPATCH_CASE(at::kBFloat16, __VA_ARGS__)

namespace embedding_bag {
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

// embedding_bag's tensors as the dispatcher passed them.
struct Tensors {
  const at::Tensor& weight;
  const at::Tensor& indices;
  const at::Tensor& offsets;
};

// Contiguous copies (or the tensors themselves, when contiguous already), held in locals
// that outlive the kernels: a temporary would be freed while an asynchronous launch
// still reads it.
struct Held {
  at::Tensor weight;
  at::Tensor indices;
  at::Tensor offsets;
};

Held contiguous(const Tensors& in) {
  return {in.weight.contiguous(), in.indices.contiguous(), in.offsets.contiguous()};
}

// What the signature says of each tensor: dtype, device (the first tensor's) and number
// of dimensions. Each message names the argument, what it got and what it needs.
void check_arguments(const char* op, const Tensors& in) {
  // weight sets the op's dtype.
  TORCH_CHECK(is_supported(in.weight.scalar_type()), op, ": weight has dtype ",
              dtype_name(in.weight.scalar_type()), "; supported dtypes are ", kSupportedDtypes);
  TORCH_CHECK(in.indices.scalar_type() == at::kLong, op, ": indices has dtype ",
              dtype_name(in.indices.scalar_type()), "; it must be torch.int64");
  TORCH_CHECK(in.indices.device() == in.weight.device(), op, ": indices is on ",
              in.indices.device(), " but weight is on ", in.weight.device(),
              "; move the tensors to one device");
  TORCH_CHECK(in.offsets.scalar_type() == at::kLong, op, ": offsets has dtype ",
              dtype_name(in.offsets.scalar_type()), "; it must be torch.int64");
  TORCH_CHECK(in.offsets.device() == in.weight.device(), op, ": offsets is on ",
              in.offsets.device(), " but weight is on ", in.weight.device(),
              "; move the tensors to one device");
  TORCH_CHECK(in.weight.dim() == 2, op, ": weight has shape ", in.weight.sizes(),
              "; it must have 2 dimensions (weight: Tensor[float, 2])");
  TORCH_CHECK(in.indices.dim() == 1, op, ": indices has shape ", in.indices.sizes(),
              "; it must have 1 dimension (indices: Tensor[int64, 1])");
  TORCH_CHECK(in.offsets.dim() == 1, op, ": offsets has shape ", in.offsets.sizes(),
              "; it must have 1 dimension (offsets: Tensor[int64, 1])");
}

// An output's shape, refused where its rule gives a negative size.
std::vector<int64_t> checked_shape(const char* op, const char* output, const char* rule,
                                   std::vector<int64_t> shape) {
  for (const int64_t size : shape) {
    TORCH_CHECK(size >= 0, op, ": ", output, " would have shape ", at::IntArrayRef(shape),
                " by its rule ", rule, "; a size cannot be negative");
  }
  return shape;
}

// The shape of out: (offsets.size(0), weight.size(1)).
std::vector<int64_t> out_shape(const Tensors& in, const Scalars& s) {
  return checked_shape("embedding_bag", "out", "(offsets.size(0), weight.size(1))",
                       {in.offsets.size(0), in.weight.size(1)});
}

// The outputs, new contiguous tensors on the inputs' device.
std::vector<at::Tensor> new_outputs(const Tensors& in, const Scalars& s) {
  return {new_tensor(in.weight, out_shape(in, s), in.weight.scalar_type())};
}

// A contiguous tensor as the kernels see it (csrc/embedding_bag_kernel.h).
template <typename E>
TensorArg<E> tensor_arg(const at::Tensor& t) {
  TensorArg<E> arg{};
  if constexpr (std::is_const_v<E>) {
    arg.data = static_cast<E*>(t.const_data_ptr());
  } else {
    arg.data = static_cast<E*>(t.mutable_data_ptr());
  }
  arg.numel = t.numel();
  arg.dim = static_cast<int>(t.dim());
  for (int d = 0; d < arg.dim; ++d) arg.sizes[d] = t.size(d);
  return arg;
}

bool all_empty(const std::vector<at::Tensor>& tensors) {
  for (const at::Tensor& t : tensors) {
    if (t.numel() != 0) return false;
  }
  return true;
}

// An incoming gradient: of its output's shape, dtype and device.
void check_gradient(const char* op, const char* name, const at::Tensor& grad,
                    const at::Tensor& first, at::IntArrayRef shape) {
  TORCH_CHECK(grad.scalar_type() == first.scalar_type(), op, ": ", name, " has dtype ",
              dtype_name(grad.scalar_type()), " but weight has dtype ",
              dtype_name(first.scalar_type()), "; pass them in one dtype");
  TORCH_CHECK(grad.device() == first.device(), op, ": ", name, " is on ", grad.device(),
              " but weight is on ", first.device(), "; move the tensors to one device");
  TORCH_CHECK(grad.sizes() == shape, op, ": ", name, " has shape ", grad.sizes(),
              " but its output has shape ", shape);
}

// One gradient per output of the op's dtype (the others have none).
void check_gradients(const char* op, const std::vector<at::Tensor>& grads, const Tensors& in,
                     const Scalars& s) {
  check_gradient(op, "grad_out", grads[0], in.weight, out_shape(in, s));
}

std::vector<at::Tensor> new_gradients(const Tensors& in) {
  return {new_tensor(in.weight, in.weight.sizes(), in.weight.scalar_type())};
}

// On the CPU: checks, outputs, then your code (csrc/embedding_bag_cpu.h).
std::vector<at::Tensor> forward_on_cpu(const Tensors& in, const Scalars& s) {
  check_arguments("embedding_bag", in);
  const Held held = contiguous(in);
  std::vector<at::Tensor> out = new_outputs(in, s);
  if (all_empty(out)) return out;
  AT_DISPATCH_SWITCH(in.weight.scalar_type(), "embedding_bag_cpu",
                     EMBEDDING_BAG_DISPATCH_CASES([&] {
                       const Inputs<scalar_t> inputs{tensor_arg<const scalar_t>(held.weight),
                                                     tensor_arg<const int64_t>(held.indices),
                                                     tensor_arg<const int64_t>(held.offsets)};
                       const Outputs<scalar_t> outputs{tensor_arg<scalar_t>(out[0])};
                       cpu::forward<scalar_t>(inputs, s, outputs);
                     }));
  return out;
}

std::vector<at::Tensor> backward_on_cpu(const std::vector<at::Tensor>& grads, const Tensors& in,
                                        const Scalars& s) {
  check_arguments("embedding_bag_backward", in);
  check_gradients("embedding_bag_backward", grads, in, s);
  const Held held = contiguous(in);
  const std::vector<at::Tensor> held_grads{grads[0].contiguous()};
  std::vector<at::Tensor> grad_in = new_gradients(in);
  if (all_empty(grad_in)) return grad_in;
  AT_DISPATCH_SWITCH(in.weight.scalar_type(), "embedding_bag_backward_cpu",
                     EMBEDDING_BAG_DISPATCH_CASES([&] {
                       const Inputs<scalar_t> inputs{tensor_arg<const scalar_t>(held.weight),
                                                     tensor_arg<const int64_t>(held.indices),
                                                     tensor_arg<const int64_t>(held.offsets)};
                       const GradOutputs<scalar_t> grad{tensor_arg<const scalar_t>(held_grads[0])};
                       const GradInputs<scalar_t> gradients{tensor_arg<scalar_t>(grad_in[0])};
                       cpu::backward<scalar_t>(grad, inputs, s, gradients);
                     }));
  return grad_in;
}

#ifdef WITH_CUDA
// A tensor as the CUDA kernels see it: c10::Half and c10::BFloat16 as __half and
// __nv_bfloat16, which have the same bits.
template <typename E>
auto cuda_arg(const at::Tensor& t) {
  using Element = std::conditional_t<std::is_const_v<E>, const CudaScalar<std::remove_const_t<E>>,
                                     CudaScalar<E>>;
  return tensor_arg<Element>(t);
}

// On CUDA: checks, then outputs and kernels on the inputs' device, whichever device is
// current, and on the current stream, not the default one: correct under user streams
// and CUDA graphs.
std::vector<at::Tensor> forward_on_cuda(const Tensors& in, const Scalars& s) {
  check_arguments("embedding_bag", in);
  const c10::cuda::CUDAGuard device_guard(in.weight.device());
  const Held held = contiguous(in);
  std::vector<at::Tensor> out = new_outputs(in, s);
  if (all_empty(out)) return out;
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_SWITCH(in.weight.scalar_type(), "embedding_bag_cuda",
                     EMBEDDING_BAG_DISPATCH_CASES([&] {
                       using T = CudaScalar<scalar_t>;
                       const Inputs<T> inputs{cuda_arg<const scalar_t>(held.weight),
                                              cuda_arg<const int64_t>(held.indices),
                                              cuda_arg<const int64_t>(held.offsets)};
                       const Outputs<T> outputs{cuda_arg<scalar_t>(out[0])};
                       cuda::forward<T>(inputs, s, outputs, stream);
                       C10_CUDA_KERNEL_LAUNCH_CHECK();
                     }));
  return out;
}

std::vector<at::Tensor> backward_on_cuda(const std::vector<at::Tensor>& grads, const Tensors& in,
                                         const Scalars& s) {
  check_arguments("embedding_bag_backward", in);
  check_gradients("embedding_bag_backward", grads, in, s);
  const c10::cuda::CUDAGuard device_guard(in.weight.device());
  const Held held = contiguous(in);
  const std::vector<at::Tensor> held_grads{grads[0].contiguous()};
  std::vector<at::Tensor> grad_in = new_gradients(in);
  if (all_empty(grad_in)) return grad_in;
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_SWITCH(in.weight.scalar_type(), "embedding_bag_backward_cuda",
                     EMBEDDING_BAG_DISPATCH_CASES([&] {
                       using T = CudaScalar<scalar_t>;
                       const Inputs<T> inputs{cuda_arg<const scalar_t>(held.weight),
                                              cuda_arg<const int64_t>(held.indices),
                                              cuda_arg<const int64_t>(held.offsets)};
                       const GradOutputs<T> grad{cuda_arg<const scalar_t>(held_grads[0])};
                       const GradInputs<T> gradients{cuda_arg<scalar_t>(grad_in[0])};
                       cuda::backward<T>(grad, inputs, s, gradients, stream);
                       C10_CUDA_KERNEL_LAUNCH_CHECK();
                     }));
  return grad_in;
}
#endif  // WITH_CUDA

// The functions the dispatcher calls, with the arguments one by one in the schema's order.
at::Tensor forward_cpu(const at::Tensor& weight, const at::Tensor& indices,
                       const at::Tensor& offsets) {
  return forward_on_cpu({weight, indices, offsets}, {})[0];
}

at::Tensor backward_cpu(const at::Tensor& grad_out, const at::Tensor& weight,
                        const at::Tensor& indices, const at::Tensor& offsets) {
  return backward_on_cpu({grad_out}, {weight, indices, offsets}, {})[0];
}

#ifdef WITH_CUDA
at::Tensor forward_cuda(const at::Tensor& weight, const at::Tensor& indices,
                        const at::Tensor& offsets) {
  return forward_on_cuda({weight, indices, offsets}, {})[0];
}

at::Tensor backward_cuda(const at::Tensor& grad_out, const at::Tensor& weight,
                         const at::Tensor& indices, const at::Tensor& offsets) {
  return backward_on_cuda({grad_out}, {weight, indices, offsets}, {})[0];
}
#endif  // WITH_CUDA
}  // namespace

TORCH_LIBRARY_IMPL(embedding_bag, CPU, m) {
  m.impl("embedding_bag", &forward_cpu);
  m.impl("embedding_bag_backward", &backward_cpu);
}

#ifdef WITH_CUDA
TORCH_LIBRARY_IMPL(embedding_bag, CUDA, m) {
  m.impl("embedding_bag", &forward_cuda);
  m.impl("embedding_bag_backward", &backward_cuda);
}
#endif

}  // namespace embedding_bag
