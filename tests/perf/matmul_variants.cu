// matmul_variants.cu: the matmul kernel shapes tried for the template, against cuBLAS.
//
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -Xptxas -v -o mv matmul_variants.cu -lcublas
//
// float32, row-major A (M×K), B (K×N), C (M×N). Each variant is timed with CUDA events
// (median of 20 after a warm-up) and checked against cuBLAS (TF32 off) by
// ‖C − C_cublas‖ / ‖C_cublas‖. NOTES.md beside this holds the numbers and what was kept.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#if __has_include(<cublas_v2.h>)
#include <cublas_v2.h>
#define HAVE_CUBLAS 1
#endif

#include "bench_common.cuh"

// The median of a launch's times over 20 runs.
float median_ms(const std::function<void()>& fn) { return median_ms(fn, 20); }

// ---------------------------------------------------------------- M0: the current template
namespace m0 {
constexpr int kTile = 64, kDepth = 16, kThreadsPerSide = 16, kPer = 4;
__global__ void __launch_bounds__(256) kernel(const float* __restrict__ a, const float* __restrict__ b,
                                              float* __restrict__ c, int64_t m, int64_t n, int64_t k) {
  __shared__ float a_tile[kDepth][kTile + 1];
  __shared__ float b_tile[kDepth][kTile + 1];
  const int tx = threadIdx.x % kThreadsPerSide, ty = threadIdx.x / kThreadsPerSide;
  const int64_t row0 = int64_t(blockIdx.y) * kTile, col0 = int64_t(blockIdx.x) * kTile;
  float sum[kPer][kPer] = {};
  for (int64_t k0 = 0; k0 < k; k0 += kDepth) {
    for (int e = threadIdx.x; e < kTile * kDepth; e += 256) {
      const int row = e / kDepth, kk = e % kDepth;
      const int64_t gr = row0 + row, gk = k0 + kk;
      a_tile[kk][row] = gr < m && gk < k ? a[gr * k + gk] : 0.f;
    }
    for (int e = threadIdx.x; e < kTile * kDepth; e += 256) {
      const int kk = e / kTile, col = e % kTile;
      const int64_t gk = k0 + kk, gc = col0 + col;
      b_tile[kk][col] = gk < k && gc < n ? b[gk * n + gc] : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kDepth; ++kk) {
      float af[kPer], bf[kPer];
#pragma unroll
      for (int i = 0; i < kPer; ++i) af[i] = a_tile[kk][ty + i * kThreadsPerSide];
#pragma unroll
      for (int j = 0; j < kPer; ++j) bf[j] = b_tile[kk][tx + j * kThreadsPerSide];
#pragma unroll
      for (int i = 0; i < kPer; ++i)
#pragma unroll
        for (int j = 0; j < kPer; ++j) sum[i][j] += af[i] * bf[j];
    }
    __syncthreads();
  }
  for (int i = 0; i < kPer; ++i)
    for (int j = 0; j < kPer; ++j) {
      const int64_t row = row0 + ty + i * kThreadsPerSide, col = col0 + tx + j * kThreadsPerSide;
      if (row < m && col < n) c[row * n + col] = sum[i][j];
    }
}
void launch(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
  dim3 grid(unsigned((n + 63) / 64), unsigned((m + 63) / 64));
  kernel<<<grid, 256>>>(a, b, c, m, n, k);
}
}  // namespace m0

