// kernel_variants.cu: the kernel shapes tried for the template, timed side by side.
//
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -o kv kernel_variants.cu && ./kv
//
// Standalone (no torch): each variant is timed with CUDA events (median of 50 after a
// warm-up) against cudaMemcpyAsync device-to-device on the same number of bytes, and
// checked against the first variant's output. NOTES.md beside this holds the numbers and
// what was kept.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "bench_common.cuh"

static int g_sms = 0;

// The median of a launch's times over 50 runs.
float median_ms(const std::function<void()>& fn) { return median_ms(fn, 50); }

// Fill and compare on the device: host loops over 2^28 elements take minutes.
template <typename T>
__global__ void fill(T* p, int64_t n, uint32_t seed) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const uint32_t h = uint32_t(i) * 2654435761u + seed * 40503u;
    if constexpr (sizeof(T) == 1) {
      p[i] = T(h >> 13);
    } else {
      p[i] = T(float((h >> 9) % 2000) / 1000.f - 1.f);
    }
  }
}
__global__ void count_diff(const unsigned char* a, const unsigned char* b, int64_t bytes, unsigned long long* diff) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < bytes; i += int64_t(gridDim.x) * blockDim.x)
    if (a[i] != b[i]) atomicAdd(diff, 1ull);
}
bool same_bytes(const void* a, const void* b, int64_t bytes) {
  unsigned long long* d;
  CHECK(cudaMalloc(&d, 8));
  CHECK(cudaMemset(d, 0, 8));
  count_diff<<<1024, 256>>>(static_cast<const unsigned char*>(a), static_cast<const unsigned char*>(b), bytes, d);
  unsigned long long h = 1;
  CHECK(cudaMemcpy(&h, d, 8, cudaMemcpyDeviceToHost));
  const bool same = h == 0;
  CHECK(cudaFree(d));
  return same;
}

// ---------------------------------------------------------------- elementwise
template <typename T, int kVec>
struct alignas(sizeof(T) * kVec) Vec {
  T v[kVec];
};

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
template <typename T>
__device__ __forceinline__ T from_f(float v);
template <>
__device__ __forceinline__ float from_f<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_f<__half>(float v) { return __float2half_rn(v); }

// out = a * x + b  (two inputs, one output)
template <typename T>
struct Axpby {
  static constexpr int kInputs = 2;
  float a;
  __device__ float operator()(float x, float b) const { return a * x + b; }
};
// out = max(x, 0)  (one input)
template <typename T>
struct Relu {
  static constexpr int kInputs = 1;
  __device__ float operator()(float x, float) const { return x > 0.f ? x : 0.f; }
};

