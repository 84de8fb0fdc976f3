// library.cpp: the gelu library's schemas.
//
// One TORCH_LIBRARY block per library: it declares every op of torch.ops.gelu;
// each op's own file (csrc/<op>.cpp) registers its CPU and CUDA kernels for it.
#include <torch/library.h>

TORCH_LIBRARY(gelu, m) {
  m.def("gelu(Tensor x) -> Tensor");
  m.def("gelu_backward(Tensor grad, Tensor x) -> Tensor");
}
