// Compile check (no GPU needed): instantiates launch_rows / plan_rows_cached for every spec
// of row_ops.cuh and every element type (float, half, bfloat16, double), plus a spec with
// plain (non-template) Scalars. Build it as check_compile.sh does (a generated project's
// default arch list, torch's half/bf16 flags, -Xptxas -v for registers and spills).
// -DRK_TYPES_ONLY=<type> instantiates one element type only (faster).
#include "row_ops.cuh"
using namespace rowk;
using namespace rowk::ops;

struct RmsNormFwdPlainScalars : RmsNormFwd {
  struct Scalars { float eps; };
};

#define INST(F, T) \
  template cudaError_t rowk::launch_rows<F, T>(const RowProblem<F, T>&, const Plan&, void*, cudaStream_t); \
  template Plan rowk::plan_rows_cached<F, T>(int64_t, int64_t, int);
#define INST_ALL(T) INST(RmsNormFwd, T) INST(RmsNormBwd, T) INST(LayerNormFwd, T) INST(LayerNormBwd, T) \
  INST(SoftmaxFwd, T) INST(SoftmaxBwd, T) INST(LogSoftmaxFwd, T) INST(LogSoftmaxBwd, T)
#ifndef RK_TYPES_ONLY
INST_ALL(float)
INST_ALL(__nv_bfloat16)
INST_ALL(__half)
INST_ALL(double)
INST(RmsNormFwdPlainScalars, float)
static_assert(std::is_same<scalars_t<RmsNormFwdPlainScalars, double>, RmsNormFwdPlainScalars::Scalars>::value, "");
static_assert(std::is_same<scalars_t<RmsNormFwd, double>, RmsNormFwd::Scalars<double>>::value, "");
static_assert(std::is_same<scalars_t<RmsNormFwd, __half>, RmsNormFwd::Scalars<float>>::value, "");
#else
INST_ALL(RK_TYPES_ONLY)
#endif
