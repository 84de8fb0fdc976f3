// relu_autograd.cpp: autograd for relu: the forward op records a node whose
// backward calls relu_backward, both through the dispatcher.
//
// In C++ rather than with torch.library.register_autograd: a Python autograd kernel runs
// on every call, with or without gradients, and adds microseconds of Python to each one,
// as much as a small op's whole kernel time. This one is C++ end to end.
// A file of its own because the autograd headers are heavy: it compiles beside the
// kernels, and editing the glue in csrc/relu.cpp does not recompile it.
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/library.h>

#include <tuple>

namespace relu {
namespace {

// The ops of csrc/relu.cpp, looked up once; calls go below autograd to the CPU or
// CUDA kernel.
at::Tensor call_forward(const at::Tensor& x) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("relu::relu", "")
                             .typed<at::Tensor(const at::Tensor&)>();
  return op.call(x);
}

at::Tensor call_backward(const at::Tensor& grad, const at::Tensor& x) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("relu::relu_backward", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
  return op.call(grad, x);
}

class relu_function : public torch::autograd::Function<relu_function> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x) {
    // Below autograd: the call reaches the CPU or CUDA kernel, not this function again.
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    ctx->save_for_backward({x});
    return call_forward(x);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    at::Tensor grad_x = call_backward(grads[0], saved[0]);
    // One gradient per argument of forward, in order.
    return {grad_x};
  }
};
at::Tensor forward_autograd(const at::Tensor& x) {
  // Nothing to record (no input requires grad, or grad mode is off): straight to the
  // kernel, as torch's own ops do. Function::apply would build a node and throw it away,
  // which took 0.75 us of a 2.6 us call on small CPU tensors. A forward-mode tangent
  // goes to apply, whose error says forward AD is not implemented.
  if (!torch::autograd::compute_requires_grad(x) && !x._fw_grad(/*level=*/0).defined()) {
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return call_forward(x);
  }
  return relu_function::apply(x);
}

// The backward op differentiated again (torch.autograd.grad(..., create_graph=True), hessian,
// gradgradcheck): its formulas have no derivative here, so that second backward raises
// instead of returning zeros.
class relu_backward_function : public torch::autograd::Function<relu_backward_function> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const at::Tensor& grad, const at::Tensor& x) {
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return {call_backward(grad, x)};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    TORCH_CHECK(false,
                "relu is differentiable once: its backward, relu_backward, has no "
                "derivative, so double backward (create_graph=True, hessian, gradgradcheck) is "
                "not supported");
  }
};

at::Tensor backward_autograd(const at::Tensor& grad, const at::Tensor& x) {
  // The usual backward pass runs with grad mode off: straight to the kernel.
  if (!torch::autograd::compute_requires_grad(grad, x)) {
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return call_backward(grad, x);
  }
  const torch::autograd::variable_list outputs = relu_backward_function::apply(grad, x);
  return outputs[0];
}

}  // namespace

TORCH_LIBRARY_IMPL(relu, Autograd, m) {
  m.impl("relu", &forward_autograd);
  m.impl("relu_backward", &backward_autograd);
}

}  // namespace relu