// V0: the current template: grid-stride, one vector per thread per step, 8 blocks/SM.
// V1: grid-stride, kUnroll vectors per thread per step, all loads issued before use.
// V2: one block per tile of kThreads * kUnroll vectors (no persistent loop).
template <typename T, typename F, int kUnroll, bool kPersistent, bool kStreaming>
__global__ void __launch_bounds__(256) ew_kernel(const T* __restrict__ x, const T* __restrict__ y,
                                                 T* __restrict__ out, int64_t n, F f) {
  constexpr int kVec = 16 / sizeof(T);
  using V = Vec<T, kVec>;
  const int64_t n_vec = n / kVec;
  const int64_t tile = int64_t(blockDim.x) * kUnroll;
  const int64_t first_tile = blockIdx.x;
  // Full grid: each block one tile (the loop runs once).
  const int64_t last_tile = kPersistent ? (n_vec + tile - 1) / tile : first_tile + 1;
  for (int64_t t = first_tile; t < last_tile && t * tile < n_vec; t += gridDim.x) {
    const int64_t base = t * tile + threadIdx.x;
    V xv[kUnroll], yv[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + int64_t(u) * blockDim.x;
      if (i < n_vec) {
        xv[u] = reinterpret_cast<const V*>(x)[i];
        if (F::kInputs == 2) yv[u] = reinterpret_cast<const V*>(y)[i];
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int64_t i = base + int64_t(u) * blockDim.x;
      if (i < n_vec) {
        V o;
#pragma unroll
        for (int k = 0; k < kVec; ++k)
          o.v[k] = from_f<T>(f(to_f(xv[u].v[k]), F::kInputs == 2 ? to_f(yv[u].v[k]) : 0.f));
        if (kStreaming) {
          // st.global.cs: evict-first, the output is not read again by this kernel.
          __stcs(reinterpret_cast<float4*>(out) + i, *reinterpret_cast<float4*>(&o));
        } else {
          reinterpret_cast<V*>(out)[i] = o;
        }
      }
    }
  }
}

template <typename T, typename F, int kUnroll, bool kPersistent, bool kStreaming>
void launch_ew(const T* x, const T* y, T* out, int64_t n, F f) {
  constexpr int kVec = 16 / sizeof(T);
  const int64_t tiles = (n / kVec + 256 * kUnroll - 1) / (256 * kUnroll);
  const int64_t most = kPersistent ? int64_t(g_sms) * 8 : tiles;
  const int blocks = int(std::min(tiles, most));
  ew_kernel<T, F, kUnroll, kPersistent, kStreaming><<<blocks, 256>>>(x, y, out, n, f);
}

template <typename T, typename F>
void bench_elementwise(const char* name, int64_t n, F f) {
  T *x, *y, *out, *ref;
  const size_t bytes = n * sizeof(T);
  CHECK(cudaMalloc(&x, bytes));
  CHECK(cudaMalloc(&y, bytes));
  CHECK(cudaMalloc(&out, bytes));
  CHECK(cudaMalloc(&ref, bytes));
  fill<<<1024, 256>>>(x, n, 1);
  fill<<<1024, 256>>>(y, n, 2);
  const double moved = double(bytes) * (F::kInputs + 1);
  const float copy = median_ms([&] { CHECK(cudaMemcpyAsync(out, x, bytes, cudaMemcpyDeviceToDevice)); });
  const double copy_bw = 2.0 * bytes / copy / 1e6;
  std::printf("%-8s %-6s n=2^%d copy %.1f us = %.0f GB/s\n", name, sizeof(T) == 4 ? "f32" : "f16",
              int(std::log2(double(n))), copy * 1e3, copy_bw);
  launch_ew<T, F, 1, true, false>(x, y, ref, n, f);
  struct Variant {
    const char* label;
    std::function<void()> run;
  };
  std::vector<Variant> variants = {
      {"V0 persistent u1", [&] { launch_ew<T, F, 1, true, false>(x, y, out, n, f); }},
      {"V1 persistent u2", [&] { launch_ew<T, F, 2, true, false>(x, y, out, n, f); }},
      {"V1 persistent u4", [&] { launch_ew<T, F, 4, true, false>(x, y, out, n, f); }},
      {"V2 full grid u1", [&] { launch_ew<T, F, 1, false, false>(x, y, out, n, f); }},
      {"V2 full grid u2", [&] { launch_ew<T, F, 2, false, false>(x, y, out, n, f); }},
      {"V2 full grid u4", [&] { launch_ew<T, F, 4, false, false>(x, y, out, n, f); }},
      {"V3 full u4 stcs", [&] { launch_ew<T, F, 4, false, true>(x, y, out, n, f); }},
      {"V3 pers u4 stcs", [&] { launch_ew<T, F, 4, true, true>(x, y, out, n, f); }},
  };
  for (auto& v : variants) {
    CHECK(cudaMemset(out, 0xff, bytes));
    v.run();
    CHECK(cudaDeviceSynchronize());
    const bool same = same_bytes(out, ref, bytes);
    const float ms = median_ms(v.run);
    std::printf("  %-18s %9.1f us %6.0f GB/s %5.1f%% copy %s\n", v.label, ms * 1e3,
                moved / ms / 1e6, 100.0 * (moved / ms / 1e6) / copy_bw, same ? "" : "MISMATCH");
  }
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  CHECK(cudaFree(out));
  CHECK(cudaFree(ref));
}

// ---------------------------------------------------------------- pixels (rgb -> gray)
__device__ __forceinline__ uint8_t gray(uint8_t r, uint8_t g, uint8_t b) {
  return uint8_t(0.299f * r + 0.587f * g + 0.114f * b);
}

// P0: the current template, one pixel (3 byte loads) per thread per step.
__global__ void __launch_bounds__(256) rgb_p0(const uint8_t* __restrict__ in, uint8_t* __restrict__ out,
                                              int64_t n) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const uint8_t* p = in + 3 * i;
    out[i] = gray(p[0], p[1], p[2]);
  }
}

// P1: 16 pixels per thread: three 16-byte loads, one 16-byte store.
template <bool kPersistent>
__global__ void __launch_bounds__(256) rgb_p1(const uint8_t* __restrict__ in, uint8_t* __restrict__ out,
                                              int64_t n) {
  constexpr int kPix = 16;
  const int64_t groups = n / kPix;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const int64_t end = kPersistent ? groups : (first + 1 < groups ? first + 1 : groups);
  for (int64_t g = first; g < end; g += stride) {
    Vec<uint8_t, 16> v[3];
#pragma unroll
    for (int c = 0; c < 3; ++c) v[c] = reinterpret_cast<const Vec<uint8_t, 16>*>(in)[3 * g + c];
    const uint8_t* bytes = &v[0].v[0];
    Vec<uint8_t, 16> o;
#pragma unroll
    for (int p = 0; p < kPix; ++p) o.v[p] = gray(bytes[3 * p], bytes[3 * p + 1], bytes[3 * p + 2]);
    reinterpret_cast<Vec<uint8_t, 16>*>(out)[g] = o;
  }
}