// ---------------------------------------------------------------- M1: register-blocked
// A block of 256 threads computes a 128×128 tile of C; each thread an 8×8 sub-tile made of
// four 4×4 pieces 64 rows/columns apart (so that a warp's 16-byte shared-memory reads are
// consecutive or broadcast: no bank conflicts). K advances kDepth at a time through two
// shared-memory buffers: the next tile's global loads are issued into registers before the
// current tile's arithmetic and stored to the other buffer after it, one barrier per step.
// A's tile is stored transposed (k-major) so that both operands are read as 16-byte vectors.
namespace m1 {
template <int kDepth>
struct Shape {
  static constexpr int kTile = 128, kThreads = 256, kPer = 8, kHalf = 64;
  static constexpr int kALoads = kTile * kDepth / kThreads;  // A elements per thread per step
  static constexpr int kBLoads = kDepth * kTile / kThreads;
};

template <int kDepth, int kMinBlocks>
__global__ void __launch_bounds__(256, kMinBlocks) kernel(const float* __restrict__ a, const float* __restrict__ b,
                                              float* __restrict__ c, int64_t m, int64_t n, int64_t k) {
  using S = Shape<kDepth>;
  __shared__ alignas(16) float a_tile[2][kDepth][S::kTile];
  __shared__ alignas(16) float b_tile[2][kDepth][S::kTile];
  const int t = threadIdx.x;
  const int tx = t % 16, ty = t / 16;
  const int64_t row0 = int64_t(blockIdx.y) * S::kTile, col0 = int64_t(blockIdx.x) * S::kTile;

  // Which elements this thread loads: A as kALoads consecutive k of one row, B as kBLoads
  // consecutive columns of one k-row: a warp reads whole 32-byte sectors of A and 512
  // contiguous bytes of B.
  constexpr int kAThreadsPerRow = kDepth / S::kALoads;
  const int a_row = t / kAThreadsPerRow, a_k = (t % kAThreadsPerRow) * S::kALoads;
  constexpr int kBThreadsPerRow = S::kTile / S::kBLoads;
  const int b_k = t / kBThreadsPerRow, b_col = (t % kBThreadsPerRow) * S::kBLoads;
  float a_next[S::kALoads], b_next[S::kBLoads];
  auto load = [&](int64_t k0) {
    const int64_t gr = row0 + a_row;
#pragma unroll
    for (int i = 0; i < S::kALoads; ++i) {
      const int64_t gk = k0 + a_k + i;
      a_next[i] = gr < m && gk < k ? a[gr * k + gk] : 0.f;
    }
    const int64_t gk = k0 + b_k;
#pragma unroll
    for (int j = 0; j < S::kBLoads; ++j) {
      const int64_t gc = col0 + b_col + j;
      b_next[j] = gk < k && gc < n ? b[gk * n + gc] : 0.f;
    }
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int i = 0; i < S::kALoads; ++i) a_tile[buf][a_k + i][a_row] = a_next[i];
#pragma unroll
    for (int j = 0; j < S::kBLoads; ++j) b_tile[buf][b_k][b_col + j] = b_next[j];
  };

  float sum[S::kPer][S::kPer] = {};
  load(0);
  store(0);
  __syncthreads();
  int buf = 0;
  for (int64_t k0 = 0; k0 < k; k0 += kDepth) {
    const bool more = k0 + kDepth < k;
    if (more) load(k0 + kDepth);
#pragma unroll
    for (int kk = 0; kk < kDepth; ++kk) {
      float af[S::kPer], bf[S::kPer];
      *reinterpret_cast<float4*>(&af[0]) = *reinterpret_cast<const float4*>(&a_tile[buf][kk][ty * 4]);
      *reinterpret_cast<float4*>(&af[4]) = *reinterpret_cast<const float4*>(&a_tile[buf][kk][S::kHalf + ty * 4]);
      *reinterpret_cast<float4*>(&bf[0]) = *reinterpret_cast<const float4*>(&b_tile[buf][kk][tx * 4]);
      *reinterpret_cast<float4*>(&bf[4]) = *reinterpret_cast<const float4*>(&b_tile[buf][kk][S::kHalf + tx * 4]);
#pragma unroll
      for (int i = 0; i < S::kPer; ++i)
#pragma unroll
        for (int j = 0; j < S::kPer; ++j) sum[i][j] += af[i] * bf[j];
    }
    if (more) {
      store(buf ^ 1);
      __syncthreads();
      buf ^= 1;
    }
  }
  // Rows ty*4 + {0..3} and 64 + ty*4 + {0..3}; columns likewise with tx.
#pragma unroll
  for (int i = 0; i < S::kPer; ++i) {
    const int64_t row = row0 + (i / 4) * S::kHalf + ty * 4 + i % 4;
    if (row >= m) continue;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int64_t col = col0 + half * S::kHalf + tx * 4;
      float* out = c + row * n + col;
      if (col + 3 < n && reinterpret_cast<uintptr_t>(out) % 16 == 0) {
        *reinterpret_cast<float4*>(out) = *reinterpret_cast<const float4*>(&sum[i][half * 4]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (col + j < n) out[j] = sum[i][half * 4 + j];
      }
    }
  }
}
template <int kDepth, int kMinBlocks>
void launch(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
  dim3 grid(unsigned((n + 127) / 128), unsigned((m + 127) / 128));
  kernel<kDepth, kMinBlocks><<<grid, 256>>>(a, b, c, m, n, k);
}
}  // namespace m1


