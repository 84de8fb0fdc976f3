// looped_probe.cu: is torch.compile's kernel shape (one small block a row, the row read in
// chunks by a loop per stage, the later reads hitting L2) reachable in CUDA, for the H200 goal
// cells our register-held rows miss (LayerNorm bf16 at 4096^2 and 4096 x 16384, float
// softmax at 16384)? A standalone probe, not the library: rows of N % (16 / sizeof(T)) == 0,
// 16-byte aligned. Each kernel is one block a row (grid = rows, as Inductor's), BLOCK
// threads, U 16-byte vectors a thread in flight per loop step.
//
//   layernorm3: mean, then the squared deviations, then the output: three reads of x
//   layernorm2: one Welford-style read (each thread merges (count, mean, M2) chunk by chunk,
//               Chan's formula, one division a chunk), then the output: two reads
//   rmsnorm:    the sum of squares, then the output: two reads
//   softmax3:   max, sum of exp, output: three reads
//
// HINT 1 loads the first read with an L2 evict_last policy and the last with evict_first
// (Inductor's eviction_policy), weight and bias evict_last; HINT 0 leaves L2 to itself.
// Timing: median of REPS launches, each after 256 MB are zeroed (L2 cleared, as triton's
// do_bench), cudaEvents around the kernel alone; a copy of the same bytes (x read, y
// written) timed the same way; fraction = copy time / kernel time.
//
// nvcc -O3 -std=c++17 -arch=sm_90 looped_probe.cu -o looped_probe && ./looped_probe
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
  __device__ static void unpack(uint4 u, float (&f)[4]) {
    f[0] = __uint_as_float(u.x), f[1] = __uint_as_float(u.y);
    f[2] = __uint_as_float(u.z), f[3] = __uint_as_float(u.w);
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
  __device__ static void unpack(uint4 u, float (&f)[8]) {
    const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      f[2 * i] = __uint_as_float(w[i] << 16);
      f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    }
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

__device__ __forceinline__ uint64_t policy_last() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}
__device__ __forceinline__ uint64_t policy_first() {
  uint64_t p;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
template <int HINT>
__device__ __forceinline__ uint4 ld(const uint4* a, uint64_t pol) {
  uint4 v;
  if (HINT) {
    asm volatile("ld.global.nc.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(a), "l"(pol));
  } else {
    v = __ldg(a);
  }
  return v;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Every thread gets the block's sum (or max); one barrier (smem slots alternate by `slot`).
template <int BLOCK, bool MAX>
__device__ __forceinline__ float block_all(float v, float (*sm)[BLOCK / 32], int slot) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = MAX ? warp_max(v) : warp_sum(v);
  if (lane == 0) sm[slot][warp] = v;
  __syncthreads();
  float t = lane < BLOCK / 32 ? sm[slot][lane] : (MAX ? -INFINITY : 0.f);
  return MAX ? warp_max(t) : warp_sum(t);
}

__device__ __forceinline__ float fast_exp(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x * 1.4426950408889634f));
  return r;
}

enum Mode { kLN3 = 0, kLN2 = 1, kRMS = 2, kSM3 = 3 };
static const char* mode_name[] = {"layernorm3", "layernorm2", "rmsnorm", "softmax3"};

