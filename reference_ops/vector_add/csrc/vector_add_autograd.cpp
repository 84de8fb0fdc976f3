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
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& a,
                            const at::Tensor& b) {
    // Below autograd: the call reaches the CPU or CUDA kernel, not this function again.
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return call_forward(a, b);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto [grad_a, grad_b] = call_backward(grads[0]);
    // One gradient per argument of forward, in order.
    return {grad_a, grad_b};
  }
};
at::Tensor forward_autograd(const at::Tensor& a, const at::Tensor& b) {
  // Nothing to record (no input requires grad, or grad mode is off): straight to the
  // kernel, as torch's own ops do. Function::apply would build a node and throw it away,
  // which took 0.75 us of a 2.6 us call on small CPU tensors. A forward-mode tangent
  // goes to apply, whose error says forward AD is not implemented.
  if (!torch::autograd::compute_requires_grad(a, b) && !a._fw_grad(/*level=*/0).defined() &&
      !b._fw_grad(/*level=*/0).defined()) {
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return call_forward(a, b);
  }
  return vector_add_function::apply(a, b);
}

// The backward op differentiated again (torch.autograd.grad(..., create_graph=True), hessian,
// gradgradcheck): its formulas have no derivative here, so that second backward raises
// instead of returning zeros.
class vector_add_backward_function
    : public torch::autograd::Function<vector_add_backward_function> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const at::Tensor& grad) {
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    auto [grad_a, grad_b] = call_backward(grad);
    return {grad_a, grad_b};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    TORCH_CHECK(false,
                "vector_add is differentiable once: its backward, vector_add_backward, has no "
                "derivative, so double backward (create_graph=True, hessian, gradgradcheck) is "
                "not supported");
  }
};

std::tuple<at::Tensor, at::Tensor> backward_autograd(const at::Tensor& grad) {
  // The usual backward pass runs with grad mode off: straight to the kernel.
  if (!torch::autograd::compute_requires_grad(grad)) {
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return call_backward(grad);
  }
  const torch::autograd::variable_list outputs = vector_add_backward_function::apply(grad);
  return {outputs[0], outputs[1]};
}

}  // namespace

TORCH_LIBRARY_IMPL(vector_add, Autograd, m) {
  m.impl("vector_add", &forward_autograd);
  m.impl("vector_add_backward", &backward_autograd);
}

}  // namespace vector_add
