// embedding_bag_cpu.h: embedding_bag on the CPU. YOURS: opgen wrote a first version once,
// and opgen update and copier update never change it; this is the worked example's.
//
// Sum-mode embedding bags, as torch.nn.functional.embedding_bag(indices, weight, offsets,
// mode="sum"): bag b is indices[offsets[b]:offsets[b + 1]] (the last one runs to the end
// of indices), and out[b] is the sum of the weight rows it names. The gradient of weight
// adds grad_out[b] to every row bag b names, in the order of indices, whatever the number
// of threads: the same bits on every run.
#pragma once

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "embedding_bag_kernel.h"

namespace embedding_bag {
namespace cpu {

// Arithmetic in double for double, else in float (c10::Half and c10::BFloat16 convert).
template <typename T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Where bag b of `in` begins and ends in indices.
template <typename T>
inline std::pair<int64_t, int64_t> bag_range(const Inputs<T>& in, int64_t b) {
  const int64_t end = b + 1 < in.offsets.numel ? in.offsets.data[b + 1] : in.indices.numel;
  return {in.offsets.data[b], end};
}

// The values the glue cannot check from shapes alone: offsets that rise from 0 within
// indices, and indices that name rows of weight. Cheap next to the op, so always checked.
template <typename T>
void check_values(const Inputs<T>& in) {
  const int64_t rows = in.weight.size(0);
  for (int64_t b = 0; b < in.offsets.numel; ++b) {
    const auto [begin, end] = bag_range(in, b);
    TORCH_CHECK(b > 0 || begin == 0, "embedding_bag: offsets[0] is ", begin, "; it must be 0");
    TORCH_CHECK(begin <= end && end <= in.indices.numel, "embedding_bag: offsets[", b, "] is ",
                begin, "; offsets must not decrease or pass the ", in.indices.numel, " indices");
  }
  for (int64_t k = 0; k < in.indices.numel; ++k) {
    const int64_t row = in.indices.data[k];
    TORCH_CHECK(0 <= row && row < rows, "embedding_bag: indices[", k, "] is ", row, "; weight has ",
                rows, " rows");
  }
}

template <typename T>
void forward(const Inputs<T>& in, const Scalars&, const Outputs<T>& out) {
  using A = Acc<T>;
  check_values(in);
  const int64_t dim = in.weight.size(1);
  at::parallel_for(0, in.offsets.numel, 64, [&](int64_t first, int64_t last) {
    std::vector<A> sum(dim);
    for (int64_t b = first; b < last; ++b) {
      std::fill(sum.begin(), sum.end(), A(0));
      const auto [begin, end] = bag_range(in, b);
      for (int64_t k = begin; k < end; ++k) {
        const T* row = in.weight.data + in.indices.data[k] * dim;
        for (int64_t c = 0; c < dim; ++c) sum[c] += static_cast<A>(row[c]);
      }
      for (int64_t c = 0; c < dim; ++c) out.out.data[b * dim + c] = static_cast<T>(sum[c]);
    }
  });
}

// Each task owns a range of columns and walks every bag in order, so each gradient
// element is one sum in the order of indices, whatever the number of threads.
template <typename T>
void backward(const GradOutputs<T>& grad, const Inputs<T>& in, const Scalars&,
              const GradInputs<T>& grad_in) {
  using A = Acc<T>;
  check_values(in);
  const int64_t rows = in.weight.size(0), dim = in.weight.size(1);
  at::parallel_for(0, dim, 16, [&](int64_t first, int64_t last) {
    const int64_t width = last - first;
    std::vector<A> sums(rows * width, A(0));  // this task's columns of the gradient
    for (int64_t b = 0; b < in.offsets.numel; ++b) {
      const auto [begin, end] = bag_range(in, b);
      const T* g = grad.out.data + b * dim + first;
      for (int64_t k = begin; k < end; ++k) {
        A* sum = sums.data() + in.indices.data[k] * width;
        for (int64_t c = 0; c < width; ++c) sum[c] += static_cast<A>(g[c]);
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < width; ++c) {
        grad_in.weight.data[r * dim + first + c] = static_cast<T>(sums[r * width + c]);
      }
    }
  });
}

}  // namespace cpu
}  // namespace embedding_bag
