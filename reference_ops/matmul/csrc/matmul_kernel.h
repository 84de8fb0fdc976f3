// matmul_kernel.h: the CUDA launchers of matmul, on raw pointers.
//
// No torch types here: the kernels compile with nvcc alone, in about a second. T is the
// input element type (float, double, __half, __nv_bfloat16); every pointer addresses n
// contiguous elements.
// Each launcher enqueues its kernel on `stream` and returns the launch's error code.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace matmul {

// The output element type for input element type T.
template <typename T>
using Out = T;

// c[i, j] = sum over l of a[i, l] * b[l, j], for contiguous (row-major) a of m×k, b of
// k×n and c of m×n.
template <typename T>
cudaError_t matmul_cuda(const T* a, const T* b, T* c, int64_t m, int64_t n, int64_t k,
                        cudaStream_t stream);

}  // namespace matmul
