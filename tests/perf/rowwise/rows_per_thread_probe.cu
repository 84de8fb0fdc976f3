// rows_per_thread_probe.cu: do R rows a block, held by the same threads, close LayerNorm's
// forward gap on the H200 (bf16 0.84 of a copy at 4096^2 and 4096 x 16384, where RMSNorm and
// softmax reach 0.92-0.99)? A standalone probe, not the library: rows of exactly
// BLOCK * VPT * VEC columns, 16-byte aligned.
//
// Each block holds R rows in registers; thread t owns the same VPT 16-byte vectors of each
// of them (columns (i * BLOCK + t) * VEC..). So one load of a weight or bias vector serves
// R rows, one barrier per stage reduces R rows, and a thread has R * VPT loads in flight
// before its first use. R = 1 is the library's block-per-row layout.
//
//   ln:  mean, then the mean of squared deviations (two stages), y = (x - mu) * rstd * w + b
//   rms: the mean of squares (one stage), y = x * rstd * w
//   sm:  max, then the sum of exp(x - m) (two stages), y = exp(x - m) / s
//
// Packed 16-bit words are XORed with an opaque zero in each pass (as row_kernels.cuh does),
// so the compiler re-extracts floats per pass instead of keeping them all alive.
// Timing: median of REPS launches, each after 256 MB are zeroed (L2 cleared, as triton's
// do_bench), CUDA events around the kernel alone; a copy of the same bytes (x read, y
// written: cudaMemcpy and a copy kernel, the faster) timed the same way; fraction = copy
// time / kernel time. Rows 0, 1 and rows - 1 are checked against the host.
//
// nvcc -O3 -std=c++17 -arch=sm_90 rows_per_thread_probe.cu -o probe && ./probe [reps]
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../bench_common.cuh"  // CHECK, Timer, copy_kernel
#include "row_reference.h"     // reference_row

template <class T>
struct TI;
template <>
struct TI<float> {
  static constexpr int V = 4;
  static constexpr const char* name = "float32";
  __device__ static float get(uint4 u, int e, uint32_t) {
    const uint32_t w = e == 0 ? u.x : e == 1 ? u.y : e == 2 ? u.z : u.w;
    return __uint_as_float(w);
  }
  __device__ static uint4 pack(const float (&f)[4]) {
    return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]),
                      __float_as_uint(f[3]));
  }
  static float to_host(float v) { return v; }
  static float from_host(float v) { return v; }
};
template <>
struct TI<__nv_bfloat16> {
  static constexpr int V = 8;
  static constexpr const char* name = "bfloat16";
  __device__ static float get(uint4 u, int e, uint32_t z) {
    const uint32_t w = (e >> 1) == 0 ? u.x : (e >> 1) == 1 ? u.y : (e >> 1) == 2 ? u.z : u.w;
    const uint32_t v = w ^ z;
    return __uint_as_float((e & 1) ? (v & 0xffff0000u) : (v << 16));
  }
  __device__ static uint4 pack(const float (&f)[8]) {
    uint32_t w[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      __nv_bfloat162 h = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
      w[i] = *reinterpret_cast<uint32_t*>(&h);
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
  }
  static float to_host(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __nv_bfloat16 from_host(float v) { return __float2bfloat16(v); }
};

__device__ __forceinline__ uint32_t opaque_zero() {
  uint32_t z;
  asm volatile("mov.u32 %0, 0;" : "=r"(z));
  return z;
}
__device__ __forceinline__ float fast_exp(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x * 1.4426950408889634f));
  return r;
}

// Every thread gets the block's R sums (or maxima); one barrier, slots alternate by `slot`.
template <int BLOCK, int R, bool MAX>
__device__ __forceinline__ void block_all(float (&v)[R], float (*sm)[R][BLOCK / 32], int slot) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
      const float u = __shfl_xor_sync(0xffffffffu, v[r], o);
      v[r] = MAX ? fmaxf(v[r], u) : v[r] + u;
    }
  if constexpr (BLOCK > 32) {
    if (lane == 0)
#pragma unroll
      for (int r = 0; r < R; ++r) sm[slot][r][warp] = v[r];
    __syncthreads();
#pragma unroll
    for (int r = 0; r < R; ++r) {
      float a = sm[slot][r][0];
#pragma unroll
      for (int w = 1; w < BLOCK / 32; ++w) a = MAX ? fmaxf(a, sm[slot][r][w]) : a + sm[slot][r][w];
      v[r] = a;
    }
  }
}

