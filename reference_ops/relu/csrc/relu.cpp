// relu.cpp: relu on the CPU, and on CUDA through the launchers of
// csrc/relu_kernel.cu; both check their inputs first. csrc/library.cpp declares
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

#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>

#include "relu_math.h"

#ifdef WITH_CUDA
#include <ATen/cuda/EmptyTensor.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "relu_kernel.h"
#endif

// The dtypes relu was generated for: float32, float64, float16, bfloat16.
#define RELU_DISPATCH_CASES(...)             \
  AT_DISPATCH_CASE(at::kFloat, __VA_ARGS__)  \
  AT_DISPATCH_CASE(at::kDouble, __VA_ARGS__) \
  AT_DISPATCH_CASE(at::kHalf, __VA_ARGS__)   \
  AT_DISPATCH_CASE(at::kBFloat16, __VA_ARGS__)

namespace relu {
namespace {

constexpr const char* kSupportedDtypes =
    "torch.float32, torch.float64, torch.float16, torch.bfloat16";
// Elements per CPU task: small tensors stay on one thread.
constexpr int64_t kCpuGrain = 32768;

// The vector loops this CPU runs (csrc/relu_cpu_loops.h, AVX2 or AVX512), as
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

// Every tensor argument must have a supported dtype and the dtype, device and shape of
// the first one. Each message names the argument, what it got and what was expected.
void check_tensors(const char* op, std::initializer_list<NamedTensor> args) {
  const NamedTensor& first = *args.begin();
  for (const NamedTensor& arg : args) {
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
                "; pass tensors of one shape (no broadcasting)");
  }
}
// The layout the tensors share if every one is dense (no gaps, no overlap) with the same
// strides (a channels_last batch, matrices transposed alike): element i of each is then at
// data_ptr() + i, and the kernels read them as they are. nullptr if they do not share one;
// nullptr entries (a one-value gradient) do not count.
const at::Tensor* shared_dense_layout(std::initializer_list<const at::Tensor*> tensors) {
  const at::Tensor* first = nullptr;
  for (const at::Tensor* t : tensors) {
    if (t == nullptr) continue;
    if (!t->is_non_overlapping_and_dense()) return nullptr;
    if (first != nullptr && t->strides() != first->strides()) return nullptr;
    if (first == nullptr) first = t;
  }
  return first;
}

// t as it is in the shared layout, else a contiguous copy (t itself if already contiguous).
at::Tensor in_layout(const at::Tensor& t, const at::Tensor* layout) {
  return layout != nullptr ? t : t.contiguous();
}

// A new tensor of like's sizes on like's device: in the shared layout where there is one,
// else contiguous.
at::Tensor new_in_layout(const at::Tensor* layout, const at::Tensor& like, at::ScalarType dtype) {
  if (layout == nullptr) return new_tensor(like, like.sizes(), dtype);
#ifdef WITH_CUDA
  if (like.is_cuda()) {
    return at::detail::empty_strided_cuda(like.sizes(), layout->strides(), dtype, like.device());
  }
#endif
  return at::detail::empty_strided_cpu(like.sizes(), layout->strides(), dtype,
                                       /*pin_memory=*/false);
}

// The gradient of a sum (op(x).sum().backward()) arrives expanded: one value, every stride
// 0. The backward kernels read that value for every element (grad_step 0) instead of a
// copy of it the size of the output (grad_step 1 reads a gradient element by element).
bool is_one_value(const at::Tensor& t) {
  if (t.numel() <= 1) return false;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) != 1 && t.stride(d) != 0) return false;
  }
  return true;
}

// The vector loops for the processors this CPU has.
template <typename scalar_t, typename out_t>
void forward_vectors(CpuIsa isa, const Tensors<const scalar_t*>& data, const Tensors<int64_t>& step,
                     out_t* out, int64_t count, const Scalars<double>& s) {
  if (isa == CpuIsa::kAvx512) {
    forward_lanes<CpuIsa::kAvx512, scalar_t, out_t>(data, step, out, count, s);
  } else {
    forward_lanes<CpuIsa::kAvx2, scalar_t, out_t>(data, step, out, count, s);
  }
}

