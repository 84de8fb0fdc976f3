// Host checks that need no GPU: every launch path returns an error instead of failing
// silently (run on a machine without a GPU: the CUDA calls fail there, as they should).
//   nvcc -std=c++17 --expt-relaxed-constexpr -I. -gencode arch=compute_75,code=sm_75 \
//        check_host_errors.cu -o /tmp/check_host_errors && /tmp/check_host_errors
#include "row_ops.cuh"
#include <cstdio>
using namespace rowk;
using namespace rowk::ops;
static int fails = 0;
#define EXPECT(...) do { if (!(__VA_ARGS__)) { printf("FAIL line %d\n", __LINE__); ++fails; } else printf("ok   line %d\n", __LINE__); } while (0)
int main() {
  // planning with no usable device: the plan carries the error, launch_rows returns it
  Plan pl = plan_rows_cached<RmsNormFwd, float>(8, 4096, 0);
  printf("plan status without a GPU: %s\n", cudaGetErrorName(pl.status));
  EXPECT(pl.status != cudaSuccess);
  RowProblem<RmsNormFwd, float> pr;
  pr.rows = 8; pr.N = 4096;
  EXPECT(launch_rows<RmsNormFwd, float>(pr, pl, nullptr, 0) == pl.status);
  // a plan for another shape
  Plan ok; ok.status = cudaSuccess; ok.rows = 8; ok.N = 4096; ok.strategy = Strategy::Warp; ok.tpr = 32; ok.vpt = 4; ok.block = 128; ok.units = 2; ok.grid = 2;
  RowProblem<RmsNormFwd, float> pr2 = pr; pr2.N = 4095;
  EXPECT(launch_rows<RmsNormFwd, float>(pr2, ok, nullptr, 0) == cudaErrorInvalidValue);
  Plan dflt;  // never planned
  EXPECT(launch_rows<RmsNormFwd, float>(pr, dflt, nullptr, 0) == cudaErrorInvalidValue);
  // column outputs need the workspace
  RowProblem<RmsNormBwd, double> pb; pb.rows = 8; pb.N = 4096;
  Plan wb = ok; wb.workspace_bytes = 2 * 4096 * sizeof(double);
  EXPECT(launch_rows<RmsNormBwd, double>(pb, wb, nullptr, 0) == cudaErrorInvalidValue);
  // N == 0 with no per-row outputs: nothing to do
  RowProblem<SoftmaxFwd, __nv_bfloat16> ps; ps.rows = 8; ps.N = 0;
  Plan p0 = ok; p0.N = 0;
  EXPECT(launch_rows<SoftmaxFwd, __nv_bfloat16>(ps, p0, nullptr, 0) == cudaSuccess);
  // rows == 0 with column outputs: the zero fill's launch error comes back (no GPU here)
  RowProblem<LayerNormBwd, __half> pl0; pl0.rows = 0; pl0.N = 16;
  Plan z = ok; z.rows = 0; z.N = 16;
  cudaError_t e = launch_rows<LayerNormBwd, __half>(pl0, z, nullptr, 0);
  printf("rows == 0 zero fill without a GPU: %s\n", cudaGetErrorName(e));
  EXPECT(e != cudaSuccess);
  // rows == 0 without column outputs: nothing to do
  RowProblem<RmsNormFwd, float> pr0; pr0.rows = 0; pr0.N = 16;
  Plan z2 = z;
  EXPECT(launch_rows<RmsNormFwd, float>(pr0, z2, nullptr, 0) == cudaSuccess);
  // a launch without a GPU
  RowProblem<RmsNormFwd, float> pr3 = pr;
  e = launch_rows<RmsNormFwd, float>(pr3, ok, nullptr, 0);
  printf("kernel launch without a GPU: %s\n", cudaGetErrorName(e));
  EXPECT(e != cudaSuccess);
  printf("%d passed, %d failed\n", 9 - fails, fails);
  return fails != 0;
}
