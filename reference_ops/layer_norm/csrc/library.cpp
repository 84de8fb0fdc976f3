// library.cpp: the layer_norm library's schemas.
//
// One TORCH_LIBRARY block per library: it declares every op of torch.ops.layer_norm;
// each op's own file (csrc/<op>.cpp) registers its CPU and CUDA kernels for it.
#include <torch/library.h>

TORCH_LIBRARY(layer_norm, m) {
  m.def("layer_norm(Tensor x, Tensor weight, Tensor bias, float eps=1e-05) -> Tensor");
  m.def(
      "layer_norm_forward_saving_reductions(Tensor x, Tensor weight, Tensor bias, float eps=1e-05) "
      "-> (Tensor, Tensor)");
  m.def(
      "layer_norm_backward(Tensor grad, Tensor x, Tensor weight, Tensor bias, Tensor reductions, "
      "float eps) -> (Tensor, Tensor, Tensor)");
}
