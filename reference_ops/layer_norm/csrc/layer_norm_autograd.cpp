// layer_norm_autograd.cpp: autograd for layer_norm: the forward op records a node whose
// backward calls layer_norm_backward, both through the dispatcher.
//
// In C++ rather than with torch.library.register_autograd: a Python autograd kernel runs
// on every call, with or without gradients, and adds microseconds of Python to each one,
// as much as a small op's whole kernel time. This one is C++ end to end.
// A file of its own because the autograd headers are heavy: it compiles beside the
// kernels, and editing the glue in csrc/layer_norm.cpp does not recompile it.
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/library.h>

#include <tuple>
namespace layer_norm {
namespace {

// The ops of csrc/layer_norm.cpp, called with their arguments in the schema's order
// below autograd: the calls reach the CPU or CUDA kernel, not this file again.
namespace kernels {

template <typename... Args>
at::Tensor forward(const Args&... args) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("layer_norm::layer_norm", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, double)>();
  const at::AutoDispatchBelowADInplaceOrView below_autograd;
  return op.call(args...);
}

// The backward op with autograd: called so from a backward pass, it records itself when
// that pass builds a graph (create_graph=True).
const auto& backward_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("layer_norm::layer_norm_backward", "")
                             .typed<std::tuple<at::Tensor, at::Tensor, at::Tensor>(
                                 const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                 const at::Tensor&, const at::Tensor&, double)>();
  return op;
}

template <typename... Args>
std::tuple<at::Tensor, at::Tensor, at::Tensor> backward(const Args&... args) {
  const at::AutoDispatchBelowADInplaceOrView below_autograd;
  return backward_op().call(args...);
}

// The forward that also returns its reductions, which the backward reads instead of
// reducing the rows again (csrc/layer_norm.cpp).
std::tuple<at::Tensor, at::Tensor> forward_saving_reductions(const at::Tensor& x,
                                                             const at::Tensor& weight,
                                                             const at::Tensor& bias, double eps) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("layer_norm::layer_norm_forward_saving_reductions", "")
          .typed<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&,
                                                    const at::Tensor&, double)>();
  const at::AutoDispatchBelowADInplaceOrView below_autograd;
  return op.call(x, weight, bias, eps);
}

// The gradients as the autograd functions return them, and back.
torch::autograd::variable_list as_list(
    const std::tuple<at::Tensor, at::Tensor, at::Tensor>& grads) {
  return {std::get<0>(grads), std::get<1>(grads), std::get<2>(grads)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> as_tuple(
    const torch::autograd::variable_list& grads) {
  return {grads[0], grads[1], grads[2]};
}

}  // namespace kernels

// layer_norm's arguments by name, for the autograd function below.
struct Arguments {
  const at::Tensor& x;
  const at::Tensor& weight;
  const at::Tensor& bias;
  double eps;
};

class LayerNormFunction : public torch::autograd::Function<LayerNormFunction> {
 public:
  // The arguments by name, then the tensors among them again, one by one: apply()
  // connects to the graph the tensors it is passed.
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const Arguments& args,
                            const at::Tensor& /*x*/, const at::Tensor& /*weight*/,
                            const at::Tensor& /*bias*/) {
    ctx->saved_data["eps"] = args.eps;
    // The backward reads the inputs and the forward's reductions, one value a row each,
    // instead of reducing the rows again.
    auto [out, reductions] =
        kernels::forward_saving_reductions(args.x, args.weight, args.bias, args.eps);
    ctx->save_for_backward({args.x, args.weight, args.bias, reductions});
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const std::tuple<at::Tensor, at::Tensor, at::Tensor> g = kernels::backward_op().call(
        grads[0], saved[0], saved[1], saved[2], saved[3], ctx->saved_data["eps"].toDouble());
    // One gradient per argument of forward: none for args, then one per tensor.
    return {at::Tensor(), std::get<0>(g), std::get<1>(g), std::get<2>(g)};
  }
};

// The backward op differentiated again (torch.autograd.grad(..., create_graph=True), hessian,
// gradgradcheck): its formulas have no derivative here, so that second backward raises
// instead of returning zeros.
class LayerNormFunctionBackward : public torch::autograd::Function<LayerNormFunctionBackward> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext*,
                                                const at::Tensor& grad, const at::Tensor& x,
                                                const at::Tensor& weight, const at::Tensor& bias,
                                                const at::Tensor& reductions, double eps) {
    return kernels::as_list(kernels::backward(grad, x, weight, bias, reductions, eps));
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list) {
    TORCH_CHECK(false,
                "layer_norm is differentiable once: its backward, layer_norm_backward, has no "
                "derivative, so double backward (create_graph=True, hessian, gradgradcheck) is "
                "not supported");
  }
};

// The functions the dispatcher calls, with the arguments one by one in the schema's order.
at::Tensor forward_autograd(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                            double eps) {
  // Nothing to record (no input requires grad, or grad mode is off): straight to the
  // kernel, as torch's own ops do. Function::apply would build a node and throw it away,
  // which took 0.75 us of a 2.6 us call on small CPU tensors. A forward-mode tangent
  // goes to apply, whose error says forward AD is not implemented.
  if (!torch::autograd::compute_requires_grad(x, weight, bias) &&
      !x._fw_grad(/*level=*/0).defined() && !weight._fw_grad(/*level=*/0).defined() &&
      !bias._fw_grad(/*level=*/0).defined()) {
    return kernels::forward(x, weight, bias, eps);
  }
  return LayerNormFunction::apply(Arguments{x, weight, bias, eps}, x, weight, bias);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> backward_autograd(
    const at::Tensor& grad, const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
    const at::Tensor& reductions, double eps) {
  // The usual backward pass runs with grad mode off: straight to the kernel.
  if (!torch::autograd::compute_requires_grad(grad, x, weight, bias, reductions)) {
    return kernels::backward(grad, x, weight, bias, reductions, eps);
  }
  return kernels::as_tuple(
      LayerNormFunctionBackward::apply(grad, x, weight, bias, reductions, eps));
}

}  // namespace

TORCH_LIBRARY_IMPL(layer_norm, Autograd, m) {
  m.impl("layer_norm", &forward_autograd);
  m.impl("layer_norm_backward", &backward_autograd);
}

}  // namespace layer_norm
