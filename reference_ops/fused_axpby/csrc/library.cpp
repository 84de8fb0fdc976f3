// library.cpp: the fused_axpby library's schemas.
//
// One TORCH_LIBRARY block per library: it declares every op of torch.ops.fused_axpby;
// each op's own file (csrc/<op>.cpp) registers its CPU and CUDA kernels for it.
#include <torch/library.h>

TORCH_LIBRARY(fused_axpby, m) {
  m.def("fused_axpby(float a, Tensor x, Tensor b) -> Tensor");
  m.def("fused_axpby_backward(Tensor grad, float a) -> Tensor");
}
