// vector_add_autograd.cpp: autograd for vector_add: the forward op records a node whose
// backward passes the incoming gradient on to each input (a, b): no kernel.
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
    // One gradient per argument of forward: none for args, then one per tensor; a, b get grad
    // itself.
    return {at::Tensor(), sum_to_shape(grads[0], ctx->saved_data["shape of a"]),
            sum_to_shape(grads[0], ctx->saved_data["shape of b"])};
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

}  // namespace

TORCH_LIBRARY_IMPL(vector_add, Autograd, m) { m.impl("vector_add", &forward_autograd); }

}  // namespace vector_add