// P2: P1 staged through shared memory: the block loads its 256*48 bytes coalesced as
// 16-byte vectors, then each thread reads its 48 bytes from shared memory.
__global__ void __launch_bounds__(256) rgb_p2(const uint8_t* __restrict__ in, uint8_t* __restrict__ out,
                                              int64_t n) {
  constexpr int kPix = 16;
  __shared__ Vec<uint8_t, 16> stage[256 * 3];
  const int64_t groups = n / kPix;
  for (int64_t g0 = int64_t(blockIdx.x) * blockDim.x; g0 < groups; g0 += int64_t(gridDim.x) * blockDim.x) {
    const int64_t vecs = (groups - g0 < 256 ? groups - g0 : 256) * 3;
    for (int j = threadIdx.x; j < vecs; j += blockDim.x)
      stage[j] = reinterpret_cast<const Vec<uint8_t, 16>*>(in)[3 * g0 + j];
    __syncthreads();
    if (g0 + threadIdx.x < groups) {
      const uint8_t* bytes = &stage[3 * threadIdx.x].v[0];
      Vec<uint8_t, 16> o;
#pragma unroll
      for (int p = 0; p < kPix; ++p) o.v[p] = gray(bytes[3 * p], bytes[3 * p + 1], bytes[3 * p + 2]);
      reinterpret_cast<Vec<uint8_t, 16>*>(out)[g0 + threadIdx.x] = o;
    }
    __syncthreads();
  }
}

void bench_rgb(int64_t n) {
  uint8_t *in, *out, *ref;
  CHECK(cudaMalloc(&in, 3 * n));
  CHECK(cudaMalloc(&out, n));
  CHECK(cudaMalloc(&ref, n));
  fill<<<1024, 256>>>(in, 3 * n, 3);
  const float copy = median_ms([&] { CHECK(cudaMemcpyAsync(ref, in, n, cudaMemcpyDeviceToDevice)); });
  uint8_t* big;
  CHECK(cudaMalloc(&big, 3 * n));
  const float copy4 = median_ms([&] { CHECK(cudaMemcpyAsync(big, in, 2 * n, cudaMemcpyDeviceToDevice)); });
  CHECK(cudaFree(big));
  const double copy_bw = 4.0 * n / copy4 / 1e6;
  std::printf("rgb_to_gray n=%lld pixels: copy of 2n bytes %.1f us = %.0f GB/s (n bytes: %.1f us)\n",
              (long long)n, copy4 * 1e3, copy_bw, copy * 1e3);
  const int persistent = g_sms * 8;
  rgb_p0<<<persistent, 256>>>(in, ref, n);
  struct Variant {
    const char* label;
    std::function<void()> run;
  };
  const int full = int((n / 16 + 255) / 256);
  std::vector<Variant> variants = {
      {"P0 pixel/thread", [&] { rgb_p0<<<persistent, 256>>>(in, out, n); }},
      {"P1 16px pers", [&] { rgb_p1<true><<<persistent, 256>>>(in, out, n); }},
      {"P1 16px full", [&] { rgb_p1<false><<<full, 256>>>(in, out, n); }},
      {"P2 16px smem", [&] { rgb_p2<<<persistent, 256>>>(in, out, n); }},
  };
  for (auto& v : variants) {
    CHECK(cudaMemset(out, 0x5a, n));
    v.run();
    CHECK(cudaDeviceSynchronize());
    const bool same = same_bytes(out, ref, n);
    const float ms = median_ms(v.run);
    std::printf("  %-18s %9.1f us %6.0f GB/s %5.1f%% copy %s\n", v.label, ms * 1e3, 4.0 * n / ms / 1e6,
                100.0 * (4.0 * n / ms / 1e6) / copy_bw, same ? "" : "MISMATCH");
  }
  CHECK(cudaFree(in));
  CHECK(cudaFree(out));
  CHECK(cudaFree(ref));
}

int main() {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  CHECK(cudaDeviceGetAttribute(&g_sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs, L2 %d MB\n", prop.name, g_sms, prop.l2CacheSize >> 20);
  bench_elementwise<float>("axpby", int64_t(1) << 28, Axpby<float>{1.5f});
  bench_elementwise<float>("relu", int64_t(1) << 28, Relu<float>{});
  bench_elementwise<__half>("axpby", int64_t(1) << 28, Axpby<__half>{1.5f});
  bench_elementwise<__half>("relu", int64_t(1) << 28, Relu<__half>{});
  bench_rgb(int64_t(4096) * 4096);
  bench_rgb(int64_t(1) << 28);
  return 0;
}
