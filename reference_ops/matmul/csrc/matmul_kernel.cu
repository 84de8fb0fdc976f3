// matmul_kernel.cu: the CUDA kernels of matmul and their launchers.
//
// Pure CUDA on raw pointers: no torch headers, so this file compiles in about a second
// and editing a kernel rebuilds quickly. csrc/matmul.cpp checks the inputs, makes
// them contiguous, picks the dtype and passes the current stream.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_pipeline.h>
#include <mma.h>

#include <atomic>
#include <cstdint>
#include <type_traits>

#include "matmul_kernel.h"

namespace matmul {
namespace {

// Arithmetic happens in Acc<T>: double where the input or the output is double, float
// for everything else (float, the half types, integers).
template <typename T>
using Acc =
    std::conditional_t<std::is_same_v<T, double> || std::is_same_v<Out<T>, double>, double, float>;

// Explicit conversions: torch compiles CUDA code with __CUDA_NO_HALF_CONVERSIONS__ and
// __CUDA_NO_BFLOAT16_CONVERSIONS__, so the half types have no implicit casts.
__device__ __forceinline__ float to_acc(float v) { return v; }
__device__ __forceinline__ double to_acc(double v) { return v; }
__device__ __forceinline__ float to_acc(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_acc(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename I>  // integers
__device__ __forceinline__ float to_acc(I v) {
  return static_cast<float>(v);
}

// To an output element; to integers by truncation toward zero, as C++ converts.
template <typename O, typename A>
__device__ __forceinline__ O from_acc(A v) {
  return static_cast<O>(v);
}
template <>
__device__ __forceinline__ __half from_acc<__half, float>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_acc<__nv_bfloat16, float>(float v) {
  return __float2bfloat16_rn(v);
}

// kVec elements that move as one unit: one load or store of up to 16 bytes, or several
// 16-byte ones for a wider type.
template <typename T, int kVec>
struct alignas(sizeof(T) * kVec < 16 ? sizeof(T) * kVec : 16) Vec {
  T v[kVec];
};

// C = A · B for row-major A (M×K), B (K×N) and C (M×N); csrc/matmul.cpp makes the
// inputs contiguous. Register-blocked: each thread computes an 8×8 piece of C, so every
// element read from shared memory feeds 8 multiply-adds. A block of 16 × kThreadsM
// threads computes a (8·kThreadsM)×128 tile, stepping over K kDepth at a time through two
// shared-memory buffers: the next step's global loads are issued into registers before
// the current step's arithmetic and written to the other buffer after it, one barrier per
// step. Out-of-range elements load as zero and are never stored: any M, N, K works.
// Measured on an H200 against cuBLAS (TF32 off): the project's benchmark prints both.
constexpr int kDepth = 8;
constexpr int kTileN = 128;

template <typename T, int kThreadsM>
__global__ void __launch_bounds__(16 * kThreadsM)
    matmul_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int64_t m,
                  int64_t n, int64_t k, bool aligned) {
  using A = Acc<T>;
  constexpr int kThreads = 16 * kThreadsM, kTileM = 8 * kThreadsM;
  // A thread's 8 rows are two runs of 4, kHalfM apart, and likewise its columns: a warp's
  // 4-wide shared-memory reads are then consecutive or identical (no bank conflicts).
  constexpr int kHalfM = kTileM / 2, kHalfN = kTileN / 2;
  constexpr int kBLoads = kDepth * kTileN / kThreads;  // B elements a thread loads per step
  static_assert(kTileM * kDepth / kThreads == 4, "each thread loads 4 elements of A per step");
  // A's tile is stored k-major (transposed) so that both operands are read 4 at a time.
  __shared__ Vec<A, 4> a_tile[2][kDepth][kTileM / 4];
  __shared__ Vec<A, 4> b_tile[2][kDepth][kTileN / 4];
  const int t = threadIdx.x;
  const int tx = t % 16, ty = t / 16;
  const int64_t row0 = int64_t(blockIdx.y) * kTileM, col0 = int64_t(blockIdx.x) * kTileN;

  // What this thread loads each step: 4 consecutive k of one row of A (a warp reads whole
  // 32-byte sectors) and kBLoads consecutive columns of one row of B (a warp reads
  // contiguous rows).
  const int a_row = t / 2, a_k = (t % 2) * 4;
  constexpr int kBThreadsPerRow = kTileN / kBLoads;
  const int b_k = t / kBThreadsPerRow, b_col = (t % kBThreadsPerRow) * kBLoads;
  const bool a_row_in = row0 + a_row < m;
  const T* a_ptr = a + (a_row_in ? (row0 + a_row) * k : 0) + a_k;
  const T* b_ptr = b + int64_t(b_k) * n + col0 + b_col;
  // Whole vector loads without bounds checks where the block's rows and columns are all in
  // range and rows start 4-element aligned; scalar, checked loads at the edges.
  const bool block_in = aligned && row0 + kTileM <= m && col0 + kTileN <= n;
  A a_next[4], b_next[kBLoads];
  auto load = [&](int64_t k0) {
    if (block_in && k0 + kDepth <= k) {
      const Vec<T, 4> av = *reinterpret_cast<const Vec<T, 4>*>(a_ptr);
#pragma unroll
      for (int i = 0; i < 4; ++i) a_next[i] = to_acc(av.v[i]);
#pragma unroll
      for (int j = 0; j < kBLoads; j += 4) {
        const Vec<T, 4> bv = *reinterpret_cast<const Vec<T, 4>*>(b_ptr + j);
#pragma unroll
        for (int i = 0; i < 4; ++i) b_next[j + i] = to_acc(bv.v[i]);
      }
    } else {
#pragma unroll
      for (int i = 0; i < 4; ++i)
        a_next[i] = a_row_in && k0 + a_k + i < k ? to_acc(a_ptr[i]) : A(0);
      const bool b_row_in = k0 + b_k < k;
#pragma unroll
      for (int j = 0; j < kBLoads; ++j) {
        b_next[j] = b_row_in && col0 + b_col + j < n ? to_acc(b_ptr[j]) : A(0);
      }
    }
    a_ptr += kDepth;
    b_ptr += kDepth * n;
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int i = 0; i < 4; ++i) a_tile[buf][a_k + i][a_row / 4].v[a_row % 4] = a_next[i];
#pragma unroll
    for (int j = 0; j < kBLoads; j += 4) {
      b_tile[buf][b_k][(b_col + j) / 4] =
          Vec<A, 4>{{b_next[j], b_next[j + 1], b_next[j + 2], b_next[j + 3]}};
    }
  };

  A sum[8][8] = {};
  load(0);
  store(0);
  __syncthreads();
  int buf = 0;
  for (int64_t k0 = 0; k0 < k; k0 += kDepth) {
    const bool more = k0 + kDepth < k;
    if (more) load(k0 + kDepth);
#pragma unroll
    for (int kk = 0; kk < kDepth; ++kk) {
      const Vec<A, 4> a_lo = a_tile[buf][kk][ty], a_hi = a_tile[buf][kk][kHalfM / 4 + ty];
      const Vec<A, 4> b_lo = b_tile[buf][kk][tx], b_hi = b_tile[buf][kk][kHalfN / 4 + tx];
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const A a_i = i < 4 ? a_lo.v[i] : a_hi.v[i - 4];
#pragma unroll
        for (int j = 0; j < 8; ++j) sum[i][j] += a_i * (j < 4 ? b_lo.v[j] : b_hi.v[j - 4]);
      }
    }
    if (more) {
      store(buf ^ 1);
      __syncthreads();
      buf ^= 1;
    }
  }
  // Rows ty·4 + {0..3} and kHalfM + ty·4 + {0..3}; columns likewise with tx and kHalfN.
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int64_t row = row0 + (i / 4) * kHalfM + ty * 4 + i % 4;
    if (row >= m) continue;
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      const int64_t col = col0 + half * kHalfN + tx * 4;
      T* out = c + row * n + col;
      Vec<T, 4> o;
#pragma unroll
      for (int j = 0; j < 4; ++j) o.v[j] = from_acc<T>(sum[i][half * 4 + j]);
      if (col + 3 < n && reinterpret_cast<uintptr_t>(out) % alignof(Vec<T, 4>) == 0) {
        *reinterpret_cast<Vec<T, 4>*>(out) = o;
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          if (col + j < n) out[j] = o.v[j];
        }
      }
    }
  }
}

