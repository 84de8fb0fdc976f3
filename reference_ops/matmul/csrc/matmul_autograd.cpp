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

// The ops of csrc/matmul.cpp, called with their arguments in the schema's order
// below autograd: the calls reach the CPU or CUDA kernel, not this file again.
namespace kernels {

template <typename... Args>
at::Tensor forward(const Args&... args) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("matmul::matmul", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
  const at::AutoDispatchBelowADInplaceOrView below_autograd;
  return op.call(args...);
}

// The backward op with autograd: called so from a backward pass, it records itself when
// that pass builds a graph (create_graph=True).
const auto& backward_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("matmul::matmul_backward", "")
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

// matmul's arguments by name, for the autograd function below.
struct Arguments {
  const at::Tensor& a;
  const at::Tensor& b;
};

class MatmulFunction : public torch::autograd::Function<MatmulFunction> {
 public:
  // The arguments by name, then the tensors among them again, one by one: apply()
  // connects to the graph the tensors it is passed.
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const Arguments& args,
                            const at::Tensor& /*a*/, const at::Tensor& /*b*/) {
    ctx->save_for_backward({args.a, args.b});
    return kernels::forward(args.a, args.b);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const std::tuple<at::Tensor, at::Tensor> g =
        kernels::backward_op().call(grads[0], saved[0], saved[1]);
    // One gradient per argument of forward: none for args, then one per tensor.
    return {at::Tensor(), std::get<0>(g), std::get<1>(g)};
  }
};

// The backward op differentiated again (torch.autograd.grad(..., create_graph=True), hessian,
// gradgradcheck): its formulas have no derivative here, so that second backward raises
// instead of returning zeros.
class MatmulFunctionBackward : public torch::autograd::Function<MatmulFunctionBackward> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext*,
                                                const at::Tensor& grad, const at::Tensor& a,
                                                const at::Tensor& b) {
    return kernels::as_list(kernels::backward(grad, a, b));
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list) {
    TORCH_CHECK(false,
                "matmul is differentiable once: its backward, matmul_backward, has no "
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
  return MatmulFunction::apply(Arguments{a, b}, a, b);
}

std::tuple<at::Tensor, at::Tensor> backward_autograd(const at::Tensor& grad, const at::Tensor& a,
                                                     const at::Tensor& b) {
  // The usual backward pass runs with grad mode off: straight to the kernel.
  if (!torch::autograd::compute_requires_grad(grad, a, b)) {
    return kernels::backward(grad, a, b);
  }
  return kernels::as_tuple(MatmulFunctionBackward::apply(grad, a, b));
}

}  // namespace

TORCH_LIBRARY_IMPL(matmul, Autograd, m) {
  m.impl("matmul", &forward_autograd);
  m.impl("matmul_backward", &backward_autograd);
}

}  // namespace matmul
