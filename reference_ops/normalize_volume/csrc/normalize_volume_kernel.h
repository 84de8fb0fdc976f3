// normalize_volume_kernel.h: the CUDA launchers of normalize_volume, on raw pointers.
//
// No torch types here: the kernels compile with nvcc alone, in about a second. T is the
// input element type (uint16_t); every pointer addresses n
// contiguous elements.
// Each launcher enqueues its kernel on `stream` and returns the launch's error code.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "normalize_volume_math.h"

namespace normalize_volume {

// The output element type for input element type T.
template <typename T>
using Out = float;

// out[i] = forward(in.vol[i], s.max_val)
template <typename T>
cudaError_t launch_forward(Tensors<const T*> in, Out<T>* out, int64_t n, Scalars<double> s,
                           cudaStream_t stream);

}  // namespace normalize_volume