template <typename scalar_t>
void backward_vectors(CpuIsa isa, const scalar_t* grad, int64_t grad_step,
                      const GradReads<const scalar_t*>& data, const GradReads<int64_t>& step,
                      const Grads<scalar_t*>& grads, int64_t count, const Scalars<double>& s) {
  if (isa == CpuIsa::kAvx512) {
    backward_lanes<CpuIsa::kAvx512, scalar_t>(grad, grad_step, data, step, grads, count, s);
  } else {
    backward_lanes<CpuIsa::kAvx2, scalar_t>(grad, grad_step, data, step, grads, count, s);
  }
}
// The kernels take the arguments in the structs of csrc/relu_math.h; the functions
// registered at the end of this file pass them on.
namespace cpu {

at::Tensor forward_impl(const Tensors<const at::Tensor&>& in, const Scalars<double>& s) {
  check_tensors("relu", {{"x", in.x}});
  // Read as they are where the inputs share a dense layout (the output then takes it, as
  // eager's does: channels_last stays channels_last), else from contiguous copies; held in
  // locals until the kernels finish.
  const at::Tensor* layout = shared_dense_layout({&in.x});
  const Tensors<at::Tensor> dense{in_layout(in.x, layout)};
  at::Tensor out = new_in_layout(layout, in.x, in.x.scalar_type());
  const int64_t n = out.numel();
  AT_DISPATCH_SWITCH(
      in.x.scalar_type(), "relu_cpu", RELU_DISPATCH_CASES([&] {
        using out_t = scalar_t;
        // double where the input or the output is double; float for the rest.
        using acc_t =
            std::conditional_t<std::is_same_v<scalar_t, double> || std::is_same_v<out_t, double>,
                               double, float>;
        const Tensors<const scalar_t*> data{dense.x.const_data_ptr<scalar_t>()};
        out_t* out_p = out.mutable_data_ptr<out_t>();
        at::parallel_for(0, n, kCpuGrain, [&](int64_t begin, int64_t end) {
#ifndef NO_CPU_VECTOR_LOOPS
          if (const std::optional<CpuIsa> isa = cpu_vector_isa()) {
            forward_vectors<scalar_t, out_t>(*isa, {data.x + begin}, {1}, out_p + begin,
                                             end - begin, s);
            return;
          }
#endif
          for (int64_t i = begin; i < end; ++i) {
            out_p[i] = static_cast<out_t>(forward<acc_t>(static_cast<acc_t>(data.x[i])));
          }
        });
      }));
  return out;
}

at::Tensor backward_impl(const at::Tensor& grad, const GradReads<const at::Tensor&>& reads,
                         const Scalars<double>& s) {
  check_tensors("relu_backward", {{"grad", grad}, {"x", reads.x}});
  // grad as it is where it is one value; the rest as they are where they share a dense
  // layout (the gradients then take it), else from contiguous copies.
  const bool grad_is_one_value = is_one_value(grad);
  const at::Tensor* layout = shared_dense_layout({grad_is_one_value ? nullptr : &grad, &reads.x});
  const at::Tensor grad_c = grad_is_one_value ? grad.as_strided({1}, {1}) : in_layout(grad, layout);
  const int64_t grad_step = grad_is_one_value ? 0 : 1;
  const GradReads<at::Tensor> dense{in_layout(reads.x, layout)};
  Grads<at::Tensor> grads{new_in_layout(layout, grad, grad.scalar_type())};
  const int64_t n = grad.numel();
  AT_DISPATCH_SWITCH(
      grad.scalar_type(), "relu_backward_cpu", RELU_DISPATCH_CASES([&] {
        using acc_t = at::opmath_type<scalar_t>;
        const scalar_t* grad_p = grad_c.const_data_ptr<scalar_t>();
        const GradReads<const scalar_t*> data{dense.x.const_data_ptr<scalar_t>()};
        const Grads<scalar_t*> grads_p{grads.x.mutable_data_ptr<scalar_t>()};
        at::parallel_for(0, n, kCpuGrain, [&](int64_t begin, int64_t end) {
#ifndef NO_CPU_VECTOR_LOOPS
          if (const std::optional<CpuIsa> isa = cpu_vector_isa()) {
            backward_vectors<scalar_t>(*isa, grad_p + begin * grad_step, grad_step,
                                       {data.x + begin}, {1}, {grads_p.x + begin}, end - begin, s);
            return;
          }
#endif
          for (int64_t i = begin; i < end; ++i) {
            const acc_t g = static_cast<acc_t>(grad_p[i * grad_step]);
            grads_p.x[i] =
                static_cast<scalar_t>(grad_wrt_x<acc_t>(g, static_cast<acc_t>(data.x[i])));
          }
        });
      }));
  return grads.x;
}

}  // namespace cpu

