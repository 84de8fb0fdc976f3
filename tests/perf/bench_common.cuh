// bench_common.cuh: what the standalone variant benchmarks beside it share: CHECK for
// CUDA calls, a device copy, and the median time of a launch, measured with CUDA events.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#define CHECK(call)                                                                   \
  do {                                                                                \
    cudaError_t err_ = (call);                                                        \
    if (err_ != cudaSuccess) {                                                        \
      std::printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(err_));        \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

// A device copy of n 16-byte vectors, what the benchmarks' bandwidths are fractions of (a
// template, so that every benchmark including this file may have it).
template <class T>
__global__ void copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
       i += (size_t)gridDim.x * blockDim.x)
    dst[i] = src[i];
}

// The median of `reps` timings of fn on the default stream, after five warm-up calls.
inline float median_ms(const std::function<void()>& fn, int reps) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 5; ++i) fn();
  CHECK(cudaGetLastError());
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    CHECK(cudaEventRecord(a));
    fn();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms);
  }
  CHECK(cudaGetLastError());
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// The median of `reps` timings of a launch, each after 256 MB are zeroed (the L2 cleared, as
// triton's do_bench), CUDA events around the launch alone; one warm-up launch first
// (rowwise/run_looped_ncu.sh counts on it).
struct Timer {
  cudaEvent_t a, b;
  void* flush;
  size_t flush_bytes = size_t(256) << 20;
  int reps;
  explicit Timer(int r) : reps(r) {
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    CHECK(cudaMalloc(&flush, flush_bytes));
  }
  template <class L>
  float median_us(L&& launch) {
    launch();  // warm-up
    CHECK(cudaDeviceSynchronize());
    std::vector<float> t;
    for (int i = 0; i < reps; ++i) {
      CHECK(cudaMemsetAsync(flush, 0, flush_bytes));
      CHECK(cudaEventRecord(a));
      launch();
      CHECK(cudaEventRecord(b));
      CHECK(cudaEventSynchronize(b));
      float ms;
      CHECK(cudaEventElapsedTime(&ms, a, b));
      t.push_back(ms * 1000.f);
    }
    CHECK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  }
};
