// rgb_to_gray_kernel.h: the CUDA launchers of rgb_to_gray, on raw pointers.
//
// No torch types here: the kernels compile with nvcc alone, in about a second. T is the
// input element type (uint8_t); every pointer addresses n
// contiguous elements.
// Each launcher enqueues its kernel on `stream` and returns the launch's error code.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "rgb_to_gray_math.h"

namespace rgb_to_gray {

// The output element type for input element type T.
template <typename T>
using Out = T;

// out[i] = forward(the 3 channels of pixel i of in.img); n counts pixels
template <typename T>
cudaError_t launch_forward(Tensors<const T*> in, Out<T>* out, int64_t n, Scalars<double> s,
                           cudaStream_t stream);

}  // namespace rgb_to_gray