// Runs fn(f, v) on each of this thread's vectors of the row, U loads issued before any use.
template <class T, int BLOCK, int U, int HINT, class Fn>
__device__ __forceinline__ void each_vector(const uint4* xr, int nv, uint64_t pol, Fn&& fn) {
  constexpr int VEC = TI<T>::V;
  for (int v0 = threadIdx.x; v0 < nv; v0 += BLOCK * U) {
    uint4 r[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (v0 + u * BLOCK < nv) r[u] = ld<HINT>(xr + v0 + u * BLOCK, pol);
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (v0 + u * BLOCK < nv) {
        float f[VEC];
        TI<T>::unpack(r[u], f);
        fn(f, v0 + u * BLOCK);
      }
  }
}

template <class T, int BLOCK, int U, int MODE, int HINT>
__global__ void __launch_bounds__(BLOCK) looped(const T* __restrict__ x, const T* __restrict__ w,
                                                const T* __restrict__ b, T* __restrict__ y, int N,
                                                float eps) {
  constexpr int VEC = TI<T>::V;
  __shared__ float sm[4][BLOCK / 32];
  const int nv = N / VEC;
  const uint4* xr = reinterpret_cast<const uint4*>(x + (size_t)blockIdx.x * N);
  uint4* yr = reinterpret_cast<uint4*>(y + (size_t)blockIdx.x * N);
  const uint4* wv = reinterpret_cast<const uint4*>(w);
  const uint4* bv = reinterpret_cast<const uint4*>(b);
  const uint64_t last = HINT ? policy_last() : 0, first = HINT ? policy_first() : 0;
  float a = 0.f, c = 0.f;  // the row's two statistics (mean & rstd, max & 1/sum, -, rstd)
  if (MODE == kLN3) {
    float s = 0.f;
    each_vector<T, BLOCK, U, HINT>(xr, nv, last, [&](const float(&f)[VEC], int) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) s += f[e];
    });
    a = block_all<BLOCK, false>(s, sm, 0) / N;
    float q = 0.f;
    each_vector<T, BLOCK, U, HINT>(xr, nv, last, [&](const float(&f)[VEC], int) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) q += (f[e] - a) * (f[e] - a);
    });
    c = rsqrtf(block_all<BLOCK, false>(q, sm, 1) / N + eps);
  } else if (MODE == kLN2) {
    // Chan: this thread's (count, mean, M2), merged with each vector's own.
    float cnt = 0.f, mean = 0.f, m2 = 0.f;
    each_vector<T, BLOCK, U, HINT>(xr, nv, last, [&](const float(&f)[VEC], int) {
      float s = 0.f;
#pragma unroll
      for (int e = 0; e < VEC; ++e) s += f[e];
      const float vm = s * (1.f / VEC);
      float vq = 0.f;
#pragma unroll
      for (int e = 0; e < VEC; ++e) vq += (f[e] - vm) * (f[e] - vm);
      const float n2 = cnt + VEC, d = vm - mean, r = VEC / n2;  // one division a vector
      mean += d * r;
      m2 += vq + d * d * cnt * r;
      cnt = n2;
    });
    // The block's mean from the sums (exact), then each thread's M2 moved to it.
    const float total = block_all<BLOCK, false>(mean * cnt, sm, 0) / N;
    const float d = mean - total;
    const float m2_all = block_all<BLOCK, false>(m2 + cnt * d * d, sm, 1);
    a = total;
    c = rsqrtf(m2_all / N + eps);
  } else if (MODE == kRMS) {
    float q = 0.f;
    each_vector<T, BLOCK, U, HINT>(xr, nv, last, [&](const float(&f)[VEC], int) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) q += f[e] * f[e];
    });
    c = rsqrtf(block_all<BLOCK, false>(q, sm, 0) / N + eps);
  } else {
    float m = -INFINITY;
    each_vector<T, BLOCK, U, HINT>(xr, nv, last, [&](const float(&f)[VEC], int) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) m = fmaxf(m, f[e]);
    });
    a = block_all<BLOCK, true>(m, sm, 0);
    float s = 0.f;
    each_vector<T, BLOCK, U, HINT>(xr, nv, last, [&](const float(&f)[VEC], int) {
#pragma unroll
      for (int e = 0; e < VEC; ++e) s += fast_exp(f[e] - a);
    });
    c = 1.f / block_all<BLOCK, false>(s, sm, 1);
  }
  // The output read: x again (evict_first), with weight and bias.
  for (int v0 = threadIdx.x; v0 < nv; v0 += BLOCK * U) {
    uint4 r[U], rw[U], rb[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (v0 + u * BLOCK < nv) {
        r[u] = ld<HINT>(xr + v0 + u * BLOCK, first);
        if (MODE != kSM3) rw[u] = ld<HINT>(wv + v0 + u * BLOCK, last);
        if (MODE == kLN3 || MODE == kLN2) rb[u] = ld<HINT>(bv + v0 + u * BLOCK, last);
      }
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (v0 + u * BLOCK < nv) {
        float f[VEC], fw[VEC], fb[VEC], o[VEC];
        TI<T>::unpack(r[u], f);
        if (MODE != kSM3) TI<T>::unpack(rw[u], fw);
        if (MODE == kLN3 || MODE == kLN2) TI<T>::unpack(rb[u], fb);
#pragma unroll
        for (int e = 0; e < VEC; ++e) {
          if (MODE == kRMS)
            o[e] = f[e] * c * fw[e];
          else if (MODE == kSM3)
            o[e] = fast_exp(f[e] - a) * c;
          else
            o[e] = (f[e] - a) * c * fw[e] + fb[e];
        }
        yr[v0 + u * BLOCK] = TI<T>::pack(o);
      }
  }
}


template <class T, int BLOCK, int U, int MODE, int HINT>
void run_one(Timer& tm, const T* x, const T* w, const T* b, T* y, int rows, int N, float copy_us,
             const std::vector<T>& hx, const std::vector<T>& hw, const std::vector<T>& hb) {
  if (N / TI<T>::V < BLOCK) return;  // a thread without a vector: not a layout for this row
  auto launch = [&] { looped<T, BLOCK, U, MODE, HINT><<<rows, BLOCK>>>(x, w, b, y, N, 1e-5f); };
  const float us = tm.median_us(launch);
  // Check rows 0 and rows - 1 against the host.
  double worst = 0;
  std::vector<T> got(N);
  std::vector<float> want;
  for (size_t row : {size_t(0), size_t(rows - 1)}) {
    CHECK(cudaMemcpy(got.data(), y + row * N, N * sizeof(T), cudaMemcpyDeviceToHost));
    reference_row<TI<T>>(MODE == kSM3 ? RowOp::kSoftmax : MODE == kRMS ? RowOp::kRmsNorm : RowOp::kLayerNorm,
                         hx, hw, hb, row, N, 1e-5f, want);
    for (int i = 0; i < N; ++i) {
      const double g = TI<T>::to_host(got[i]);
      const double err = std::fabs(g - want[i]) / (1e-3 + std::fabs(want[i]));
      worst = std::max(worst, err);
    }
  }
  std::printf("%-10s %-8s %6dx%-6d block %4d U %d hint %d  %7.1f us  copy %7.1f us  %.3f of copy%s\n",
              mode_name[MODE], TI<T>::name, rows, N, BLOCK, U, HINT, us, copy_us, copy_us / us,
              worst > (sizeof(T) == 2 ? 2e-2 : 1e-4) ? "  WRONG" : "");
}

