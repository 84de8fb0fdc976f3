// softmax_kernel.h: the CUDA launchers of softmax, on raw pointers.
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

#include "softmax_math.h"

namespace softmax {

// The output element type for input element type T.
template <typename T>
using Out = T;

// Every row pointer addresses rows x n elements, row after row (n apart); every column
// pointer n elements.

// The scratch memory launch_forward needs for rows x n on the current device, in bytes (0
// for most shapes: few long rows are reduced in parts).
template <typename T>
int64_t forward_workspace_bytes(int64_t rows, int64_t n);

// out[r, i] = forward(the elements of row r at column i, the row's reductions, n)
template <typename T>
cudaError_t launch_forward(Rows<const T*> in, Columns<const T*> columns, T* out, int64_t rows,
                           int64_t n, Scalars<double> s, void* workspace, cudaStream_t stream);

// The scratch memory launch_backward needs for rows x n on the current device, in bytes.
template <typename T>
int64_t backward_workspace_bytes(int64_t rows, int64_t n);

// The gradients of the row tensors at every element and of the column tensors (summed
// over the rows, in a fixed order), given grad, the gradient of the output, and y, the output.
template <typename T>
cudaError_t launch_backward(const T* grad, Output<const T*> in, Columns<const T*> columns,
                            RowGrads<T*> row_grads, ColumnGrads<T*> column_grads, int64_t rows,
                            int64_t n, Scalars<double> s, void* workspace, cudaStream_t stream);

}  // namespace softmax