enum Mode { kLN = 0, kRMS = 1, kSM = 2 };
static const char* mode_name[] = {"ln", "rms", "sm"};

template <class T, int BLOCK, int VPT, int R, int MODE>
__global__ void __launch_bounds__(BLOCK) rows_kernel(const T* __restrict__ x,
                                                     const T* __restrict__ w,
                                                     const T* __restrict__ b, T* __restrict__ y,
                                                     int64_t rows, float eps) {
  constexpr int VEC = TI<T>::V;
  constexpr int N = BLOCK * VPT * VEC;
  __shared__ float sm[2][R][BLOCK / 32];
  const int t = threadIdx.x;
  const int64_t row0 = (int64_t)blockIdx.x * R;
  uint4 xr[R][VPT];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const bool ok = row0 + r < rows;
    const uint4* xp = reinterpret_cast<const uint4*>(x + (ok ? row0 + r : 0) * N);
#pragma unroll
    for (int i = 0; i < VPT; ++i) xr[r][i] = ok ? __ldg(xp + i * BLOCK + t) : make_uint4(0, 0, 0, 0);
  }
  float a[R], c[R];  // the rows' two statistics: mean & rstd, - & rstd, max & 1/sum
  {
    float s[R];
    const uint32_t z = opaque_zero();
#pragma unroll
    for (int r = 0; r < R; ++r) {
      s[r] = MODE == kSM ? -INFINITY : 0.f;
#pragma unroll
      for (int i = 0; i < VPT; ++i)
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          const float f = TI<T>::get(xr[r][i], e, z);
          if (MODE == kLN) s[r] += f;
          if (MODE == kRMS) s[r] += f * f;
          if (MODE == kSM) s[r] = fmaxf(s[r], f);
        }
    }
    block_all<BLOCK, R, MODE == kSM>(s, sm, 0);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (MODE == kLN) a[r] = s[r] * (1.f / N);
      if (MODE == kRMS) c[r] = rsqrtf(s[r] * (1.f / N) + eps);
      if (MODE == kSM) a[r] = s[r];
    }
  }
  if (MODE != kRMS) {
    float s[R];
    const uint32_t z = opaque_zero();
#pragma unroll
    for (int r = 0; r < R; ++r) {
      s[r] = 0.f;
#pragma unroll
      for (int i = 0; i < VPT; ++i)
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          const float f = TI<T>::get(xr[r][i], e, z);
          if (MODE == kLN) s[r] += (f - a[r]) * (f - a[r]);
          if (MODE == kSM) s[r] += fast_exp(f - a[r]);
        }
    }
    block_all<BLOCK, R, false>(s, sm, 1);
#pragma unroll
    for (int r = 0; r < R; ++r) c[r] = MODE == kLN ? rsqrtf(s[r] * (1.f / N) + eps) : 1.f / s[r];
  }
  const uint32_t z = opaque_zero();
  const uint4* wv = reinterpret_cast<const uint4*>(w + z);
  const uint4* bv = reinterpret_cast<const uint4*>(b + z);
