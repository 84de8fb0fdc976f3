// library.cpp: the times_two library's schemas.
//
// One TORCH_LIBRARY block per library: it declares every op of torch.ops.times_two;
// each op's own file (csrc/<op>.cpp) registers its CPU and CUDA kernels for it.
#include <torch/library.h>

TORCH_LIBRARY(times_two, m) {
  m.def("times_two(Tensor x) -> Tensor");
  m.def("times_two_backward(Tensor grad) -> Tensor");
}
