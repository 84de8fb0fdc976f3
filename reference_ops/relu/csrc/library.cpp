// library.cpp: the relu library's schemas, and the Python module that loads it.
//
// One TORCH_LIBRARY block per library: it declares every op of torch.ops.relu;
// each op's own file (csrc/<op>.cpp) registers its CPU and CUDA kernels for it.
#include <Python.h>
#include <torch/library.h>

TORCH_LIBRARY(relu, m) {
  m.def("relu(Tensor x) -> Tensor");
  m.def("relu_backward(Tensor grad, Tensor x) -> Tensor");
}

// `import relu._C` loads this library, which runs every registration in csrc/. The
// module itself is empty: TORCH_LIBRARY, not pybind11, exposes the ops.
extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  return PyModule_Create(&module);
}