// float16 and bfloat16 on tensor cores (compute capability 8.0 and up): nvcuda::wmma
// 16×16×16 products of half fragments, accumulated in float, as the CUDA-core kernel
// accumulates. On an H200, float16 at 4096³: 46% of cuBLAS; with 64×32 warp pieces and
// loads staged through registers 22%; on CUDA cores alone 4%.
// A block of kTileM / 32 warps computes a kTileM×128 tile of C, each warp a 64×64 piece
// (4×4 fragments: 16 products for every 8 fragment loads), stepping over K 32 at a time
// through two shared-memory buffers that cp.async fills directly from global memory, the
// next step's copies in flight while the current step's products run. It takes K and N
// that are multiples of 8 and 16-byte aligned matrices, so that each 8-element vector is
// wholly inside or outside the matrix (outside fills with zeros); other shapes go to the
// CUDA-core kernel. C leaves through a 16×16 float scratch per warp, converted and
// bounds-checked, so any M works.
namespace wmma = nvcuda::wmma;
constexpr int kTcTileN = 128;

template <typename T>
struct IsHalfType : std::false_type {};
template <>
struct IsHalfType<__half> : std::true_type {};
template <>
struct IsHalfType<__nv_bfloat16> : std::true_type {};

template <typename T, int kTileM>
__global__ void __launch_bounds__(kTileM)
    matmul_tc_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ c, int64_t m,
                     int64_t n, int64_t k, bool /*aligned: always, see matmul_cuda*/) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  constexpr int kThreads = kTileM, kDepth = 32;
  // Padding per shared-memory row, in elements: 16 bytes, so that the rows a fragment load
  // reads start in different banks.
  constexpr int kPad = 8;
  constexpr int kVec = 8;  // elements per 16-byte copy
  constexpr int kALd = kDepth + kPad, kBLd = kTcTileN + kPad;
  constexpr int kAVecsPerRow = kDepth / kVec, kBVecsPerRow = kTcTileN / kVec;
  constexpr int kACopies = kTileM * kAVecsPerRow / kThreads;  // per thread and step
  constexpr int kBCopies = kDepth * kBVecsPerRow / kThreads;
  static_assert(
      kACopies * kThreads == kTileM * kAVecsPerRow && kBCopies * kThreads == kDepth * kBVecsPerRow,
      "the threads copy whole tiles");
  __shared__ __align__(128) T a_tile[2][kTileM][kALd];
  __shared__ __align__(128) T b_tile[2][kDepth][kBLd];
  static_assert(sizeof(a_tile) >= kThreads / 32 * 256 * sizeof(float), "a_tile holds the scratch");
  const int t = threadIdx.x, warp = t / 32, lane = t % 32;
  const int warp_m = warp / 2, warp_n = warp % 2;  // the warp's 64×64 piece
  const int64_t row0 = int64_t(blockIdx.y) * kTileM, col0 = int64_t(blockIdx.x) * kTcTileN;

  // Copies step k0's tiles into buffer buf, asynchronously; vectors outside the matrices
  // read nothing and fill with zeros.
  auto copy_step = [&](int buf, int64_t k0) {
#pragma unroll
    for (int i = 0; i < kACopies; ++i) {
      const int v = t + i * kThreads, r = v / kAVecsPerRow, col = (v % kAVecsPerRow) * kVec;
      const bool in = row0 + r < m && k0 + col < k;
      __pipeline_memcpy_async(&a_tile[buf][r][col], in ? a + (row0 + r) * k + k0 + col : a, 16,
                              in ? 0 : 16);
    }
#pragma unroll
    for (int i = 0; i < kBCopies; ++i) {
      const int v = t + i * kThreads, r = v / kBVecsPerRow, col = (v % kBVecsPerRow) * kVec;
      const bool in = k0 + r < k && col0 + col < n;
      __pipeline_memcpy_async(&b_tile[buf][r][col], in ? b + (k0 + r) * n + col0 + col : b, 16,
                              in ? 0 : 16);
    }
    __pipeline_commit();
  };

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> sum[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) wmma::fill_fragment(sum[i][j], 0.0f);
  }
  copy_step(0, 0);
  int buf = 0;
  for (int64_t k0 = 0; k0 < k; k0 += kDepth, buf ^= 1) {
    // The other buffer was last read before the barrier that ended the previous step.
    if (k0 + kDepth < k) {
      copy_step(buf ^ 1, k0 + kDepth);
      __pipeline_wait_prior(1);  // this step's copies have landed, the next one's may not
    } else {
      __pipeline_wait_prior(0);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kDepth; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a_frag[4];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b_frag[4];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        wmma::load_matrix_sync(a_frag[i], &a_tile[buf][warp_m * 64 + i * 16][kk], kALd);
#pragma unroll
      for (int j = 0; j < 4; ++j)
        wmma::load_matrix_sync(b_frag[j], &b_tile[buf][kk][warp_n * 64 + j * 16], kBLd);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
#pragma unroll
        for (int j = 0; j < 4; ++j) wmma::mma_sync(sum[i][j], a_frag[i], b_frag[j], sum[i][j]);
      }
    }
    __syncthreads();
  }
  // With K = 0 the first copies were never waited for: they must land before a_tile
  // becomes the scratch below.
  __pipeline_wait_prior(0);
  __syncthreads();

  // Each fragment through the warp's scratch (in a_tile, free now): lane l writes 8
  // consecutive elements of row l / 2, one 16-byte store where they are in range and
  // aligned.
  float (*tile)[16] = reinterpret_cast<float (*)[16]>(&a_tile[0][0][0]) + warp * 16;
  const int r = lane / 2, col8 = (lane % 2) * 8;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      wmma::store_matrix_sync(&tile[0][0], sum[i][j], 16, wmma::mem_row_major);
      __syncwarp();
      const int64_t row = row0 + warp_m * 64 + i * 16 + r;
      const int64_t col = col0 + warp_n * 64 + j * 16 + col8;
      if (row < m) {
        Vec<T, kVec> o;
#pragma unroll
        for (int e = 0; e < kVec; ++e) o.v[e] = from_acc<T>(tile[r][col8 + e]);
        T* out = c + row * n + col;
        if (col + kVec <= n && reinterpret_cast<uintptr_t>(out) % 16 == 0) {
          *reinterpret_cast<Vec<T, kVec>*>(out) = o;
        } else {
#pragma unroll
          for (int e = 0; e < kVec; ++e) {
            if (col + e < n) out[e] = o.v[e];
          }
        }
      }
      __syncwarp();
    }
  }
