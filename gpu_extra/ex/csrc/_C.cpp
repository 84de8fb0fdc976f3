// _C.cpp: the Python module ex._C.
//
// `import ex._C` loads the library built from csrc/, which runs every
// registration in it. The module itself is empty: TORCH_LIBRARY, not pybind11, exposes
// the ops.
#include <Python.h>

extern "C" PyObject* PyInit__C(void) {
  static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  return PyModule_Create(&module);
}
