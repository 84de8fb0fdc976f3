// fused_axpby_autograd.cpp: autograd for fused_axpby: the forward op records a node whose
// backward calls fused_axpby_backward, both through the dispatcher.
//
// In C++ rather than with torch.library.register_autograd: a Python autograd kernel runs
// on every call, with or without gradients, and adds microseconds of Python to each one,
// as much as a small op's whole kernel time. This one is C++ end to end.
// A file of its own because the autograd headers are heavy: it compiles beside the
// kernels, and editing the glue in csrc/fused_axpby.cpp does not recompile it.
#include <ATen/ExpandUtils.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/library.h>

#include <tuple>
#include <vector>
namespace fused_axpby {
namespace {

// The ops of csrc/fused_axpby.cpp, called with their arguments in the schema's order
// below autograd: the calls reach the CPU or CUDA kernel, not this file again.
namespace kernels {

template <typename... Args>
at::Tensor forward(const Args&... args) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("several_ops::fused_axpby", "")
                             .typed<at::Tensor(double, const at::Tensor&, const at::Tensor&)>();
  const at::AutoDispatchBelowADInplaceOrView below_autograd;
  return op.call(args...);
}

// The backward op with autograd: called so from a backward pass, it records itself when
// that pass builds a graph (create_graph=True).
const auto& backward_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("several_ops::fused_axpby_backward", "")
                             .typed<at::Tensor(const at::Tensor&, double)>();
  return op;
}

template <typename... Args>
at::Tensor backward(const Args&... args) {
  const at::AutoDispatchBelowADInplaceOrView below_autograd;
  return backward_op().call(args...);
}

}  // namespace kernels

// A gradient of the output's shape summed back to its input's shape where the input
// broadcast (a bias (C,) added to (N, C): summed over N), as PyTorch's own ops do.
at::Tensor sum_to_shape(const at::Tensor& grad, const c10::IValue& shape) {
  const std::vector<c10::SymInt> sizes = shape.toSymIntVector();
  return grad.sym_sizes().equals(sizes) ? grad : at::sum_to(grad, sizes);
}

// fused_axpby's arguments by name, for the autograd function below.
struct Arguments {
  double a;
  const at::Tensor& x;
  const at::Tensor& b;
};

class FusedAxpbyFunction : public torch::autograd::Function<FusedAxpbyFunction> {
 public:
  // The arguments by name, then the tensors among them again, one by one: apply()
  // connects to the graph the tensors it is passed.
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const Arguments& args,
                            const at::Tensor& /*x*/, const at::Tensor& /*b*/) {
    ctx->saved_data["a"] = args.a;
    // The shapes the gradients are summed back to where an input broadcast (keys with a
    // space: no argument's name).
    ctx->saved_data["shape of x"] = args.x.sym_sizes();
    ctx->saved_data["shape of b"] = args.b.sym_sizes();
    return kernels::forward(args.a, args.x, args.b);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const at::Tensor g = kernels::backward_op().call(grads[0], ctx->saved_data["a"].toDouble());
    // One gradient per argument of forward: none for args, then one per tensor; b gets grad itself.
    return {at::Tensor(), sum_to_shape(g, ctx->saved_data["shape of x"]),
            sum_to_shape(grads[0], ctx->saved_data["shape of b"])};
  }
};

// The backward op differentiated again (torch.autograd.grad(..., create_graph=True), hessian,
// gradgradcheck): its formulas have no derivative here, so that second backward raises
// instead of returning zeros.
class FusedAxpbyFunctionBackward : public torch::autograd::Function<FusedAxpbyFunctionBackward> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext*,
                                                const at::Tensor& grad, double a) {
    return {kernels::backward(grad, a)};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list) {
    TORCH_CHECK(false,
                "fused_axpby is differentiable once: its backward, fused_axpby_backward, has no "
                "derivative, so double backward (create_graph=True, hessian, gradgradcheck) is "
                "not supported");
  }
};

// The functions the dispatcher calls, with the arguments one by one in the schema's order.
at::Tensor forward_autograd(double a, const at::Tensor& x, const at::Tensor& b) {
  // Nothing to record (no input requires grad, or grad mode is off): straight to the
  // kernel, as torch's own ops do. Function::apply would build a node and throw it away,
  // which took 0.75 us of a 2.6 us call on small CPU tensors. A forward-mode tangent
  // goes to apply, whose error says forward AD is not implemented.
  if (!torch::autograd::compute_requires_grad(x, b) && !x._fw_grad(/*level=*/0).defined() &&
      !b._fw_grad(/*level=*/0).defined()) {
    return kernels::forward(a, x, b);
  }
  return FusedAxpbyFunction::apply(Arguments{a, x, b}, x, b);
}

at::Tensor backward_autograd(const at::Tensor& grad, double a) {
  // The usual backward pass runs with grad mode off: straight to the kernel.
  if (!torch::autograd::compute_requires_grad(grad)) {
    return kernels::backward(grad, a);
  }
  return FusedAxpbyFunctionBackward::apply(grad, a)[0];
}

}  // namespace

TORCH_LIBRARY_IMPL(several_ops, Autograd, m) {
  m.impl("fused_axpby", &forward_autograd);
  m.impl("fused_axpby_backward", &backward_autograd);
}

}  // namespace fused_axpby