#else
  // Compiled for a GPU without bfloat16 tensor cores: the launcher never runs this (see
  // tensor_cores_compiled_in); trap rather than return a wrong product if it ever did.
  __trap();
#endif
}

// Whether matmul_tc_kernel<T> runs on `device` with the tensor-core body: its code was
// generated for compute capability 8.0 or later (a build for 7.5 only, or PTX for 7.5
// that the driver compiles for a newer GPU, has the trapping body). Asked once per device.
template <typename T, int kTileM>
bool tensor_cores_compiled_in(int device) {
  constexpr int kDevices = 64;
  static std::atomic<int> known[kDevices];  // 0 unknown, 1 no, 2 yes
  if (device >= 0 && device < kDevices && known[device].load() != 0)
    return known[device].load() == 2;
  cudaFuncAttributes attributes;
  const cudaError_t err = cudaFuncGetAttributes(&attributes, matmul_tc_kernel<T, kTileM>);
  if (err != cudaSuccess) cudaGetLastError();  // no kernel image: the CUDA-core path reports it
  const bool yes = err == cudaSuccess && attributes.ptxVersion >= 80;
  if (device >= 0 && device < kDevices) known[device].store(yes ? 2 : 1);
  return yes;
}

// Whether 128-row tiles (else 64-row ones) compute an m×n product faster, by rounds of
// blocks: about two blocks of either kind run on a multiprocessor at once, and a 128-row
// block takes about as long as two 64-row ones while moving fewer bytes per product. So
// 128 rows unless 64-row blocks finish in fewer rounds. On an H200 against cuBLAS, float32,
// 128 rows against 64: 1024³ 58% / 93%, 2048³ 82 / 52,
// 3072³ 84 / 88, 4096³ 82 / 70, 4099×1027×2053 70 / 86, 1000³ 44 / 69: this picks the
// faster at each. The tensor-core kernel's tiles follow the same rule.
bool use_128_row_tiles(int64_t m, int64_t n, int multiprocessors) {
  const int64_t slots = 2 * int64_t(multiprocessors), col_tiles = (n + 127) / 128;
  const int64_t rounds_128 = (col_tiles * ((m + 127) / 128) + slots - 1) / slots;
  const int64_t rounds_64 = (col_tiles * ((m + 63) / 64) + slots - 1) / slots;
  return 2 * rounds_128 <= rounds_64;
}

}  // namespace