template <class T, int MODE, int HINT>
void sweep(Timer& tm, const T* x, const T* w, const T* b, T* y, int rows, int N, float copy_us,
           const std::vector<T>& hx, const std::vector<T>& hw, const std::vector<T>& hb) {
  run_one<T, 128, 2, MODE, HINT>(tm, x, w, b, y, rows, N, copy_us, hx, hw, hb);
  run_one<T, 128, 4, MODE, HINT>(tm, x, w, b, y, rows, N, copy_us, hx, hw, hb);
  run_one<T, 256, 1, MODE, HINT>(tm, x, w, b, y, rows, N, copy_us, hx, hw, hb);
  run_one<T, 256, 2, MODE, HINT>(tm, x, w, b, y, rows, N, copy_us, hx, hw, hb);
  run_one<T, 256, 4, MODE, HINT>(tm, x, w, b, y, rows, N, copy_us, hx, hw, hb);
  run_one<T, 512, 1, MODE, HINT>(tm, x, w, b, y, rows, N, copy_us, hx, hw, hb);
  run_one<T, 512, 2, MODE, HINT>(tm, x, w, b, y, rows, N, copy_us, hx, hw, hb);
  run_one<T, 1024, 1, MODE, HINT>(tm, x, w, b, y, rows, N, copy_us, hx, hw, hb);
}

template <class T>
void shape(Timer& tm, int rows, int N, const char* modes) {
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
  T *x, *w, *b, *y;
  CHECK(cudaMalloc(&x, n * sizeof(T)));
  CHECK(cudaMalloc(&y, n * sizeof(T)));
  CHECK(cudaMalloc(&w, N * sizeof(T)));
  CHECK(cudaMalloc(&b, N * sizeof(T)));
  CHECK(cudaMemcpy(x, hx.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(w, hw.data(), N * sizeof(T), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, hb.data(), N * sizeof(T), cudaMemcpyHostToDevice));
  const size_t nvec = n * sizeof(T) / 16;
  const float kernel_copy = tm.median_us(
      [&] { copy_kernel<T><<<132 * 16, 256>>>((const uint4*)x, (uint4*)y, nvec); });
  const float memcpy_copy =
      tm.median_us([&] { CHECK(cudaMemcpyAsync(y, x, n * sizeof(T), cudaMemcpyDeviceToDevice)); });
  const float copy_us = std::min(kernel_copy, memcpy_copy);
  std::printf("# %s %dx%d: copy kernel %.1f us, cudaMemcpy %.1f us\n", TI<T>::name, rows, N,
              kernel_copy, memcpy_copy);
  for (const char* m = modes; *m; ++m) {
    switch (*m) {
      case '3': sweep<T, kLN3, 0>(tm, x, w, b, y, rows, N, copy_us, hx, hw, hb);
                sweep<T, kLN3, 1>(tm, x, w, b, y, rows, N, copy_us, hx, hw, hb); break;
      case '2': sweep<T, kLN2, 0>(tm, x, w, b, y, rows, N, copy_us, hx, hw, hb);
                sweep<T, kLN2, 1>(tm, x, w, b, y, rows, N, copy_us, hx, hw, hb); break;
      case 'r': sweep<T, kRMS, 0>(tm, x, w, b, y, rows, N, copy_us, hx, hw, hb);
                sweep<T, kRMS, 1>(tm, x, w, b, y, rows, N, copy_us, hx, hw, hb); break;
      case 's': sweep<T, kSM3, 0>(tm, x, w, b, y, rows, N, copy_us, hx, hw, hb);
                sweep<T, kSM3, 1>(tm, x, w, b, y, rows, N, copy_us, hx, hw, hb); break;
    }
  }
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
  CHECK(cudaFree(w));
  CHECK(cudaFree(b));
}

int main(int argc, char** argv) {
  const char* modes = argc > 1 ? argv[1] : "32rs";
  Timer tm(argc > 2 ? std::atoi(argv[2]) : 25);
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# %s, modes %s\n", prop.name, modes);
  const int shapes[][2] = {{4096, 4096}, {32768, 4096}, {4096, 16384}};
  for (auto& sh : shapes) shape<__nv_bfloat16>(tm, sh[0], sh[1], modes);
  for (auto& sh : shapes) shape<float>(tm, sh[0], sh[1], modes);
  return 0;
}
