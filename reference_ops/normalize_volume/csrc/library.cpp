// library.cpp: the normalize_volume library's schemas.
//
// One TORCH_LIBRARY block per library: it declares every op of torch.ops.normalize_volume;
// each op's own file (csrc/<op>.cpp) registers its CPU and CUDA kernels for it.
#include <torch/library.h>

TORCH_LIBRARY(normalize_volume, m) {
  m.def("normalize_volume(Tensor vol, float max_val) -> Tensor");
}
