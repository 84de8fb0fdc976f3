// matmul_autograd.cpp: autograd for matmul: the forward op records a node whose
// backward calls matmul_backward, both through the dispatcher.
//
// In C++ rather than with torch.library.register_autograd: a Python autograd kernel runs
// on every call, with or without gradients, and adds microseconds of Python to each one,
// as much as a small op's whole kernel time. This one is C++ end to end.
// A file of its own because the autograd headers are heavy: it compiles beside the
// kernels, and editing the glue in csrc/matmul.cpp does not recompile it.
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/library.h>

#include <tuple>

namespace matmul {
namespace {

// The ops of csrc/matmul.cpp, looked up once; calls go below autograd to the CPU or
// CUDA kernel.
at::Tensor call_forward(const at::Tensor& a, const at::Tensor& b) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("several_ops::matmul", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
  return op.call(a, b);
}

std::tuple<at::Tensor, at::Tensor> call_backward(const at::Tensor& grad, const at::Tensor& a,
                                                 const at::Tensor& b) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("several_ops::matmul_backward", "")
                             .typed<std::tuple<at::Tensor, at::Tensor>(
                                 const at::Tensor&, const at::Tensor&, const at::Tensor&)>();
  return op.call(grad, a, b);
}

class matmul_function : public torch::autograd::Function<matmul_function> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& a,
                            const at::Tensor& b) {
    // Below autograd: the call reaches the CPU or CUDA kernel, not this function again.
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    ctx->save_for_backward({a, b});
    return call_forward(a, b);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    auto [grad_a, grad_b] = call_backward(grads[0], saved[0], saved[1]);
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
  return matmul_function::apply(a, b);
}

// The backward op differentiated again (torch.autograd.grad(..., create_graph=True), hessian,
// gradgradcheck): its formulas have no derivative here, so that second backward raises
// instead of returning zeros.
class matmul_backward_function : public torch::autograd::Function<matmul_backward_function> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const at::Tensor& grad, const at::Tensor& a,
                                                const at::Tensor& b) {
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    auto [grad_a, grad_b] = call_backward(grad, a, b);
    return {grad_a, grad_b};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    TORCH_CHECK(false,
                "matmul is differentiable once: its backward, matmul_backward, has no "
                "derivative, so double backward (create_graph=True, hessian, gradgradcheck) is "
                "not supported");
  }
};

std::tuple<at::Tensor, at::Tensor> backward_autograd(const at::Tensor& grad, const at::Tensor& a,
                                                     const at::Tensor& b) {
  // The usual backward pass runs with grad mode off: straight to the kernel.
  if (!torch::autograd::compute_requires_grad(grad, a, b)) {
    const at::AutoDispatchBelowADInplaceOrView below_autograd;
    return call_backward(grad, a, b);
  }
  const torch::autograd::variable_list outputs = matmul_backward_function::apply(grad, a, b);
  return {outputs[0], outputs[1]};
}

}  // namespace

TORCH_LIBRARY_IMPL(several_ops, Autograd, m) {
  m.impl("matmul", &forward_autograd);
  m.impl("matmul_backward", &backward_autograd);
}

}  // namespace matmul
