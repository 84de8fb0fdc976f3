// relu_autograd.cpp: autograd for relu: the forward op records a node whose
// backward calls relu_backward, both through the dispatcher. On CUDA the node
// keeps the conditions the gradients read as bits instead of x (see saves_mask), and
// its backward calls relu_backward_from_mask.
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

// The ops of csrc/relu.cpp, called with their arguments in the schema's order
// below autograd: the calls reach the CPU or CUDA kernel, not this file again.
namespace kernels {

template <typename... Args>
at::Tensor forward(const Args&... args) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("relu::relu", "")
                             .typed<at::Tensor(const at::Tensor&)>();
  const at::AutoDispatchBelowADInplaceOrView below_autograd;
  return op.call(args...);
}

// The backward op with autograd: called so from a backward pass, it records itself when
// that pass builds a graph (create_graph=True).
const auto& backward_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("relu::relu_backward", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
  return op;
}

template <typename... Args>
at::Tensor backward(const Args&... args) {
  const at::AutoDispatchBelowADInplaceOrView below_autograd;
  return backward_op().call(args...);
}

// The forward that also returns the conditions the gradients read, as bits, and the
// backward that reads those instead of x (csrc/relu_math.h).
std::tuple<at::Tensor, at::Tensor> forward_saving_mask(const at::Tensor& x) {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("relu::relu_forward_saving_mask", "")
                             .typed<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&)>();
  const at::AutoDispatchBelowADInplaceOrView below_autograd;
  return op.call(x);
}

const auto& backward_from_mask_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("relu::relu_backward_from_mask", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&)>();
  return op;
}

template <typename... Args>
at::Tensor backward_from_mask(const Args&... args) {
  const at::AutoDispatchBelowADInplaceOrView below_autograd;
  return backward_from_mask_op().call(args...);
}

}  // namespace kernels

// Whether the forward saves the gradients' conditions as bits instead of x: on
// CUDA, where the backward's time is the bytes it moves (relu in float32: 8.1 bytes an
// element instead of 12), for inputs of one shape, contiguous.
bool saves_mask(const at::Tensor& x) { return x.is_cuda() && x.is_contiguous(); }

// relu's arguments by name, for the autograd function below.
struct Arguments {
  const at::Tensor& x;
};

class ReluFunction : public torch::autograd::Function<ReluFunction> {
 public:
  // The arguments by name, then the tensors among them again, one by one: apply()
  // connects to the graph the tensors it is passed.
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const Arguments& args,
                            const at::Tensor& /*x*/) {
    if (saves_mask(args.x)) {
      auto [out, mask] = kernels::forward_saving_mask(args.x);
      ctx->save_for_backward({mask});
      ctx->saved_data["saved a mask"] = true;
      return out;
    }
    ctx->save_for_backward({args.x});
    return kernels::forward(args.x);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const at::Tensor g = ctx->saved_data.count("saved a mask") != 0
                             ? kernels::backward_from_mask_op().call(grads[0], saved[0])
                             : kernels::backward_op().call(grads[0], saved[0]);
    // One gradient per argument of forward: none for args, then one per tensor.
    return {at::Tensor(), g};
  }
};

// The backward op differentiated again (torch.autograd.grad(..., create_graph=True), hessian,
// gradgradcheck): its formulas have no derivative here, so that second backward raises
// instead of returning zeros.
class ReluFunctionBackward : public torch::autograd::Function<ReluFunctionBackward> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext*,
                                                const at::Tensor& grad, const at::Tensor& x) {
    return {kernels::backward(grad, x)};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list) {
    TORCH_CHECK(false,
                "relu is differentiable once: its backward, relu_backward, has no "
                "derivative, so double backward (create_graph=True, hessian, gradgradcheck) is "
                "not supported");
  }
};

// The same for the backward that reads the saved conditions.
class ReluFunctionBackwardFromMask
    : public torch::autograd::Function<ReluFunctionBackwardFromMask> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext*,
                                                const at::Tensor& grad, const at::Tensor& mask) {
    return {kernels::backward_from_mask(grad, mask)};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    return ReluFunctionBackward::backward(ctx, grads);
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
  return ReluFunction::apply(Arguments{x}, x);
}

at::Tensor backward_autograd(const at::Tensor& grad, const at::Tensor& x) {
  // The usual backward pass runs with grad mode off: straight to the kernel.
  if (!torch::autograd::compute_requires_grad(grad, x)) {
    return kernels::backward(grad, x);
  }
  return ReluFunctionBackward::apply(grad, x)[0];
}

at::Tensor backward_from_mask_autograd(const at::Tensor& grad, const at::Tensor& mask) {
  if (!torch::autograd::compute_requires_grad(grad)) {
    return kernels::backward_from_mask(grad, mask);
  }
  return ReluFunctionBackwardFromMask::apply(grad, mask)[0];
}

}  // namespace

TORCH_LIBRARY_IMPL(relu, Autograd, m) {
  m.impl("relu", &forward_autograd);
  m.impl("relu_backward", &backward_autograd);
  m.impl("relu_backward_from_mask", &backward_from_mask_autograd);
}

}  // namespace relu
