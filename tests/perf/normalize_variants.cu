// normalize_variants.cu: kernel shapes for normalize_volume (uint16 -> float32, x / d with
// IEEE division), timed side by side against a device copy of the same bytes.
//
//   nvcc -O3 --fmad=false -std=c++17 -gencode=arch=compute_90,code=sm_90 \
//        -o nv normalize_variants.cu && ./nv
//
// --fmad=false as the op is built (it is generated with --exact). Each variant is timed with
// CUDA events (median of 50 after a warm-up) and its output compared bit for bit with the
// first variant's. Two kinds of rows: shapes of the generic template kernel, whose
// arithmetic is whatever the op's formula compiles to (here `x / d`, an IEEE division per
// element), and two rows that change the arithmetic, to bound what any shape can reach:
// no arithmetic at all (only the conversion) and a multiply by 1/d (not exact).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "bench_common.cuh"

static int g_sms = 0;

// The median of a launch's times over 50 runs.
float median_ms(const std::function<void()>& fn) { return median_ms(fn, 50); }

template <typename In>
__global__ void fill(In* p, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = In((uint32_t(i) * 2654435761u) >> 16);
}
__global__ void count_diff(const uint32_t* a, const uint32_t* b, int64_t n, unsigned long long* diff) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    if (a[i] != b[i]) atomicAdd(diff, 1ull);
}
unsigned long long diff_count(const float* a, const float* b, int64_t n) {
  unsigned long long* d;
  CHECK(cudaMalloc(&d, 8));
  CHECK(cudaMemset(d, 0, 8));
  count_diff<<<1024, 256>>>(reinterpret_cast<const uint32_t*>(a), reinterpret_cast<const uint32_t*>(b), n, d);
  unsigned long long h = 1;
  CHECK(cudaMemcpy(&h, d, 8, cudaMemcpyDeviceToHost));
  CHECK(cudaFree(d));
  return h;
}

template <typename T, int kVec>
struct alignas(sizeof(T) * kVec < 16 ? sizeof(T) * kVec : 16) Vec {
  T v[kVec];
};

// The arithmetic per element.
enum class Math { kDivide, kConvertOnly, kMultiplyReciprocal };
template <Math kMath, typename In>
__device__ __forceinline__ float apply(In x, float d, float r) {
  const float xf = static_cast<float>(x);
  if constexpr (kMath == Math::kDivide) return xf / d;
  if constexpr (kMath == Math::kConvertOnly) return xf;
  return xf * r;
}

template <int kElems, Math kMath, typename In>
__device__ __forceinline__ void one_vector(const In* __restrict__ in, float* __restrict__ out, int64_t i,
                                           float d, float r) {
  const Vec<In, kElems> x = reinterpret_cast<const Vec<In, kElems>*>(in)[i];
  Vec<float, kElems> y;
#pragma unroll
  for (int k = 0; k < kElems; ++k) y.v[k] = apply<kMath, In>(x.v[k], d, r);
  reinterpret_cast<Vec<float, kElems>*>(out)[i] = y;
}

// C: grid covers the work, one vector of kElems per thread; the loop is the template's
// grid-stride loop (`#pragma unroll 1`), which runs once.
template <int kElems, Math kMath, typename In>
__global__ void __launch_bounds__(256) cover(const In* __restrict__ in, float* __restrict__ out,
                                             int64_t n_vec, float d, float r) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
#pragma unroll 1
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n_vec; i += stride)
    one_vector<kElems, kMath, In>(in, out, i, d, r);
}

// T: each thread takes kPer vectors, kPer apart by blockDim (coalesced), all loads issued
// before the first division.
template <int kElems, int kPer, Math kMath, typename In>
__global__ void __launch_bounds__(256) tile(const In* __restrict__ in, float* __restrict__ out,
                                            int64_t n_vec, float d, float r) {
  const int64_t base = int64_t(blockIdx.x) * blockDim.x * kPer + threadIdx.x;
  Vec<In, kElems> x[kPer];
#pragma unroll
  for (int u = 0; u < kPer; ++u)
    if (base + u * blockDim.x < n_vec) x[u] = reinterpret_cast<const Vec<In, kElems>*>(in)[base + u * blockDim.x];
#pragma unroll
  for (int u = 0; u < kPer; ++u) {
    if (base + u * blockDim.x < n_vec) {
      Vec<float, kElems> y;
#pragma unroll
      for (int k = 0; k < kElems; ++k) y.v[k] = apply<kMath, In>(x[u].v[k], d, r);
      reinterpret_cast<Vec<float, kElems>*>(out)[base + u * blockDim.x] = y;
    }
  }
}

// P: persistent grid (8 blocks per SM), grid-stride loop as the compiler unrolls it
// (the template before the covering grid).
template <int kElems, Math kMath, typename In>
__global__ void __launch_bounds__(256) persistent(const In* __restrict__ in, float* __restrict__ out,
                                                  int64_t n_vec, float d, float r) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n_vec; i += stride)
    one_vector<kElems, kMath, In>(in, out, i, d, r);
}

