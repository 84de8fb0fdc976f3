// e_sq_kernel.h: the CUDA launchers of e_sq, on raw pointers.
//
// No torch types here: the kernels compile with nvcc alone, in about a second. T is the
// input element type (float, double); every pointer addresses n
// contiguous elements.
// Each launcher enqueues its kernel on `stream` and returns the launch's error code.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "e_sq_math.h"

namespace e_sq {

// The output element type for input element type T.
template <typename T>
using Out = T;

// out[i] = forward(in.x[i])
template <typename T>
cudaError_t launch_forward(Tensors<const T*> in, Out<T>* out, int64_t n, Scalars<double> s,
                           cudaStream_t stream);

}  // namespace e_sq
