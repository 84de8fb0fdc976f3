// library.cpp: the fused_axpby_stable library's schemas.
//
// One STABLE_TORCH_LIBRARY block per library: it declares every op of torch.ops.fused_axpby_stable;
// each op's own file (csrc/<op>.cpp) registers its CPU and CUDA kernels for it.
#include <torch/csrc/stable/library.h>

STABLE_TORCH_LIBRARY(fused_axpby_stable, m) {
  m.def("fused_axpby(float a, Tensor x, Tensor b) -> Tensor");
  m.def("fused_axpby_backward(Tensor grad, float a) -> Tensor");
}