#ifdef WITH_CUDA
namespace cuda {

at::Tensor forward_impl(const Tensors<const at::Tensor&>& in, const Scalars<double>& s) {
  check_tensors("relu", {{"x", in.x}});
  // Allocate, copy and launch on the inputs' device, whichever device is current.
  const c10::cuda::CUDAGuard device_guard(in.x.device());
  // Read as they are where the inputs share a dense layout (the output then takes it, as
  // eager's does: channels_last stays channels_last), else from contiguous copies; held in
  // locals until the kernels finish.
  const at::Tensor* layout = shared_dense_layout({&in.x});
  const Tensors<at::Tensor> dense{in_layout(in.x, layout)};
  at::Tensor out = new_in_layout(layout, in.x, in.x.scalar_type());
  const int64_t n = out.numel();
  if (n == 0) return out;
  // The current stream, not the default one: correct under user streams and CUDA graphs.
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_SWITCH(
      in.x.scalar_type(), "relu_cuda", RELU_DISPATCH_CASES([&] {
        using out_t = scalar_t;
        const Tensors<const CudaScalar<scalar_t>*> data{cuda_data<scalar_t>(dense.x)};
        C10_CUDA_CHECK(launch_forward(data, cuda_mutable_data<out_t>(out), n, s, stream));
      }));
  return out;
}

at::Tensor backward_impl(const at::Tensor& grad, const GradReads<const at::Tensor&>& reads,
                         const Scalars<double>& s) {
  check_tensors("relu_backward", {{"grad", grad}, {"x", reads.x}});
  const c10::cuda::CUDAGuard device_guard(grad.device());
  // grad as it is where it is one value; the rest as they are where they share a dense
  // layout (the gradients then take it), else from contiguous copies.
  const bool grad_is_one_value = is_one_value(grad);
  const at::Tensor* layout = shared_dense_layout({grad_is_one_value ? nullptr : &grad, &reads.x});
  const at::Tensor grad_c = grad_is_one_value ? grad.as_strided({1}, {1}) : in_layout(grad, layout);
  const int64_t grad_step = grad_is_one_value ? 0 : 1;
  const GradReads<at::Tensor> dense{in_layout(reads.x, layout)};
  Grads<at::Tensor> grads{new_in_layout(layout, grad, grad.scalar_type())};
  const int64_t n = grad.numel();
  if (n == 0) return grads.x;
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_SWITCH(
      grad.scalar_type(), "relu_backward_cuda", RELU_DISPATCH_CASES([&] {
        const GradReads<const CudaScalar<scalar_t>*> data{cuda_data<scalar_t>(dense.x)};
        const Grads<CudaScalar<scalar_t>*> grads_p{cuda_mutable_data<scalar_t>(grads.x)};
        C10_CUDA_CHECK(
            launch_backward(cuda_data<scalar_t>(grad_c), grad_step, data, grads_p, n, s, stream));
      }));
  return grads.x;
}

}  // namespace cuda
#endif  // WITH_CUDA

