// silu_mul_autograd.cpp: autograd for silu_mul: the forward op records a node whose
// backward calls silu_mul_backward, both through the dispatcher.
//
// In C++ rather than with torch.library.register_autograd: a Python autograd kernel runs
// on every call, with or without gradients, and adds microseconds of Python to each one,
// as much as a small op's whole kernel time. This one is C++ end to end.
// A file of its own because the autograd headers are heavy: it compiles beside the
// kernels, and editing the glue in csrc/silu_mul.cpp does not recompile it.
#include <ATen/ExpandUtils.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/library.h>

#include <tuple>
#include <vector>
namespace silu_mul {
namespace {

// The ops of csrc/silu_mul.cpp, called with their arguments in the schema's order
// below autograd: the calls reach the CPU or CUDA kernel, not this file again.
namespace kernels {

template <typename... Args>
at::Tensor forward(const Args&... args) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("silu_mul::silu_mul", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
  const at::AutoDispatchBelowADInplaceOrView below_autograd;
  return op.call(args...);
}

// The backward op with autograd: called so from a backward pass, it records itself when
// that pass builds a graph (create_graph=True).
const auto& backward_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("silu_mul::silu_mul_backward", "")
                             .typed<std::tuple<at::Tensor, at::Tensor>(
                                 const at::Tensor&, const at::Tensor&, const at::Tensor&)>();
  return op;
}

template <typename... Args>
std::tuple<at::Tensor, at::Tensor> backward(const Args&... args) {
  const at::AutoDispatchBelowADInplaceOrView below_autograd;
  return backward_op().call(args...);
}

// The gradients as the autograd functions return them, and back.
torch::autograd::variable_list as_list(const std::tuple<at::Tensor, at::Tensor>& grads) {
  return {std::get<0>(grads), std::get<1>(grads)};
}

std::tuple<at::Tensor, at::Tensor> as_tuple(const torch::autograd::variable_list& grads) {
  return {grads[0], grads[1]};
}

}  // namespace kernels

// A gradient of the output's shape summed back to its input's shape where the input
// broadcast (a bias (C,) added to (N, C): summed over N), as PyTorch's own ops do.
at::Tensor sum_to_shape(const at::Tensor& grad, const c10::IValue& shape) {
  const std::vector<c10::SymInt> sizes = shape.toSymIntVector();
  return grad.sym_sizes().equals(sizes) ? grad : at::sum_to(grad, sizes);
}

// silu_mul's arguments by name, for the autograd function below.
struct Arguments {
  const at::Tensor& x;
  const at::Tensor& y;
};

class SiluMulFunction : public torch::autograd::Function<SiluMulFunction> {
 public:
  // The arguments by name, then the tensors among them again, one by one: apply()
  // connects to the graph the tensors it is passed.
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const Arguments& args,
                            const at::Tensor& /*x*/, const at::Tensor& /*y*/) {
    // The shapes the gradients are summed back to where an input broadcast (keys with a
    // space: no argument's name).
    ctx->saved_data["shape of x"] = args.x.sym_sizes();
    ctx->saved_data["shape of y"] = args.y.sym_sizes();
    ctx->save_for_backward({args.x, args.y});
    return kernels::forward(args.x, args.y);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const std::tuple<at::Tensor, at::Tensor> g =
        kernels::backward_op().call(grads[0], saved[0], saved[1]);
    // One gradient per argument of forward: none for args, then one per tensor.
    return {at::Tensor(), sum_to_shape(std::get<0>(g), ctx->saved_data["shape of x"]),
            sum_to_shape(std::get<1>(g), ctx->saved_data["shape of y"])};
  }
};

// The backward op differentiated again (torch.autograd.grad(..., create_graph=True), hessian,
// gradgradcheck): its formulas have no derivative here, so that second backward raises
// instead of returning zeros.
class SiluMulFunctionBackward : public torch::autograd::Function<SiluMulFunctionBackward> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext*,
                                                const at::Tensor& grad, const at::Tensor& x,
                                                const at::Tensor& y) {
    return kernels::as_list(kernels::backward(grad, x, y));
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list) {
    TORCH_CHECK(false,
                "silu_mul is differentiable once: its backward, silu_mul_backward, has no "
                "derivative, so double backward (create_graph=True, hessian, gradgradcheck) is "
                "not supported");
  }
};

// The functions the dispatcher calls, with the arguments one by one in the schema's order.
at::Tensor forward_autograd(const at::Tensor& x, const at::Tensor& y) {
  // Nothing to record (no input requires grad, or grad mode is off): straight to the
  // kernel, as torch's own ops do. Function::apply would build a node and throw it away,
  // which took 0.75 us of a 2.6 us call on small CPU tensors. A forward-mode tangent
  // goes to apply, whose error says forward AD is not implemented.
  if (!torch::autograd::compute_requires_grad(x, y) && !x._fw_grad(/*level=*/0).defined() &&
      !y._fw_grad(/*level=*/0).defined()) {
    return kernels::forward(x, y);
  }
  return SiluMulFunction::apply(Arguments{x, y}, x, y);
}

std::tuple<at::Tensor, at::Tensor> backward_autograd(const at::Tensor& grad, const at::Tensor& x,
                                                     const at::Tensor& y) {
  // The usual backward pass runs with grad mode off: straight to the kernel.
  if (!torch::autograd::compute_requires_grad(grad, x, y)) {
    return kernels::backward(grad, x, y);
  }
  return kernels::as_tuple(SiluMulFunctionBackward::apply(grad, x, y));
}

}  // namespace

TORCH_LIBRARY_IMPL(silu_mul, Autograd, m) {
  m.impl("silu_mul", &forward_autograd);
  m.impl("silu_mul_backward", &backward_autograd);
}

}  // namespace silu_mul
