// vector_add_autograd.cpp: autograd for vector_add: the forward op records a node whose
// backward calls vector_add_backward, both through the dispatcher.
//
// In C++ rather than with torch.library.register_autograd: a Python autograd kernel runs
// on every call, with or without gradients, and adds microseconds of Python to each one,
// as much as a small op's whole kernel time. This one is C++ end to end.
// A file of its own because the autograd headers are heavy: it compiles beside the
// kernels, and editing the glue in csrc/vector_add.cpp does not recompile it.
#include <ATen/ExpandUtils.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/library.h>

#include <tuple>
#include <vector>
namespace vector_add {
namespace {

// The ops of csrc/vector_add.cpp, called with their arguments in the schema's order
// below autograd: the calls reach the CPU or CUDA kernel, not this file again.
namespace kernels {

template <typename... Args>
at::Tensor forward(const Args&... args) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("vector_add::vector_add", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
  const at::AutoDispatchBelowADInplaceOrView below_autograd;
  return op.call(args...);
}

// The backward op with autograd: called so from a backward pass, it records itself when
// that pass builds a graph (create_graph=True).
const auto& backward_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("vector_add::vector_add_backward", "")
                             .typed<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&)>();
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

// vector_add's arguments by name, for the autograd function below.
struct Arguments {
  const at::Tensor& a;
  const at::Tensor& b;
};

class VectorAddFunction : public torch::autograd::Function<VectorAddFunction> {
 public:
  // The arguments by name, then the tensors among them again, one by one: apply()
  // connects to the graph the tensors it is passed.
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const Arguments& args,
                            const at::Tensor& /*a*/, const at::Tensor& /*b*/) {
    // The shapes the gradients are summed back to where an input broadcast (keys with a
    // space: no argument's name).
    ctx->saved_data["shape of a"] = args.a.sym_sizes();
    ctx->saved_data["shape of b"] = args.b.sym_sizes();
    return kernels::forward(args.a, args.b);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const std::tuple<at::Tensor, at::Tensor> g = kernels::backward_op().call(grads[0]);
    // One gradient per argument of forward: none for args, then one per tensor.
    return {at::Tensor(), sum_to_shape(std::get<0>(g), ctx->saved_data["shape of a"]),
            sum_to_shape(std::get<1>(g), ctx->saved_data["shape of b"])};
  }
};

// The backward op differentiated again (torch.autograd.grad(..., create_graph=True), hessian,
// gradgradcheck): its formulas have no derivative here, so that second backward raises
// instead of returning zeros.
class VectorAddFunctionBackward : public torch::autograd::Function<VectorAddFunctionBackward> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext*,
                                                const at::Tensor& grad) {
    return kernels::as_list(kernels::backward(grad));
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list) {
    TORCH_CHECK(false,
                "vector_add is differentiable once: its backward, vector_add_backward, has no "
                "derivative, so double backward (create_graph=True, hessian, gradgradcheck) is "
                "not supported");
  }
};

// The functions the dispatcher calls, with the arguments one by one in the schema's order.
at::Tensor forward_autograd(const at::Tensor& a, const at::Tensor& b) {
  // Nothing to record (no input requires grad, or grad mode is off): straight to the
  // kernel, as torch's own ops do. Function::apply would build a node and throw it away,
  // which took 0.75 us of a 2.6 us call on small CPU tensors. A forward-mode tangent
  // goes to apply, whose error says forward AD is not implemented.
  if (!torch::autograd::compute_requires_grad(a, b) && !a._fw_grad(/*level=*/0).defined() &&
      !b._fw_grad(/*level=*/0).defined()) {
    return kernels::forward(a, b);
  }
  return VectorAddFunction::apply(Arguments{a, b}, a, b);
}

std::tuple<at::Tensor, at::Tensor> backward_autograd(const at::Tensor& grad) {
  // The usual backward pass runs with grad mode off: straight to the kernel.
  if (!torch::autograd::compute_requires_grad(grad)) {
    return kernels::backward(grad);
  }
  return kernels::as_tuple(VectorAddFunctionBackward::apply(grad));
}

}  // namespace

TORCH_LIBRARY_IMPL(vector_add, Autograd, m) {
  m.impl("vector_add", &forward_autograd);
  m.impl("vector_add_backward", &backward_autograd);
}

}  // namespace vector_add