// ---------------------------------------------------------------- M2: M1, plus
// - a 64-row tile (128 threads) for products whose 128×128 grid would leave SMs idle;
// - pointer increments instead of 64-bit index products per load;
// - 16-byte global loads without bounds checks where the block's whole step is in range and
//   rows are 16-byte aligned (a uniform branch); scalar checked loads at the edges.
namespace m2 {
constexpr int kDepth = 8;
template <int kThreadsM, int kMinBlocks>
__global__ void __launch_bounds__(16 * kThreadsM, kMinBlocks) kernel(
    const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int64_t m,
    int64_t n, int64_t k, bool aligned) {
  constexpr int kThreads = 16 * kThreadsM, kTileM = 8 * kThreadsM, kTileN = 128;
  constexpr int kHalfM = 4 * kThreadsM, kHalfN = 64;
  constexpr int kBLoads = kDepth * kTileN / kThreads;  // 4 or 8
  static_assert(kTileM * kDepth / kThreads == 4, "one float4 of A per thread per step");
  __shared__ alignas(16) float a_tile[2][kDepth][kTileM];
  __shared__ alignas(16) float b_tile[2][kDepth][kTileN];
  const int t = threadIdx.x;
  const int tx = t % 16, ty = t / 16;
  const int64_t row0 = int64_t(blockIdx.y) * kTileM, col0 = int64_t(blockIdx.x) * kTileN;
  const int a_row = t / 2, a_k = (t % 2) * 4;
  constexpr int kBThreadsPerRow = kTileN / kBLoads;
  const int b_k = t / kBThreadsPerRow, b_col = (t % kBThreadsPerRow) * kBLoads;
  const bool a_row_in = row0 + a_row < m;
  const float* a_ptr = a + (a_row_in ? (row0 + a_row) * k : 0) + a_k;
  const float* b_ptr = b + int64_t(b_k) * n + col0 + b_col;
  const bool block_in = aligned && row0 + kTileM <= m && col0 + kTileN <= n;
  float a_next[4], b_next[kBLoads];
  auto load = [&](int64_t k0) {
    if (block_in && k0 + kDepth <= k) {
      *reinterpret_cast<float4*>(a_next) = __ldg(reinterpret_cast<const float4*>(a_ptr));
#pragma unroll
      for (int j = 0; j < kBLoads; j += 4)
        *reinterpret_cast<float4*>(&b_next[j]) = __ldg(reinterpret_cast<const float4*>(b_ptr + j));
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i) a_next[i] = a_row_in && k0 + a_k + i < k ? a_ptr[i] : 0.f;
      const bool b_row_in = k0 + b_k < k;
#pragma unroll
      for (int j = 0; j < kBLoads; ++j) b_next[j] = b_row_in && col0 + b_col + j < n ? b_ptr[j] : 0.f;
    }
    a_ptr += kDepth;
    b_ptr += kDepth * n;
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int i = 0; i < 4; ++i) a_tile[buf][a_k + i][a_row] = a_next[i];
#pragma unroll
    for (int j = 0; j < kBLoads; j += 4)
      *reinterpret_cast<float4*>(&b_tile[buf][b_k][b_col + j]) = *reinterpret_cast<const float4*>(&b_next[j]);
  };

  float sum[8][8] = {};
  load(0);
  store(0);
  __syncthreads();
  int buf = 0;
  for (int64_t k0 = 0; k0 < k; k0 += kDepth) {
    const bool more = k0 + kDepth < k;
    if (more) load(k0 + kDepth);
#pragma unroll
    for (int kk = 0; kk < kDepth; ++kk) {
      float af[8], bf[8];
      *reinterpret_cast<float4*>(&af[0]) = *reinterpret_cast<const float4*>(&a_tile[buf][kk][ty * 4]);
      *reinterpret_cast<float4*>(&af[4]) = *reinterpret_cast<const float4*>(&a_tile[buf][kk][kHalfM + ty * 4]);
      *reinterpret_cast<float4*>(&bf[0]) = *reinterpret_cast<const float4*>(&b_tile[buf][kk][tx * 4]);
      *reinterpret_cast<float4*>(&bf[4]) = *reinterpret_cast<const float4*>(&b_tile[buf][kk][kHalfN + tx * 4]);
#pragma unroll
      for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) sum[i][j] += af[i] * bf[j];
    }
    if (more) {
      store(buf ^ 1);
      __syncthreads();
      buf ^= 1;
    }
  }
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int64_t row = row0 + (i / 4) * kHalfM + ty * 4 + i % 4;
    if (row >= m) continue;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int64_t col = col0 + half * kHalfN + tx * 4;
      float* out = c + row * n + col;
      if (col + 3 < n && reinterpret_cast<uintptr_t>(out) % 16 == 0) {
        *reinterpret_cast<float4*>(out) = *reinterpret_cast<const float4*>(&sum[i][half * 4]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (col + j < n) out[j] = sum[i][half * 4 + j];
      }
    }
  }
}
template <int kThreadsM, int kMinBlocks>
void launch(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
  constexpr int kTileM = 8 * kThreadsM;
  const bool aligned = k % 4 == 0 && n % 4 == 0 && reinterpret_cast<uintptr_t>(a) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(b) % 16 == 0;
  dim3 grid(unsigned((n + 127) / 128), unsigned((m + kTileM - 1) / kTileM));
  kernel<kThreadsM, kMinBlocks><<<grid, 16 * kThreadsM>>>(a, b, c, m, n, k, aligned);
}
}  // namespace m2

