// row_reference.h: the host's answer for one row of the standalone row probes beside it
// (rows_per_thread_probe.cu, looped_probe.cu), in double from the rounded inputs.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

enum class RowOp { kLayerNorm, kRmsNorm, kSoftmax };

// Row `row` of x (rows of N), with columns w and b where the op reads them; TI::to_host gives
// an element's value as a float.
template <class TI, class T, class Out>
void reference_row(RowOp op, const std::vector<T>& x, const std::vector<T>& w, const std::vector<T>& b,
                   size_t row, int N, float eps, std::vector<Out>& out) {
  std::vector<double> f(N);
  for (int i = 0; i < N; ++i) f[i] = TI::to_host(x[row * N + i]);
  double a = 0, c = 0;
  if (op == RowOp::kSoftmax) {
    a = *std::max_element(f.begin(), f.end());
    for (double v : f) c += std::exp(v - a);
    c = 1 / c;
  } else if (op == RowOp::kRmsNorm) {
    for (double v : f) c += v * v;
    c = 1 / std::sqrt(c / N + eps);
  } else {
    for (double v : f) a += v;
    a /= N;
    for (double v : f) c += (v - a) * (v - a);
    c = 1 / std::sqrt(c / N + eps);
  }
  out.resize(N);
  for (int i = 0; i < N; ++i) {
    const double fw = TI::to_host(w[i]), fb = TI::to_host(b[i]);
    if (op == RowOp::kSoftmax)
      out[i] = std::exp(f[i] - a) * c;
    else if (op == RowOp::kRmsNorm)
      out[i] = f[i] * c * fw;
    else
      out[i] = (f[i] - a) * c * fw + fb;
  }
}