// The forward that also saves the conditions the gradients read, as bits (the layout:
// csrc/relu_kernel.h), and the backward that reads them instead of x. Autograd
// (csrc/relu_autograd.cpp) takes them on CUDA for inputs of one shape, contiguous;
// the CPU kernels serve direct calls and the tests.
namespace mask {

int64_t words(int64_t n) { return (n + 31) / 32; }

void check_forward_inputs(const Tensors<const at::Tensor&>& in) {
  check_tensors("relu_forward_saving_mask", {{"x", in.x}});
}

// grad's checks, and the mask's: int32, on grad's device, one plane of words per condition.
void check_backward_inputs(const at::Tensor& grad, const at::Tensor& mask) {
  check_tensors("relu_backward_from_mask", {{"grad", grad}});
  const std::vector<int64_t> expected{kSavedConditions, words(grad.numel())};
  TORCH_CHECK(mask.scalar_type() == at::kInt && mask.device() == grad.device() &&
                  mask.sizes() == at::IntArrayRef(expected) && mask.is_contiguous(),
              "relu_backward_from_mask: mask is ", dtype_name(mask.scalar_type()), " of shape ",
              mask.sizes(), " on ", mask.device(),
              "; expected the contiguous torch.int32 tensor of shape ", at::IntArrayRef(expected),
              " on ", grad.device(),
              " that relu_forward_saving_mask returned for an output of grad's shape");
}

const uint32_t* bits(const at::Tensor& mask) {
  return reinterpret_cast<const uint32_t*>(mask.const_data_ptr<int32_t>());
}

// A call's tensors, checked: the inputs read contiguously (copies where they are not, held
// until the kernels finish), the output and the mask.
struct ForwardCall {
  Tensors<at::Tensor> dense;
  at::Tensor out;
  at::Tensor mask;
  int64_t n;
};

ForwardCall prepare_forward(const Tensors<const at::Tensor&>& in) {
  check_forward_inputs(in);
  at::Tensor out = new_tensor(in.x, in.x.sizes(), in.x.scalar_type());
  const int64_t n = out.numel();
  return {{in.x.contiguous()}, out, new_tensor(in.x, {kSavedConditions, words(n)}, at::kInt), n};
}

// grad as it is where it is one value (step 0), else contiguous (step 1); the gradients.
struct BackwardCall {
  at::Tensor grad;
  int64_t grad_step;
  Grads<at::Tensor> grads;
  int64_t n;
};

BackwardCall prepare_backward(const at::Tensor& grad, const at::Tensor& mask) {
  check_backward_inputs(grad, mask);
  const bool one_value = is_one_value(grad);
  return {one_value ? grad.as_strided({1}, {1}) : grad.contiguous(),
          one_value ? 0 : 1,
          {new_tensor(grad, grad.sizes(), grad.scalar_type())},
          grad.numel()};
}

std::tuple<at::Tensor, at::Tensor> forward_cpu(const Tensors<const at::Tensor&>& in,
                                               const Scalars<double>& s) {
  const ForwardCall call = prepare_forward(in);
  const int64_t n = call.n;
  const int64_t n_words = words(n);
  AT_DISPATCH_SWITCH(
      in.x.scalar_type(), "relu_forward_saving_mask_cpu", RELU_DISPATCH_CASES([&] {
        using out_t = scalar_t;
        // double where the input or the output is double; float for the rest.
        using acc_t =
            std::conditional_t<std::is_same_v<scalar_t, double> || std::is_same_v<out_t, double>,
                               double, float>;
        const Tensors<const scalar_t*> data{call.dense.x.const_data_ptr<scalar_t>()};
        out_t* out_p = call.out.mutable_data_ptr<out_t>();
        uint32_t* mask_p = reinterpret_cast<uint32_t*>(call.mask.mutable_data_ptr<int32_t>());
        // Whole words a task, so that no two tasks write one.
        at::parallel_for(0, n_words, kCpuGrain / 32, [&](int64_t begin, int64_t end) {
          for (int64_t w = begin; w < end; ++w) {
            uint32_t word[kSavedConditions] = {};
            for (int64_t i = w * 32; i < std::min(n, w * 32 + 32); ++i) {
              out_p[i] = static_cast<out_t>(forward<acc_t>(static_cast<acc_t>(data.x[i])));
              word[0] |= uint32_t(bool(condition_0<acc_t>(static_cast<acc_t>(data.x[i]))))
                         << (i % 32);
            }
            for (int c = 0; c < kSavedConditions; ++c) mask_p[c * n_words + w] = word[c];
          }
        });
      }));
  return {call.out, call.mask};
}

at::Tensor backward_cpu(const at::Tensor& grad, const at::Tensor& mask, const Scalars<double>& s) {
  const BackwardCall call = prepare_backward(grad, mask);
  const int64_t n_words = words(call.n);
  AT_DISPATCH_SWITCH(
      grad.scalar_type(), "relu_backward_from_mask_cpu", RELU_DISPATCH_CASES([&] {
        using acc_t = at::opmath_type<scalar_t>;
        const scalar_t* grad_p = call.grad.const_data_ptr<scalar_t>();
        const int64_t grad_step = call.grad_step;
        const uint32_t* mask_p = bits(mask);
        const Grads<scalar_t*> grads_p{call.grads.x.mutable_data_ptr<scalar_t>()};
        at::parallel_for(0, call.n, kCpuGrain, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) {
            const acc_t g = static_cast<acc_t>(grad_p[i * grad_step]);
            const bool condition_0 = (mask_p[0 * n_words + i / 32] >> (i % 32)) & 1u;
            grads_p.x[i] = static_cast<scalar_t>(grad_from_conditions_wrt_x<acc_t>(g, condition_0));
          }
        });
      }));
  const Grads<at::Tensor>& grads = call.grads;
  return grads.x;
}

