// fused_axpby_kernel.h: the CUDA launchers of fused_axpby, on raw pointers.
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

namespace fused_axpby {

// The output element type for input element type T.
template <typename T>
using Out = T;

// out[i] = forward(a, x[i], b[i])
template <typename T>
cudaError_t forward_cuda(const T* x, const T* b, Out<T>* out, int64_t n, double a,
                         cudaStream_t stream);

// grad_x[i], grad_b[i] = the gradients at element i, given grad[i]
template <typename T>
cudaError_t backward_cuda(const T* grad, T* grad_x, T* grad_b, int64_t n, double a,
                          cudaStream_t stream);

}  // namespace fused_axpby
