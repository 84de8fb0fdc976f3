// library.cpp: the rms_norm library's schemas.
//
// One TORCH_LIBRARY block per library: it declares every op of torch.ops.rms_norm;
// each op's own file (csrc/<op>.cpp) registers its CPU and CUDA kernels for it.
//
// The schemas give no defaults: each op's Python API has them and passes every argument,
// so a graph torch.compile traces holds their values. Inductor's on-disk cache keys a graph
// by its text, not by the op's schema, and leaves out of it a value equal to the schema's
// default: a rebuilt op with another default would then run code compiled for the old one.
#include <torch/library.h>

TORCH_LIBRARY(rms_norm, m) {
  m.def("rms_norm(Tensor x, Tensor weight, float eps) -> Tensor");
  m.def(
      "rms_norm_forward_saving_reductions(Tensor x, Tensor weight, float eps) -> (Tensor, Tensor)");
  m.def(
      "rms_norm_backward(Tensor grad, Tensor x, Tensor weight, Tensor reductions, float eps) -> "
      "(Tensor, Tensor)");
}
