// fused_axpby_autograd.cpp: autograd for fused_axpby: the forward op records a node whose
// backward calls fused_axpby_backward, both through the dispatcher.
//
// In C++ rather than with torch.library.register_autograd: a Python autograd kernel runs
// on every call, with or without gradients, and adds microseconds of Python to each one,
// as much as a small op's whole kernel time. This one is C++ end to end.
// A file of its own because the autograd headers are heavy: it compiles beside the
// kernels, and editing the glue in csrc/fused_axpby.cpp does not recompile it.
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/library.h>

#include <tuple>

namespace fused_axpby {
namespace {

// The ops of csrc/fused_axpby.cpp, looked up once; calls go below autograd to the CPU or
// CUDA kernel.
at::Tensor call_forward(double a, const at::Tensor& x, const at::Tensor& b) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("several_ops::fused_axpby", "")
                             .typed<at::Tensor(double, const at::Tensor&, const at::Tensor&)>();
  return op.call(a, x, b);
}

std::tuple<at::Tensor, at::Tensor> call_backward(const at::Tensor& grad, double a) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("several_ops::fused_axpby_backward", "")
          .typed<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, double)>();
  return op.call(grad, a);
}

class fused_axpby_function : public torch::autograd::Function<fused_axpby_function> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, double a, const at::Tensor& x,
                            const at::Tensor& b) {
    // Below autograd: the call reaches the CPU or CUDA kernel, not this function again.
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    ctx->saved_data["a"] = a;
    return call_forward(a, x, b);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto [grad_x, grad_b] = call_backward(grads[0], ctx->saved_data["a"].toDouble());
    // One gradient per argument of forward, in order; none for a.
    return {at::Tensor(), grad_x, grad_b};
  }
};
at::Tensor forward_autograd(double a, const at::Tensor& x, const at::Tensor& b) {
  // Nothing to record (no input requires grad, or grad mode is off): straight to the
  // kernel, as torch's own ops do. Function::apply would build a node and throw it away,
  // which took 0.75 us of a 2.6 us call on small CPU tensors. A forward-mode tangent
  // goes to apply, whose error says forward AD is not implemented.
  if (!torch::autograd::compute_requires_grad(x, b) && !x._fw_grad(/*level=*/0).defined() &&
      !b._fw_grad(/*level=*/0).defined()) {
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return call_forward(a, x, b);
  }
  return fused_axpby_function::apply(a, x, b);
}

// The backward op differentiated again (torch.autograd.grad(..., create_graph=True), hessian,
// gradgradcheck): its formulas have no derivative here, so that second backward raises
// instead of returning zeros.
class fused_axpby_backward_function
    : public torch::autograd::Function<fused_axpby_backward_function> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const at::Tensor& grad, double a) {
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    auto [grad_x, grad_b] = call_backward(grad, a);
    return {grad_x, grad_b};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    TORCH_CHECK(false,
                "fused_axpby is differentiable once: its backward, fused_axpby_backward, has no "
                "derivative, so double backward (create_graph=True, hessian, gradgradcheck) is "
                "not supported");
  }
};

std::tuple<at::Tensor, at::Tensor> backward_autograd(const at::Tensor& grad, double a) {
  // The usual backward pass runs with grad mode off: straight to the kernel.
  if (!torch::autograd::compute_requires_grad(grad)) {
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return call_backward(grad, a);
  }
  const torch::autograd::variable_list outputs = fused_axpby_backward_function::apply(grad, a);
  return {outputs[0], outputs[1]};
}

}  // namespace

TORCH_LIBRARY_IMPL(several_ops, Autograd, m) {
  m.impl("fused_axpby", &forward_autograd);
  m.impl("fused_axpby_backward", &backward_autograd);
}

}  // namespace fused_axpby