template <typename T>
cudaError_t matmul_cuda(const T* a, const T* b, T* c, int64_t m, int64_t n, int64_t k,
                        cudaStream_t stream) {
  if (m == 0 || n == 0) return cudaSuccess;
  int device = 0, multiprocessors = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) {
    err = cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, device);
  }
  if (err != cudaSuccess) return err;
  // gridDim.y holds at most 65535 blocks: taller products take one launch per 65535 row tiles.
  auto launch = [&](auto kernel, int threads, int64_t tile_m, int64_t tile_n, bool aligned) {
    const int64_t most_rows = 65535 * tile_m;
    for (int64_t row = 0; row < m; row += most_rows) {
      const int64_t rows = m - row < most_rows ? m - row : most_rows;
      const dim3 grid(unsigned((n + tile_n - 1) / tile_n), unsigned((rows + tile_m - 1) / tile_m));
      kernel<<<grid, threads, 0, stream>>>(a + row * k, b, c + row * n, rows, n, k, aligned);
      const cudaError_t launched = cudaGetLastError();
      if (launched != cudaSuccess) return launched;
    }
    return cudaSuccess;
  };
  if constexpr (IsHalfType<T>::value) {
    const bool vectors = k % 8 == 0 && n % 8 == 0 && reinterpret_cast<uintptr_t>(a) % 16 == 0 &&
                         reinterpret_cast<uintptr_t>(b) % 16 == 0;
    const bool big = use_128_row_tiles(m, n, multiprocessors);
    if (vectors && (big ? tensor_cores_compiled_in<T, 128>(device)
                        : tensor_cores_compiled_in<T, 64>(device))) {
      return big ? launch(matmul_tc_kernel<T, 128>, 128, 128, kTcTileN, true)
                 : launch(matmul_tc_kernel<T, 64>, 64, 64, kTcTileN, true);
    }
  }
  const bool aligned = k % 4 == 0 && n % 4 == 0 &&
                       reinterpret_cast<uintptr_t>(a) % alignof(Vec<T, 4>) == 0 &&
                       reinterpret_cast<uintptr_t>(b) % alignof(Vec<T, 4>) == 0;
  const bool big = use_128_row_tiles(m, n, multiprocessors);
  return big ? launch(matmul_kernel<T, 16>, 256, 128, kTileN, aligned)
             : launch(matmul_kernel<T, 8>, 128, 64, kTileN, aligned);
}

// The dtypes this op was generated for.
template cudaError_t matmul_cuda<float>(const float*, const float*, float*, int64_t, int64_t,
                                        int64_t, cudaStream_t);
template cudaError_t matmul_cuda<double>(const double*, const double*, double*, int64_t, int64_t,
                                         int64_t, cudaStream_t);
template cudaError_t matmul_cuda<__half>(const __half*, const __half*, __half*, int64_t, int64_t,
                                         int64_t, cudaStream_t);
template cudaError_t matmul_cuda<__nv_bfloat16>(const __nv_bfloat16*, const __nv_bfloat16*,
                                                __nv_bfloat16*, int64_t, int64_t, int64_t,
                                                cudaStream_t);

}  // namespace matmul
