// library.cpp: the rgb_to_gray library's schemas.
//
// One TORCH_LIBRARY block per library: it declares every op of torch.ops.rgb_to_gray;
// each op's own file (csrc/<op>.cpp) registers its CPU and CUDA kernels for it.
#include <torch/library.h>

TORCH_LIBRARY(rgb_to_gray, m) { m.def("rgb_to_gray(Tensor img) -> Tensor"); }
