// embedding_bag_cuda.cuh: embedding_bag's CUDA kernels. YOURS: opgen wrote a first
// version once, and opgen update and copier update never change it; this is the worked
// example's.
//
// Sum-mode embedding bags, as torch.nn.functional.embedding_bag(indices, weight, offsets,
// mode="sum"). The forward is a grid-stride loop over the output, a thread per (bag,
// column): consecutive threads read consecutive columns of a weight row. The gradient of
// weight is deterministic, without atomics: the positions of indices are sorted by the
// row they name (a stable radix sort, so a row's positions stay in order), and a thread
// per (row, column) sums grad_out over its row's positions in that order: the same bits
// on every run. Preconditions, checked on the CPU only: offsets rise from 0 within
// indices, and every index names a row of weight.
#pragma once

#include <cstdint>
#include <cub/device/device_radix_sort.cuh>

#include "embedding_bag_kernel.h"

namespace embedding_bag {
namespace cuda {

constexpr int kThreads = 256;

// The first position in sorted[0, n) whose value is not below `value`.
__device__ __forceinline__ int64_t lower_bound(const int64_t* sorted, int64_t n, int64_t value) {
  int64_t low = 0;
  while (n > 0) {
    const int64_t half = n / 2;
    if (sorted[low + half] < value) {
      low += half + 1;
      n -= half + 1;
    } else {
      n = half;
    }
  }
  return low;
}

template <typename T>
__global__ void forward_kernel(const Inputs<T> in, const Outputs<T> out) {
  using A = Acc<T>;
  const int64_t dim = in.weight.size(1);
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < out.out.numel;
       i += stride) {
    const int64_t b = i / dim, c = i - b * dim;
    const int64_t begin = in.offsets.data[b];
    const int64_t end = b + 1 < in.offsets.numel ? in.offsets.data[b + 1] : in.indices.numel;
    A sum = A(0);
    for (int64_t k = begin; k < end; ++k)
      sum += to_acc<A>(in.weight.data[in.indices.data[k] * dim + c]);
    out.out.data[i] = from_acc<T>(sum);
  }
}

template <typename T>
void forward(const Inputs<T>& in, const Scalars&, const Outputs<T>& out, cudaStream_t stream) {
  forward_kernel<T><<<grid_for(out.out.numel, kThreads), kThreads, 0, stream>>>(in, out);
}

// positions[k] = k, the values the sort carries along.
__global__ void iota_kernel(int64_t* positions, int64_t n) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; k < n;
       k += stride) {
    positions[k] = k;
  }
}

// bags[p] = the bag that position positions[p] of indices belongs to.
__global__ void bag_kernel(const int64_t* positions, int64_t n, const int64_t* offsets,
                           int64_t bags, int64_t* bag_of) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < n;
       p += stride) {
    bag_of[p] = lower_bound(offsets, bags, positions[p] + 1) - 1;  // last offset <= position
  }
}

// grad_weight[r, c] = sum of grad_out[bag, c] over the positions naming row r, in order.
template <typename T>
__global__ void weight_grad_kernel(const int64_t* rows_sorted, const int64_t* bag_of, int64_t n,
                                   const TensorArg<const T> grad_out,
                                   const TensorArg<T> grad_weight) {
  using A = Acc<T>;
  const int64_t dim = grad_weight.size(1);
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < grad_weight.numel; i += stride) {
    const int64_t r = i / dim, c = i - r * dim;
    A sum = A(0);
    const int64_t end = lower_bound(rows_sorted, n, r + 1);
    for (int64_t p = lower_bound(rows_sorted, n, r); p < end; ++p) {
      sum += to_acc<A>(grad_out.data[bag_of[p] * dim + c]);
    }
    grad_weight.data[i] = from_acc<T>(sum);
  }
}

template <typename T>
void backward(const GradOutputs<T>& grad, const Inputs<T>& in, const Scalars&,
              const GradInputs<T>& grad_in, cudaStream_t stream) {
  const int64_t n = in.indices.numel, rows = in.weight.size(0);
  // Scratch in the stream's memory pool: the sorted rows and positions, the positions
  // before sorting, the bag of each sorted position, and the sort's own storage.
  int bits = 1;  // enough bits for every row number: a shorter sort
  while (bits < 63 && (int64_t{1} << bits) < rows) ++bits;
  size_t sort_bytes = 0;
  cub::DeviceRadixSort::SortPairs(
      nullptr, sort_bytes, static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr),
      static_cast<const int64_t*>(nullptr), static_cast<int64_t*>(nullptr), n, 0, bits, stream);
  const size_t array_bytes = (n > 0 ? n : 1) * sizeof(int64_t);
  char* scratch = nullptr;
  if (cudaMallocAsync(&scratch, 4 * array_bytes + sort_bytes, stream) != cudaSuccess) return;
  int64_t* rows_sorted = reinterpret_cast<int64_t*>(scratch);
  int64_t* positions = rows_sorted + (n > 0 ? n : 1);
  int64_t* positions_sorted = positions + (n > 0 ? n : 1);
  int64_t* bag_of = positions_sorted + (n > 0 ? n : 1);
  void* sort_storage = scratch + 4 * array_bytes;
  if (n > 0) {
    iota_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(positions, n);
    cub::DeviceRadixSort::SortPairs(sort_storage, sort_bytes, in.indices.data, rows_sorted,
                                    positions, positions_sorted, n, 0, bits, stream);
    bag_kernel<<<grid_for(n, kThreads), kThreads, 0, stream>>>(positions_sorted, n, in.offsets.data,
                                                               in.offsets.numel, bag_of);
  }
  weight_grad_kernel<T><<<grid_for(grad_in.weight.numel, kThreads), kThreads, 0, stream>>>(
      rows_sorted, bag_of, n, grad.out, grad_in.weight);
  cudaFreeAsync(scratch, stream);
}

}  // namespace cuda
}  // namespace embedding_bag
