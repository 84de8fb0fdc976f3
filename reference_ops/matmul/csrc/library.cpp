// library.cpp: the matmul library's schemas.
//
// One TORCH_LIBRARY block per library: it declares every op of torch.ops.matmul;
// each op's own file (csrc/<op>.cpp) registers its CPU and CUDA kernels for it.
#include <torch/library.h>

TORCH_LIBRARY(matmul, m) {
  m.def("matmul(Tensor a, Tensor b) -> Tensor");
  m.def("matmul_backward(Tensor grad, Tensor a, Tensor b) -> (Tensor, Tensor)");
}