#ifdef WITH_CUDA
std::tuple<at::Tensor, at::Tensor> forward_cuda(const Tensors<const at::Tensor&>& in,
                                                const Scalars<double>& s) {
  const c10::cuda::CUDAGuard device_guard(in.x.device());
  ForwardCall call = prepare_forward(in);
  if (call.n == 0) return {call.out, call.mask};
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_SWITCH(
      in.x.scalar_type(), "relu_forward_saving_mask_cuda", RELU_DISPATCH_CASES([&] {
        using out_t = scalar_t;
        const Tensors<const CudaScalar<scalar_t>*> data{cuda_data<scalar_t>(call.dense.x)};
        uint32_t* mask_p = reinterpret_cast<uint32_t*>(call.mask.mutable_data_ptr<int32_t>());
        C10_CUDA_CHECK(launch_forward_saving_mask(data, cuda_mutable_data<out_t>(call.out), mask_p,
                                                  call.n, s, stream));
      }));
  return {call.out, call.mask};
}

at::Tensor backward_cuda(const at::Tensor& grad, const at::Tensor& mask, const Scalars<double>& s) {
  const c10::cuda::CUDAGuard device_guard(grad.device());
  BackwardCall call = prepare_backward(grad, mask);
  const Grads<at::Tensor>& grads = call.grads;
  if (call.n == 0) return grads.x;
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_SWITCH(
      grad.scalar_type(), "relu_backward_from_mask_cuda", RELU_DISPATCH_CASES([&] {
        const Grads<CudaScalar<scalar_t>*> grads_p{cuda_mutable_data<scalar_t>(call.grads.x)};
        C10_CUDA_CHECK(launch_backward_from_mask(cuda_data<scalar_t>(call.grad), call.grad_step,
                                                 bits(mask), grads_p, call.n, s, stream));
      }));
  return grads.x;
}
#endif  // WITH_CUDA

}  // namespace mask

// The functions the dispatcher calls, with the arguments one by one in the schema's order.
at::Tensor forward_cpu(const at::Tensor& x) { return cpu::forward_impl({x}, {}); }

at::Tensor backward_cpu(const at::Tensor& grad, const at::Tensor& x) {
  return cpu::backward_impl(grad, {x}, {});
}

#ifdef WITH_CUDA
at::Tensor forward_cuda(const at::Tensor& x) { return cuda::forward_impl({x}, {}); }

at::Tensor backward_cuda(const at::Tensor& grad, const at::Tensor& x) {
  return cuda::backward_impl(grad, {x}, {});
}
#endif  // WITH_CUDA

std::tuple<at::Tensor, at::Tensor> forward_saving_mask_cpu(const at::Tensor& x) {
  return mask::forward_cpu({x}, {});
}

at::Tensor backward_from_mask_cpu(const at::Tensor& grad, const at::Tensor& mask) {
  return mask::backward_cpu(grad, mask, {});
}

#ifdef WITH_CUDA
std::tuple<at::Tensor, at::Tensor> forward_saving_mask_cuda(const at::Tensor& x) {
  return mask::forward_cuda({x}, {});
}

at::Tensor backward_from_mask_cuda(const at::Tensor& grad, const at::Tensor& mask) {
  return mask::backward_cuda(grad, mask, {});
}
#endif  // WITH_CUDA
}  // namespace

TORCH_LIBRARY_IMPL(relu, CPU, m) {
  m.impl("relu", &forward_cpu);
  m.impl("relu_backward", &backward_cpu);
  m.impl("relu_forward_saving_mask", &forward_saving_mask_cpu);
  m.impl("relu_backward_from_mask", &backward_from_mask_cpu);
}

#ifdef WITH_CUDA
TORCH_LIBRARY_IMPL(relu, CUDA, m) {
  m.impl("relu", &forward_cuda);
  m.impl("relu_backward", &backward_cuda);
  m.impl("relu_forward_saving_mask", &forward_saving_mask_cuda);
  m.impl("relu_backward_from_mask", &backward_from_mask_cuda);
}
#endif

}  // namespace relu
