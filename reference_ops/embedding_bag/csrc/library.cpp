// library.cpp: the embedding_bag library's schemas.
//
// One TORCH_LIBRARY block per library: it declares every op of torch.ops.embedding_bag;
// each op's own file (csrc/<op>.cpp) registers its CPU and CUDA kernels for it.
#include <torch/library.h>

TORCH_LIBRARY(embedding_bag, m) {
  m.def("embedding_bag(Tensor weight, Tensor indices, Tensor offsets) -> Tensor");
  m.def(
      "embedding_bag_backward(Tensor grad_out, Tensor weight, Tensor indices, Tensor offsets) -> "
      "Tensor");
}
