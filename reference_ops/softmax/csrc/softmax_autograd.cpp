// softmax_autograd.cpp: autograd for softmax: the forward op records a node whose
// backward calls softmax_backward, both through the dispatcher.
//
// In C++ rather than with torch.library.register_autograd: a Python autograd kernel runs
// on every call, with or without gradients, and adds microseconds of Python to each one,
// as much as a small op's whole kernel time. This one is C++ end to end.
// A file of its own because the autograd headers are heavy: it compiles beside the
// kernels, and editing the glue in csrc/softmax.cpp does not recompile it.
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/library.h>

#include <tuple>
namespace softmax {
namespace {

// The ops of csrc/softmax.cpp, called with their arguments in the schema's order
// below autograd: the calls reach the CPU or CUDA kernel, not this file again.
namespace kernels {

template <typename... Args>
at::Tensor forward(const Args&... args) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("softmax::softmax", "")
                             .typed<at::Tensor(const at::Tensor&)>();
  const at::AutoDispatchBelowADInplaceOrView below_autograd;
  return op.call(args...);
}

// The backward op with autograd: called so from a backward pass, it records itself when
// that pass builds a graph (create_graph=True).
const auto& backward_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("softmax::softmax_backward", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
  return op;
}

template <typename... Args>
at::Tensor backward(const Args&... args) {
  const at::AutoDispatchBelowADInplaceOrView below_autograd;
  return backward_op().call(args...);
}

}  // namespace kernels

// softmax's arguments by name, for the autograd function below.
struct Arguments {
  const at::Tensor& x;
};

class SoftmaxFunction : public torch::autograd::Function<SoftmaxFunction> {
 public:
  // The arguments by name, then the tensors among them again, one by one: apply()
  // connects to the graph the tensors it is passed.
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const Arguments& args,
                            const at::Tensor& /*x*/) {
    // The backward reads the output (y), not the inputs.
    at::Tensor out = kernels::forward(args.x);
    ctx->save_for_backward({out});
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const at::Tensor g = kernels::backward_op().call(grads[0], saved[0]);
    // One gradient per argument of forward: none for args, then one per tensor.
    return {at::Tensor(), g};
  }
};

// The backward op differentiated again (torch.autograd.grad(..., create_graph=True), hessian,
// gradgradcheck): its formulas have no derivative here, so that second backward raises
// instead of returning zeros.
class SoftmaxFunctionBackward : public torch::autograd::Function<SoftmaxFunctionBackward> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext*,
                                                const at::Tensor& grad, const at::Tensor& y) {
    return {kernels::backward(grad, y)};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list) {
    TORCH_CHECK(false,
                "softmax is differentiable once: its backward, softmax_backward, has no "
                "derivative, so double backward (create_graph=True, hessian, gradgradcheck) is "
                "not supported");
  }
};

// The functions the dispatcher calls, with the arguments one by one in the schema's order.
at::Tensor forward_autograd(const at::Tensor& x) {
  // Nothing to record (no input requires grad, or grad mode is off): straight to the
  // kernel, as torch's own ops do. Function::apply would build a node and throw it away,
  // which took 0.75 us of a 2.6 us call on small CPU tensors. A forward-mode tangent
  // goes to apply, whose error says forward AD is not implemented.
  if (!torch::autograd::compute_requires_grad(x) && !x._fw_grad(/*level=*/0).defined()) {
    return kernels::forward(x);
  }
  return SoftmaxFunction::apply(Arguments{x}, x);
}

at::Tensor backward_autograd(const at::Tensor& grad, const at::Tensor& y) {
  // The usual backward pass runs with grad mode off: straight to the kernel.
  if (!torch::autograd::compute_requires_grad(grad, y)) {
    return kernels::backward(grad, y);
  }
  return SoftmaxFunctionBackward::apply(grad, y)[0];
}

}  // namespace

TORCH_LIBRARY_IMPL(softmax, Autograd, m) {
  m.impl("softmax", &forward_autograd);
  m.impl("softmax_backward", &backward_autograd);
}

}  // namespace softmax