#pragma unroll
  for (int i = 0; i < VPT; ++i) {
    uint4 wr = make_uint4(0, 0, 0, 0), br = make_uint4(0, 0, 0, 0);
    if (MODE != kSM) wr = __ldg(wv + i * BLOCK + t);
    if (MODE == kLN) br = __ldg(bv + i * BLOCK + t);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      if (row0 + r >= rows) continue;
      float o[VEC];
#pragma unroll
      for (int e = 0; e < VEC; ++e) {
        const float f = TI<T>::get(xr[r][i], e, z);
        if (MODE == kLN) o[e] = (f - a[r]) * c[r] * TI<T>::get(wr, e, 0) + TI<T>::get(br, e, 0);
        if (MODE == kRMS) o[e] = f * c[r] * TI<T>::get(wr, e, 0);
        if (MODE == kSM) o[e] = fast_exp(f - a[r]) * c[r];
      }
      reinterpret_cast<uint4*>(y + (row0 + r) * N)[i * BLOCK + t] = TI<T>::pack(o);
    }
  }
}


struct Data {
  void *x, *w, *b, *y;
  int64_t rows;
  int N;
  float copy_us;
};

template <class T, int BLOCK, int VPT, int R, int MODE>
void run_one(Timer& tm, const Data& d, const std::vector<T>& hx, const std::vector<T>& hw,
             const std::vector<T>& hb) {
  if constexpr (VPT < 1) return;  // no such layout: N / VEC < BLOCK
  else {
  constexpr int N = BLOCK * VPT * TI<T>::V;
  if (N != d.N) return;
  const T *x = (const T*)d.x, *w = (const T*)d.w, *b = (const T*)d.b;
  T* y = (T*)d.y;
  const int64_t blocks = (d.rows + R - 1) / R;
  CHECK(cudaMemset(y, 0xff, d.rows * (size_t)N * sizeof(T)));  // poisoned: NaN
  auto launch = [&] {
    rows_kernel<T, BLOCK, VPT, R, MODE><<<(unsigned)blocks, BLOCK>>>(x, w, b, y, d.rows, 1e-5f);
  };
  const float us = tm.median_us(launch);
  cudaFuncAttributes attr;
  CHECK(cudaFuncGetAttributes(&attr, rows_kernel<T, BLOCK, VPT, R, MODE>));
  int per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, rows_kernel<T, BLOCK, VPT, R, MODE>,
                                                      BLOCK, 0));
  double worst = 0;
  std::vector<T> got(N);
  std::vector<double> want;
  for (int64_t row : {int64_t(0), int64_t(1), d.rows - 1}) {
    CHECK(cudaMemcpy(got.data(), y + row * N, N * sizeof(T), cudaMemcpyDeviceToHost));
    reference_row<TI<T>>(MODE == kLN ? RowOp::kLayerNorm : MODE == kRMS ? RowOp::kRmsNorm : RowOp::kSoftmax,
                         hx, hw, hb, row, N, 1e-5f, want);
    for (int i = 0; i < N; ++i) {
      const double g = TI<T>::to_host(got[i]);
      const double err = std::fabs(g - want[i]) / (1e-2 + std::fabs(want[i]));
      if (!(err <= worst)) worst = std::isnan(err) ? INFINITY : std::max(worst, err);
    }
  }
  std::printf("%-4s %-8s %6lldx%-6d block %4d vpt %d R %d  regs %3d spill %3d blocks/SM %2d  %7.1f us  %.3f of copy%s\n",
              mode_name[MODE], TI<T>::name, (long long)d.rows, N, BLOCK, VPT, R, attr.numRegs,
              (int)attr.localSizeBytes, per_sm, us, d.copy_us / us,
              worst > (sizeof(T) == 2 ? 2e-2 : 1e-4) ? "  WRONG" : "");
  }
}

// The layouts of one row length: BLOCK * VPT = N / VEC, R rows a block.
template <class T, int MODE, int BV>
void layouts(Timer& tm, const Data& d, const std::vector<T>& hx, const std::vector<T>& hw,
             const std::vector<T>& hb) {
#define RPT_RUN(B, V)                                                    \
  if constexpr (B * V == BV && B >= 64 && B <= 1024) {                   \
    run_one<T, B, V, 1, MODE>(tm, d, hx, hw, hb);                        \
    run_one<T, B, V, 2, MODE>(tm, d, hx, hw, hb);                        \
    if constexpr (V <= 4) run_one<T, B, V, 4, MODE>(tm, d, hx, hw, hb);  \
  }
  RPT_RUN(64, BV / 64)
  RPT_RUN(128, BV / 128)
  RPT_RUN(256, BV / 256)
  RPT_RUN(512, BV / 512)
  RPT_RUN(1024, BV / 1024)
#undef RPT_RUN
}

