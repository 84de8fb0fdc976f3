// library.cpp: the softmax library's schemas.
//
// One TORCH_LIBRARY block per library: it declares every op of torch.ops.softmax;
// each op's own file (csrc/<op>.cpp) registers its CPU and CUDA kernels for it.
#include <torch/library.h>

TORCH_LIBRARY(softmax, m) {
  m.def("softmax(Tensor x) -> Tensor");
  m.def("softmax_backward(Tensor grad, Tensor y) -> Tensor");
}
