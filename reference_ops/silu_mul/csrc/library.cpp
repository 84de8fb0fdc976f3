// library.cpp: the silu_mul library's schemas.
//
// One TORCH_LIBRARY block per library: it declares every op of torch.ops.silu_mul;
// each op's own file (csrc/<op>.cpp) registers its CPU and CUDA kernels for it.
#include <torch/library.h>

TORCH_LIBRARY(silu_mul, m) {
  m.def("silu_mul(Tensor x, Tensor y) -> Tensor");
  m.def("silu_mul_backward(Tensor grad, Tensor x, Tensor y) -> (Tensor, Tensor)");
}
