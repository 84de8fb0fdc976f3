// fused_axpby_kernel.h: the CUDA launchers of fused_axpby, on raw pointers.
//
// No torch types here: the kernels compile with nvcc alone, in a few seconds. T is the
// input element type (float, double, __half, __nv_bfloat16); every pointer addresses n
// contiguous elements, but the inputs of the broadcast launchers, read through their strides.
// Each launcher enqueues its kernel on `stream` and returns the launch's error code.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "fused_axpby_math.h"

namespace fused_axpby {

// The output element type for input element type T.
template <typename T>
using Out = T;

// Dimensions a broadcast may have once merged (see Broadcast). Past it, csrc/fused_axpby.cpp
// copies the inputs out to the output's shape.
constexpr int kMaxDims = 6;

// How tensors of different shapes step through a dense output of the shape they broadcast
// to: the output's dimensions in memory order, innermost first, with those that every
// tensor steps through as one merged (a bias of shape (C,) against (N, C) gives two:
// C, then N). strides[d] holds each tensor's stride in elements along dimension d: 0
// where the tensor broadcasts.
template <typename Strides>
struct Broadcast {
  int ndim;
  int64_t sizes[kMaxDims];
  Strides strides[kMaxDims];
};

// A backward's strides: grad's and those of the tensors the gradient formulas read.
struct GradStrides {
  int64_t grad;
  GradReads<int64_t> reads;
};

// out[i] = forward(s.a, in.x[i], in.b[i])
template <typename T>
cudaError_t launch_forward(Tensors<const T*> in, Out<T>* out, int64_t n, Scalars<double> s,
                           cudaStream_t stream);

// grads.x[i] = the gradients at element i, given grad[i * grad_step]
// (grad_step 0: one gradient value for every element)
template <typename T>
cudaError_t launch_backward(const T* grad, int64_t grad_step, GradReads<const T*> reads,
                            Grads<T*> grads, int64_t n, Scalars<double> s, cudaStream_t stream);

// Tensors whose shapes differ broadcast against each other, as in PyTorch. The output is
// dense; b describes how each tensor steps through it (see Broadcast), and n counts its
// elements.
template <typename T>
cudaError_t launch_forward_broadcast(Tensors<const T*> in, Out<T>* out, int64_t n,
                                     const Broadcast<Tensors<int64_t>>& b, Scalars<double> s,
                                     cudaStream_t stream);

// The same for the gradients: grad and the tensors the gradient formulas read step through
// the dense gradients as b says. Each gradient has the output's shape; autograd sums it
// back to its input's shape.
template <typename T>
cudaError_t launch_backward_broadcast(const T* grad, GradReads<const T*> reads, Grads<T*> grads,
                                      int64_t n, const Broadcast<GradStrides>& b, Scalars<double> s,
                                      cudaStream_t stream);

}  // namespace fused_axpby
