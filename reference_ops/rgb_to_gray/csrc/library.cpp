// library.cpp: the rgb_to_gray library's schemas, and the Python module that loads it.
//
// One TORCH_LIBRARY block per library: it declares every op of torch.ops.rgb_to_gray;
// each op's own file (csrc/<op>.cpp) registers its CPU and CUDA kernels for it.
#include <Python.h>
#include <torch/library.h>

TORCH_LIBRARY(rgb_to_gray, m) { m.def("rgb_to_gray(Tensor img) -> Tensor"); }

// `import rgb_to_gray._C` loads this library, which runs every registration in csrc/. The
// module itself is empty: TORCH_LIBRARY, not pybind11, exposes the ops.
extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  return PyModule_Create(&module);
}
