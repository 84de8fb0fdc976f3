// library.cpp: the vector_add library's schemas.
//
// One TORCH_LIBRARY block per library: it declares every op of torch.ops.vector_add;
// each op's own file (csrc/<op>.cpp) registers its CPU and CUDA kernels for it.
#include <torch/library.h>

TORCH_LIBRARY(vector_add, m) { m.def("vector_add(Tensor a, Tensor b) -> Tensor"); }