// F: persistent grid, software pipelined: the next vector's load is issued before this
// vector's divisions, so a load is in flight while the thread computes.
template <int kElems, Math kMath, typename In>
__global__ void __launch_bounds__(256) prefetch(const In* __restrict__ in, float* __restrict__ out,
                                                int64_t n_vec, float d, float r) {
  using VIn = Vec<In, kElems>;
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n_vec) return;
  VIn next = reinterpret_cast<const VIn*>(in)[i];
#pragma unroll 1
  for (; i < n_vec; i += stride) {
    const VIn x = next;
    if (i + stride < n_vec) next = reinterpret_cast<const VIn*>(in)[i + stride];
    Vec<float, kElems> y;
#pragma unroll
    for (int k = 0; k < kElems; ++k) y.v[k] = apply<kMath, In>(x.v[k], d, r);
    reinterpret_cast<Vec<float, kElems>*>(out)[i] = y;
  }
}

int blocks_for(int64_t threads) { return int((threads + 255) / 256); }

// The rows of the first run (uint16 only) are in NOTES.md; this keeps the shapes that
// decided the template and adds uint8 input (4 bytes in, 16 out per 4 elements).
template <typename In>
void bench(int64_t n, float d) {
  In* in;
  float *out, *ref;
  CHECK(cudaMalloc(&in, n * sizeof(In)));
  CHECK(cudaMalloc(&out, n * 4));
  CHECK(cudaMalloc(&ref, n * 4));
  fill<<<1024, 256>>>(in, n);
  const float r = 1.0f / d;
  // The copy moves the op's bytes: half of them read, half written.
  const double moved = double(sizeof(In) + 4) * n;
  const float copy = median_ms([&] { CHECK(cudaMemcpyAsync(out, ref, size_t(moved / 2), cudaMemcpyDeviceToDevice)); });
  const double copy_bw = moved / copy / 1e6;
  std::printf("%s n=%lld d=%g: copy of the op's bytes %.1f us = %.0f GB/s\n", sizeof(In) == 1 ? "uint8" : "uint16",
              (long long)n, d, copy * 1e3, copy_bw);
  struct Variant {
    const char* label;
    std::function<void()> run;
  };
  constexpr Math kDiv = Math::kDivide;
  constexpr int kNarrow = 16 / sizeof(In);  // 16 bytes of the input per thread
  std::vector<Variant> variants = {
      {"C4  cover, 4/thread (16 B out)", [&] { cover<4, kDiv, In><<<blocks_for(n / 4), 256>>>(in, out, n / 4, d, r); }},
      {"Cn  cover, 16 B in/thread", [&] { cover<kNarrow, kDiv, In><<<blocks_for(n / kNarrow), 256>>>(in, out, n / kNarrow, d, r); }},
      {"T4x2 4/vec, 2 vec/thread", [&] { tile<4, 2, kDiv, In><<<blocks_for(n / 8), 256>>>(in, out, n / 4, d, r); }},
      {"T4x4 4/vec, 4 vec/thread", [&] { tile<4, 4, kDiv, In><<<blocks_for(n / 16), 256>>>(in, out, n / 4, d, r); }},
      {"P4  persistent 4", [&] { persistent<4, kDiv, In><<<g_sms * 8, 256>>>(in, out, n / 4, d, r); }},
      {"bound: C4 convert only", [&] { cover<4, Math::kConvertOnly, In><<<blocks_for(n / 4), 256>>>(in, out, n / 4, d, r); }},
      {"bound: Cn convert only", [&] { cover<kNarrow, Math::kConvertOnly, In><<<blocks_for(n / kNarrow), 256>>>(in, out, n / kNarrow, d, r); }},
  };
  for (size_t v = 0; v < variants.size(); ++v) {
    CHECK(cudaMemset(out, 0xff, n * 4));
    variants[v].run();
    CHECK(cudaDeviceSynchronize());
    if (v == 0) CHECK(cudaMemcpy(ref, out, n * 4, cudaMemcpyDeviceToDevice));
    const unsigned long long diff = diff_count(out, ref, n);
    const float ms = median_ms(variants[v].run);
    std::printf("  %-30s %8.1f us %6.0f GB/s %5.1f%% copy  %llu differ\n", variants[v].label, ms * 1e3,
                moved / ms / 1e6, 100.0 * (moved / ms / 1e6) / copy_bw, diff);
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
  std::printf("%s, %d SMs\n", prop.name, g_sms);
  bench<uint16_t>(int64_t(1) << 27, 4095.0f);  // 512^3, 12-bit data
  bench<uint16_t>(int64_t(1) << 28, 65535.0f);
  bench<uint8_t>(int64_t(1) << 28, 255.0f);
  return 0;
}