template <class T>
void shape(Timer& tm, int64_t rows, int N, const char* modes) {
  const size_t n = (size_t)rows * N;
  std::vector<T> hx(n), hw(N), hb(N);
  uint64_t s = 12345;
  auto rnd = [&] {  // uniform in [-1, 1), xorshift
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return (s >> 11) * (1.0 / 9007199254740992.0) * 2 - 1;
  };
  for (size_t i = 0; i < n; ++i) hx[i] = TI<T>::from_host(float(3 * rnd() + 0.5));
  for (int i = 0; i < N; ++i) hw[i] = TI<T>::from_host(float(1 + 0.5 * rnd()));
  for (int i = 0; i < N; ++i) hb[i] = TI<T>::from_host(float(0.5 * rnd()));
  Data d;
  d.rows = rows;
  d.N = N;
  CHECK(cudaMalloc(&d.x, n * sizeof(T)));
  CHECK(cudaMalloc(&d.y, n * sizeof(T)));
  CHECK(cudaMalloc(&d.w, N * sizeof(T)));
  CHECK(cudaMalloc(&d.b, N * sizeof(T)));
  CHECK(cudaMemcpy(d.x, hx.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d.w, hw.data(), N * sizeof(T), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d.b, hb.data(), N * sizeof(T), cudaMemcpyHostToDevice));
  const size_t nvec = n * sizeof(T) / 16;
  const float kernel_copy = tm.median_us(
      [&] { copy_kernel<T><<<132 * 16, 256>>>((const uint4*)d.x, (uint4*)d.y, nvec); });
  const float memcpy_copy = tm.median_us(
      [&] { CHECK(cudaMemcpyAsync(d.y, d.x, n * sizeof(T), cudaMemcpyDeviceToDevice)); });
  d.copy_us = std::min(kernel_copy, memcpy_copy);
  std::printf("# %s %lldx%d: copy kernel %.1f us, cudaMemcpy %.1f us\n", TI<T>::name,
              (long long)rows, N, kernel_copy, memcpy_copy);
  constexpr int V = TI<T>::V;
  for (const char* m = modes; *m; ++m) {
    const int mode = *m == 'l' ? kLN : *m == 'r' ? kRMS : kSM;
    if (N == 4096) {
      if (mode == kLN) layouts<T, kLN, 4096 / V>(tm, d, hx, hw, hb);
      if (mode == kRMS) layouts<T, kRMS, 4096 / V>(tm, d, hx, hw, hb);
      if (mode == kSM) layouts<T, kSM, 4096 / V>(tm, d, hx, hw, hb);
    } else if (N == 16384) {
      if (mode == kLN) layouts<T, kLN, 16384 / V>(tm, d, hx, hw, hb);
      if (mode == kRMS) layouts<T, kRMS, 16384 / V>(tm, d, hx, hw, hb);
      if (mode == kSM) layouts<T, kSM, 16384 / V>(tm, d, hx, hw, hb);
    }
  }
  CHECK(cudaFree(d.x));
  CHECK(cudaFree(d.y));
  CHECK(cudaFree(d.w));
  CHECK(cudaFree(d.b));
}

int main(int argc, char** argv) {
  Timer tm(argc > 1 ? std::atoi(argv[1]) : 25);
  const char* modes = argc > 2 ? argv[2] : "lrs";
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# %s, %d SMs, modes %s\n", prop.name, prop.multiProcessorCount, modes);
  const int64_t shapes[][2] = {{4096, 4096}, {32768, 4096}, {4096, 16384}};
  for (auto& sh : shapes) shape<__nv_bfloat16>(tm, sh[0], (int)sh[1], modes);
  for (auto& sh : shapes) shape<float>(tm, sh[0], (int)sh[1], modes);
  return 0;
}
