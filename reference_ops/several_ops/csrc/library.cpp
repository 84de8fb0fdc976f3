// library.cpp: the several_ops library's schemas, and the Python module that loads it.
//
// One TORCH_LIBRARY block per library: it declares every op of torch.ops.several_ops;
// each op's own file (csrc/<op>.cpp) registers its CPU and CUDA kernels for it.
#include <Python.h>
#include <torch/library.h>

TORCH_LIBRARY(several_ops, m) {
  m.def("relu(Tensor x) -> Tensor");
  m.def("relu_backward(Tensor grad, Tensor x) -> Tensor");
  m.def("fused_axpby(float a, Tensor x, Tensor b) -> Tensor");
  m.def("fused_axpby_backward(Tensor grad, float a) -> (Tensor, Tensor)");
  m.def("matmul(Tensor a, Tensor b) -> Tensor");
  m.def("matmul_backward(Tensor grad, Tensor a, Tensor b) -> (Tensor, Tensor)");
}

// `import several_ops._C` loads this library, which runs every registration in csrc/. The
// module itself is empty: TORCH_LIBRARY, not pybind11, exposes the ops.
extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  return PyModule_Create(&module);
}
