// vector_add_autograd.cpp: autograd for vector_add: the forward op records a node whose
// backward calls vector_add_backward, both through the dispatcher.
//
// In C++ rather than with torch.library.register_autograd: a Python autograd kernel runs
// on every call, with or without gradients, and adds microseconds of Python to each one,
// as much as a small op's whole kernel time. This one is C++ end to end.
// A file of its own because the autograd headers are heavy: it compiles beside the
// kernels, and editing the glue in csrc/vector_add.cpp does not recompile it.
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/library.h>

#include <tuple>

namespace vector_add {
namespace {

// The ops of csrc/vector_add.cpp, looked up once; calls go below autograd to the CPU or
// CUDA kernel.
at::Tensor call_forward(const at::Tensor& a, const at::Tensor& b) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("vector_add::vector_add", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
  return op.call(a, b);
}

std::tuple<at::Tensor, at::Tensor> call_backward(const at::Tensor& grad) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("vector_add::vector_add_backward", "")
                             .typed<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&)>();
  return op.call(grad);
}

class vector_add_function : public torch::autograd::Function<vector_add_function> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& a, const at::Tensor& b) {
    // Below autograd: the call reaches the CPU or CUDA kernel, not this function again.
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return call_forward(a, b);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto [grad_a, grad_b] =
        call_backward(grads[0]);
    // One gradient per argument of forward, in order.
    return {grad_a, grad_b};
  }
};
at::Tensor forward_autograd(const at::Tensor& a, const at::Tensor& b) {
  // Nothing to record (no input requires grad, or grad mode is off): straight to the
  // kernel, as torch's own ops do. Function::apply would build a node and throw it away,
  // which took 0.75 us of a 2.6 us call on small CPU tensors. A forward-mode tangent
  // goes to apply, whose error says forward AD is not implemented.
  if (!torch::autograd::compute_requires_grad(a, b) &&
      !a._fw_grad(/*level=*/0).defined() &&
      !b._fw_grad(/*level=*/0).defined()) {
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return call_forward(a, b);
  }
  return vector_add_function::apply(a, b);
}

}  // namespace

TORCH_LIBRARY_IMPL(vector_add, Autograd, m) { m.impl("vector_add", &forward_autograd); }

}  // namespace vector_add