double rel_err(const float* x, const float* ref, int64_t count) {
  std::vector<float> hx(count), hr(count);
  CHECK(cudaMemcpy(hx.data(), x, count * 4, cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(hr.data(), ref, count * 4, cudaMemcpyDeviceToHost));
  double num = 0, den = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double d = double(hx[i]) - hr[i];
    num += d * d;
    den += double(hr[i]) * hr[i];
  }
  const double e = std::sqrt(num / den);
  return std::isfinite(e) ? e : 1e30;
}

void bench(int64_t m, int64_t k, int64_t n) {
  float *a, *b, *c, *ref;
  CHECK(cudaMalloc(&a, m * k * 4));
  CHECK(cudaMalloc(&b, k * n * 4));
  CHECK(cudaMalloc(&c, m * n * 4));
  CHECK(cudaMalloc(&ref, m * n * 4));
  {
    std::vector<float> h(std::max(m * k, k * n));
    uint32_t s = 12345;
    for (auto& v : h) {
      s = s * 1664525u + 1013904223u;
      v = float(s >> 8) / float(1 << 24) * 2.f - 1.f;
    }
    CHECK(cudaMemcpy(a, h.data(), m * k * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b, h.data(), k * n * 4, cudaMemcpyHostToDevice));
  }
  const double flops = 2.0 * m * n * k;
  std::printf("M×K×N = %lld×%lld×%lld\n", (long long)m, (long long)k, (long long)n);
  std::function<void()> reference = [&] { m0::launch(a, b, ref, m, n, k); };
#ifdef HAVE_CUBLAS
  cublasHandle_t handle;
  cublasCreate(&handle);
  cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH);  // no TF32
  const float one = 1.f, zero = 0.f;
  // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ.
  reference = [&] {
    cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, int(n), int(m), int(k), &one, b, int(n), a, int(k),
                &zero, ref, int(n));
  };
  const float cublas_ms = median_ms(reference);
  std::printf("  %-22s %9.1f us %6.1f TFLOP/s\n", "cuBLAS", cublas_ms * 1e3, flops / cublas_ms / 1e9);
#else
  const float cublas_ms = 0;
#endif
  reference();
  CHECK(cudaDeviceSynchronize());
  struct Variant {
    const char* label;
    std::function<void()> run;
  };
  std::vector<Variant> variants = {
      {"M0 64x64 4x4 (now)", [&] { m0::launch(a, b, c, m, n, k); }},
      {"M1 128x128 8x8 k8", [&] { m1::launch<8, 1>(a, b, c, m, n, k); }},
      {"M1 k8 2 blocks/SM", [&] { m1::launch<8, 2>(a, b, c, m, n, k); }},
      {"M2 128x128 2/SM", [&] { m2::launch<16, 2>(a, b, c, m, n, k); }},
      {"M2 128x128 1/SM", [&] { m2::launch<16, 1>(a, b, c, m, n, k); }},
      {"M2 64x128 2/SM", [&] { m2::launch<8, 2>(a, b, c, m, n, k); }},
      {"M2 64x128 4/SM", [&] { m2::launch<8, 4>(a, b, c, m, n, k); }},
  };
  for (auto& v : variants) {
    CHECK(cudaMemset(c, 0xff, m * n * 4));  // NaN: an unwritten element fails the check
    v.run();
    CHECK(cudaDeviceSynchronize());
    const double err = rel_err(c, ref, m * n);
    const float ms = median_ms(v.run);
    std::printf("  %-22s %9.1f us %6.1f TFLOP/s %5.1f%% cuBLAS  err %.1e %s\n", v.label, ms * 1e3,
                flops / ms / 1e9, cublas_ms > 0 ? 100.0 * cublas_ms / ms : 0.0, err,
                err < 1e-5 ? "" : "WRONG");
  }
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(c));
  CHECK(cudaFree(ref));
}

int main() {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s\n", prop.name);
  bench(1024, 1024, 1024);
  bench(4096, 4096, 4096);
  bench(2048, 2048, 2048);
  bench(3072, 3072, 3072);
  bench(4099, 1027, 2053);
  bench(1000, 1000, 1000);
  bench(257, 33, 65);
  bench(1, 1, 1);
  return 0;
}
