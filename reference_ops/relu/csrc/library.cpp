// library.cpp: the relu library's schemas.
//
// One TORCH_LIBRARY block per library: it declares every op of torch.ops.relu;
// each op's own file (csrc/<op>.cpp) registers its CPU and CUDA kernels for it.
#include <torch/library.h>

TORCH_LIBRARY(relu, m) {
  m.def("relu(Tensor x) -> Tensor");
  m.def("relu_backward(Tensor grad, Tensor x) -> Tensor");
  m.def("relu_forward_saving_mask(Tensor x) -> (Tensor, Tensor)");
  m.def("relu_backward_from_mask(Tensor grad, Tensor mask) -> Tensor");
}
