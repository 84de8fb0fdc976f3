// layer_norm_kernel.h: the CUDA launchers of layer_norm, on raw pointers.
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
#include <type_traits>

#include "layer_norm_math.h"

namespace layer_norm {

// The output element type for input element type T.
template <typename T>
using Out = T;

// The arithmetic type of element type T, in which the forward saves its reductions.
template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
// Every row pointer addresses rows x n elements, row after row (n apart); every column
// pointer n elements.

// The scratch memory launch_forward needs for rows x n on the current device, in bytes (0
// for most shapes: few long rows are reduced in parts).
template <typename T>
int64_t forward_workspace_bytes(int64_t rows, int64_t n);

// out[r, i] = forward(the elements of row r at column i, the row's reductions, n)
// and, where `reductions` is not null, reductions[j * rows + r] = the row's reduction j, in
// the arithmetic type (Acc<T>: float, double for double) as the backward reads them.
template <typename T>
cudaError_t launch_forward(Rows<const T*> in, Columns<const T*> columns, T* out, Acc<T>* reductions,
                           int64_t rows, int64_t n, Scalars<double> s, void* workspace,
                           cudaStream_t stream);

// The scratch memory launch_backward needs for rows x n on the current device, in bytes.
template <typename T>
int64_t backward_workspace_bytes(int64_t rows, int64_t n);

// The gradients of the row tensors at every element and of the column tensors (summed
// over the rows, in a fixed order), given grad, the gradient of the output.
template <typename T>
cudaError_t launch_backward(const T* grad, Rows<const T*> in, Columns<const T*> columns,
                            const Acc<T>* reductions, RowGrads<T*> row_grads,
                            ColumnGrads<ColumnGrad<T>> column_grads, int64_t rows, int64_t n,
                            Scalars<double> s, void* workspace, cudaStream_t stream);

}  // namespace layer_norm
