// library.cpp: the rms_norm library's schemas.
//
// One TORCH_LIBRARY block per library: it declares every op of torch.ops.rms_norm;
// each op's own file (csrc/<op>.cpp) registers its CPU and CUDA kernels for it.
#include <torch/library.h>

TORCH_LIBRARY(rms_norm, m) {
  m.def("rms_norm(Tensor x, Tensor weight, float eps=1e-06) -> Tensor");
  m.def(
      "rms_norm_forward_saving_reductions(Tensor x, Tensor weight, float eps=1e-06) -> (Tensor, "
      "Tensor)");
  m.def(
      "rms_norm_backward(Tensor grad, Tensor x, Tensor weight, Tensor reductions, float eps) -> "
      "(Tensor, Tensor)");
}
