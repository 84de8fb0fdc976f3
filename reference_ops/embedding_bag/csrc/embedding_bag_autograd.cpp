// embedding_bag_autograd.cpp: autograd for embedding_bag: the forward op records a node whose
// backward calls embedding_bag_backward (your backward code), both through the dispatcher.
//
// Generated, and kept up to date by opgen update. In C++ rather than with
// torch.library.register_autograd: a Python autograd kernel adds microseconds of Python
// to every call, with or without gradients. A file of its own because the autograd
// headers are heavy: editing csrc/embedding_bag.cpp does not recompile it.
#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/library.h>

#include <tuple>

namespace embedding_bag {
namespace {

// The ops of csrc/embedding_bag.cpp, called below autograd: the calls reach the CPU or CUDA
// kernels, not this file again.
namespace kernels {

template <typename... Args>
at::Tensor forward(const Args&... args) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("embedding_bag::embedding_bag", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&)>();
  const at::AutoDispatchBelowADInplaceOrView below_autograd;
  return op.call(args...);
}

const auto& backward_op() {
  static const auto op = c10::Dispatcher::singleton()
                             .findSchemaOrThrow("embedding_bag::embedding_bag_backward", "")
                             .typed<at::Tensor(const at::Tensor&, const at::Tensor&,
                                               const at::Tensor&, const at::Tensor&)>();
  return op;
}

template <typename... Args>
at::Tensor backward(const Args&... args) {
  const at::AutoDispatchBelowADInplaceOrView below_autograd;
  return backward_op().call(args...);
}

}  // namespace kernels

// embedding_bag's arguments by name, for the autograd function below.
struct Arguments {
  const at::Tensor& weight;
  const at::Tensor& indices;
  const at::Tensor& offsets;
};

class EmbeddingBagFunction : public torch::autograd::Function<EmbeddingBagFunction> {
 public:
  // The arguments by name, then the tensors among them again, one by one: apply()
  // connects to the graph the tensors it is passed.
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                const Arguments& args, const at::Tensor& /*weight*/,
                                                const at::Tensor& /*indices*/,
                                                const at::Tensor& /*offsets*/) {
    // The backward reads every argument: your backward code may use any of them.
    ctx->save_for_backward({args.weight, args.indices, args.offsets});
    return {kernels::forward(args.weight, args.indices, args.offsets)};
  }

  // One gradient per output (zeros where an output was not used: autograd materializes
  // them); one result per argument of forward: none for args, then one per tensor.
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const at::Tensor g = kernels::backward_op().call(grads[0], saved[0], saved[1], saved[2]);
    return {at::Tensor(), g, at::Tensor(), at::Tensor()};
  }
};

// The backward op differentiated again (create_graph=True, gradgradcheck): your backward
// code has no derivative here, so that raises instead of returning zeros.
class EmbeddingBagFunctionBackward
    : public torch::autograd::Function<EmbeddingBagFunctionBackward> {
 public:
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext*,
                                                const at::Tensor& grad_out,
                                                const at::Tensor& weight, const at::Tensor& indices,
                                                const at::Tensor& offsets) {
    return {kernels::backward(grad_out, weight, indices, offsets)};
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext*,
                                                 torch::autograd::variable_list) {
    TORCH_CHECK(
        false,
        "embedding_bag is differentiable once: its backward, embedding_bag_backward, has no "
        "derivative, so double backward (create_graph=True, gradgradcheck) is not "
        "supported");
  }
};

// The functions the dispatcher calls, with the arguments one by one in the schema's order.
at::Tensor forward_autograd(const at::Tensor& weight, const at::Tensor& indices,
                            const at::Tensor& offsets) {
  // Nothing to record (no input requires grad, or grad mode is off): straight to the
  // kernel, as torch's own ops do. A forward-mode tangent goes to apply, whose error says
  // forward AD is not implemented, instead of being dropped.
  if (!torch::autograd::compute_requires_grad(weight, indices, offsets) &&
      !weight._fw_grad(/*level=*/0).defined() && !indices._fw_grad(/*level=*/0).defined() &&
      !offsets._fw_grad(/*level=*/0).defined()) {
    return kernels::forward(weight, indices, offsets);
  }
  return EmbeddingBagFunction::apply(Arguments{weight, indices, offsets}, weight, indices,
                                     offsets)[0];
}

at::Tensor backward_autograd(const at::Tensor& grad_out, const at::Tensor& weight,
                             const at::Tensor& indices, const at::Tensor& offsets) {
  // The usual backward pass runs with grad mode off: straight to the kernel.
  if (!torch::autograd::compute_requires_grad(grad_out, weight, indices, offsets)) {
    return kernels::backward(grad_out, weight, indices, offsets);
  }
  return EmbeddingBagFunctionBackward::apply(grad_out, weight, indices, offsets)[0];
}

}  // namespace

TORCH_LIBRARY_IMPL(embedding_bag, Autograd, m) {
  m.impl("embedding_bag", &forward_autograd);
  m.impl("embedding_bag_backward", &backward_autograd);
}

}  // namespace embedding_bag
