// library.cpp: the fused_axpby_stable library's schemas.
//
// One STABLE_TORCH_LIBRARY block per library: it declares every op of torch.ops.fused_axpby_stable;
// each op's own file (csrc/<op>.cpp) registers its CPU and CUDA kernels for it.
// An op with autograd is also declared as _<op>_no_autograd, the same kernels with no
// autograd kernel: the op's Python API calls it when no input needs a gradient, skipping
// the Python autograd kernel (microseconds a call).
#include <torch/csrc/stable/library.h>

STABLE_TORCH_LIBRARY(fused_axpby_stable, m) {
  m.def("fused_axpby(float a, Tensor x, Tensor b) -> Tensor");
  m.def("_fused_axpby_no_autograd(float a, Tensor x, Tensor b) -> Tensor");
  m.def("fused_axpby_backward(Tensor grad, float a) -> Tensor");
}
