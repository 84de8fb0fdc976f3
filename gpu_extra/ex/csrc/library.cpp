// library.cpp: the ex library's schemas.
//
// One TORCH_LIBRARY block per library: it declares every op of torch.ops.ex;
// each op's own file (csrc/<op>.cpp) registers its CPU and CUDA kernels for it.
#include <torch/library.h>

TORCH_LIBRARY(ex, m) {
  m.def("e_exp(Tensor x) -> Tensor");
  m.def("e_tanh(Tensor x) -> Tensor");
  m.def("e_sq(Tensor x) -> Tensor");
  m.def("e_rs(Tensor x) -> Tensor");
  m.def("e_lg(Tensor x) -> Tensor");
  m.def("e_pw(Tensor x) -> Tensor");
}
