// library.cpp: the several_ops library's schemas.
//
// One TORCH_LIBRARY block per library: it declares every op of torch.ops.several_ops;
// each op's own file (csrc/<op>.cpp) registers its CPU and CUDA kernels for it.
#include <torch/library.h>

TORCH_LIBRARY(several_ops, m) {
  m.def("relu(Tensor x) -> Tensor");
  m.def("relu_backward(Tensor grad, Tensor x) -> Tensor");
  m.def("relu_forward_saving_mask(Tensor x) -> (Tensor, Tensor)");
  m.def("relu_backward_from_mask(Tensor grad, Tensor mask) -> Tensor");
  m.def("fused_axpby(float a, Tensor x, Tensor b) -> Tensor");
  m.def("fused_axpby_backward(Tensor grad, float a) -> Tensor");
  m.def("matmul(Tensor a, Tensor b) -> Tensor");
  m.def("matmul_backward(Tensor grad, Tensor a, Tensor b) -> (Tensor, Tensor)");
}
