// relu_kernel.h: the CUDA launchers of relu, on raw pointers.
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

#include "relu_math.h"

namespace relu {

// The output element type for input element type T.
template <typename T>
using Out = T;

// out[i] = forward(in.x[i])
template <typename T>
cudaError_t launch_forward(Tensors<const T*> in, Out<T>* out, int64_t n, Scalars<double> s,
                           cudaStream_t stream);

// grads.x[i] = the gradients at element i, given grad[i * grad_step]
// (grad_step 0: one gradient value for every element)
template <typename T>
cudaError_t launch_backward(const T* grad, int64_t grad_step, GradReads<const T*> reads,
                            Grads<T*> grads, int64_t n, Scalars<double> s, cudaStream_t stream);

// The forward that also saves the conditions the gradients read (csrc/relu_math.h)
// in mask: plane c holds condition_c of element i at bit i % 32 of word i / 32, each plane
// (n + 31) / 32 words. The backward reads them instead of x.
template <typename T>
cudaError_t launch_forward_saving_mask(Tensors<const T*> in, Out<T>* out, uint32_t* mask, int64_t n,
                                       Scalars<double> s, cudaStream_t stream);

template <typename T>
cudaError_t launch_backward_from_mask(const T* grad, int64_t grad_step, const uint32_t* mask,
                                      Grads<T*> grads, int64_t n, Scalars<double> s,
                                      cudaStream_t stream);

}  // namespace relu
