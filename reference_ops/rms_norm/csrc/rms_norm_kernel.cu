// rms_norm_kernel.cu: the CUDA kernels of rms_norm, as specs of csrc/row_kernels.cuh.
//
// csrc/row_kernels.cuh holds the row kernels (a row held in registers, reduced by a warp,
// a block or a cluster of blocks) and picks one for each shape; the specs below tell it
// what rms_norm reduces and computes, by calling the formulas of csrc/rms_norm_math.h.
// csrc/rms_norm.cpp checks the inputs, makes them contiguous, picks the dtype and passes
// the current stream.
#include <cstdint>

#include "rms_norm_kernel.h"
#include "row_kernels.cuh"

namespace rms_norm {
namespace {

// The forward. In `e`: x the row tensors' elements (x), c the column
// tensors' (weight), s the scalars, n the row length, r the
// reductions (ms). Its stats are the reductions, which the backward reads: launch_forward
// passes null pointers for them where nothing needs a gradient, and none are written.
struct ForwardSpec {
  template <class V>
  using Scalars = rms_norm::Scalars<V>;
  static constexpr int kRowIn = 1, kColIn = 1, kStatIn = 0;
  static constexpr int kRed = 1, kStages = 1;
  static constexpr int kRowOut = 1, kStatOut = 1, kColGrad = 0;
  RK_HD static constexpr rowk::Red red_op(int j) {
    return j == 0 ? rowk::Red::Sum : rowk::Red::Sum;
  }
  RK_HD static constexpr int red_stage(int j) { return j == 0 ? 0 : 0; }
  template <class E>
  RK_DEV static auto red(int j, const E& e) {
    using A = typename E::value_type;
    if (j == 0) return reduce_ms<A>(e.x[0], e.c[0], e.s.eps, e.n);
    return A(0);
  }
  template <class E>
  RK_DEV static auto fin(int j, typename E::value_type v, const E& e) {
    if (j == 0) return v / e.n;
    return v;
  }
  template <class E>
  RK_DEV static auto out(int, const E& e) {
    using A = typename E::value_type;
    return forward<A>(e.x[0], e.c[0], e.s.eps, e.n, e.r[0]);
  }
  template <class E>
  RK_DEV static auto stat(int k, const E& e) {
    return e.r[k];
  }
  template <class E>
  RK_DEV static auto colgrad(int, const E&) {
    return typename E::value_type(0);
  }
};

// The backward: x holds the row tensors' elements and, last, grad's; st the forward's
// reductions as it saved them (ms), r the backward's (gx).
struct BackwardSpec {
  template <class V>
  using Scalars = rms_norm::Scalars<V>;
  static constexpr int kRowIn = 2, kColIn = 1, kStatIn = 1;
  static constexpr int kRed = 1, kStages = 1;
  static constexpr int kRowOut = 1, kStatOut = 0, kColGrad = 1;
  RK_HD static constexpr rowk::Red red_op(int j) {
    return j == 0 ? rowk::Red::Sum : rowk::Red::Sum;
  }
  RK_HD static constexpr int red_stage(int j) { return j == 0 ? 0 : 0; }
  template <class E>
  RK_DEV static auto red(int j, const E& e) {
    using A = typename E::value_type;
    if (j == 0)
      return grad_reduce_gx<A>(e.x[1], forward<A>(e.x[0], e.c[0], e.s.eps, e.n, e.st[0]), e.x[0],
                               e.c[0], e.s.eps, e.n, e.st[0]);
    return A(0);
  }
  template <class E>
  RK_DEV static auto fin(int j, typename E::value_type v, const E& e) {
    if (j == 0) return v / e.n;
    return v;
  }
  template <class E>
  RK_DEV static auto out(int k, const E& e) {
    using A = typename E::value_type;
    if (k == 0)
      return grad_wrt_x<A>(e.x[1], forward<A>(e.x[0], e.c[0], e.s.eps, e.n, e.st[0]), e.x[0],
                           e.c[0], e.s.eps, e.n, e.st[0], e.r[0]);
    return A(0);
  }
  template <class E>
  RK_DEV static auto stat(int, const E&) {
    return typename E::value_type(0);
  }
  template <class E>
  RK_DEV static auto colgrad(int k, const E& e) {
    using A = typename E::value_type;
    if (k == 0)
      return grad_wrt_weight<A>(e.x[1], forward<A>(e.x[0], e.c[0], e.s.eps, e.n, e.st[0]), e.x[0],
                                e.c[0], e.s.eps, e.n, e.st[0], e.r[0]);
    return A(0);
  }
};

int current_device() {
  int device = 0;
  cudaGetDevice(&device);
  return device;
}

}  // namespace

template <typename T>
int64_t forward_workspace_bytes(int64_t rows, int64_t n) {
  const rowk::Plan plan = rowk::plan_rows_cached<ForwardSpec, T>(rows, n, current_device());
  return plan.status == cudaSuccess ? int64_t(plan.workspace_bytes) : -1;
}

template <typename T>
cudaError_t launch_forward(Rows<const T*> in, Columns<const T*> columns, T* out, Acc<T>* reductions,
                           int64_t rows, int64_t n, Scalars<double> s, void* workspace,
                           cudaStream_t stream) {
  rowk::RowProblem<ForwardSpec, T> problem;
  problem.in[0] = in.x;
  problem.in_stride[0] = n;
  problem.col[0] = columns.weight;
  problem.out[0] = out;
  problem.out_stride[0] = n;
  static_assert(
      std::is_same_v<Acc<T>, rowk::acc_t<T>>,
      "the saved reductions' type (csrc/rms_norm_kernel.h) is the kernels' arithmetic type");
  problem.stat_out[0] = reductions ? reductions + 0 * rows : nullptr;  // ms
  problem.rows = rows;
  problem.N = n;
  problem.s = {rowk::acc_t<T>(s.eps)};
  const rowk::Plan plan = rowk::plan_rows_cached<ForwardSpec, T>(rows, n, current_device());
  return rowk::launch_rows<ForwardSpec, T>(problem, plan, workspace, stream);
}

template <typename T>
int64_t backward_workspace_bytes(int64_t rows, int64_t n) {
  const rowk::Plan plan = rowk::plan_rows_cached<BackwardSpec, T>(rows, n, current_device());
  return plan.status == cudaSuccess ? int64_t(plan.workspace_bytes) : -1;
}

template <typename T>
cudaError_t launch_backward(const T* grad, Rows<const T*> in, Columns<const T*> columns,
                            const Acc<T>* reductions, RowGrads<T*> row_grads,
                            ColumnGrads<ColumnGrad<T>> column_grads, int64_t rows, int64_t n,
                            Scalars<double> s, void* workspace, cudaStream_t stream) {
  rowk::RowProblem<BackwardSpec, T> problem;
  problem.in[0] = in.x;
  problem.in_stride[0] = n;
  problem.in[1] = grad;
  problem.in_stride[1] = n;
  problem.stat_in[0] = reductions + 0 * rows;  // ms
  problem.col[0] = columns.weight;
  problem.out[0] = row_grads.x;
  problem.out_stride[0] = n;
  problem.colgrad[0] = {column_grads.weight.same, column_grads.weight.acc};
  problem.rows = rows;
  problem.N = n;
  problem.s = {rowk::acc_t<T>(s.eps)};
  const rowk::Plan plan = rowk::plan_rows_cached<BackwardSpec, T>(rows, n, current_device());
  return rowk::launch_rows<BackwardSpec, T>(problem, plan, workspace, stream);
}

// The dtypes this op was generated for.
template int64_t forward_workspace_bytes<float>(int64_t, int64_t);
template cudaError_t launch_forward<float>(Rows<const float*>, Columns<const float*>, float*,
                                           Acc<float>*, int64_t, int64_t, Scalars<double>, void*,
                                           cudaStream_t);
template int64_t backward_workspace_bytes<float>(int64_t, int64_t);
template cudaError_t launch_backward<float>(const float*, Rows<const float*>, Columns<const float*>,
                                            const Acc<float>*, RowGrads<float*>,
                                            ColumnGrads<ColumnGrad<float>>, int64_t, int64_t,
                                            Scalars<double>, void*, cudaStream_t);
template int64_t forward_workspace_bytes<double>(int64_t, int64_t);
template cudaError_t launch_forward<double>(Rows<const double*>, Columns<const double*>, double*,
                                            Acc<double>*, int64_t, int64_t, Scalars<double>, void*,
                                            cudaStream_t);
template int64_t backward_workspace_bytes<double>(int64_t, int64_t);
template cudaError_t launch_backward<double>(const double*, Rows<const double*>,
                                             Columns<const double*>, const Acc<double>*,
                                             RowGrads<double*>, ColumnGrads<ColumnGrad<double>>,
                                             int64_t, int64_t, Scalars<double>, void*,
                                             cudaStream_t);
template int64_t forward_workspace_bytes<__half>(int64_t, int64_t);
template cudaError_t launch_forward<__half>(Rows<const __half*>, Columns<const __half*>, __half*,
                                            Acc<__half>*, int64_t, int64_t, Scalars<double>, void*,
                                            cudaStream_t);
template int64_t backward_workspace_bytes<__half>(int64_t, int64_t);
template cudaError_t launch_backward<__half>(const __half*, Rows<const __half*>,
                                             Columns<const __half*>, const Acc<__half>*,
                                             RowGrads<__half*>, ColumnGrads<ColumnGrad<__half>>,
                                             int64_t, int64_t, Scalars<double>, void*,
                                             cudaStream_t);
template int64_t forward_workspace_bytes<__nv_bfloat16>(int64_t, int64_t);
template cudaError_t launch_forward<__nv_bfloat16>(Rows<const __nv_bfloat16*>,
                                                   Columns<const __nv_bfloat16*>, __nv_bfloat16*,
                                                   Acc<__nv_bfloat16>*, int64_t, int64_t,
                                                   Scalars<double>, void*, cudaStream_t);
template int64_t backward_workspace_bytes<__nv_bfloat16>(int64_t, int64_t);
template cudaError_t launch_backward<__nv_bfloat16>(
    const __nv_bfloat16*, Rows<const __nv_bfloat16*>, Columns<const __nv_bfloat16*>,
    const Acc<__nv_bfloat16>*, RowGrads<__nv_bfloat16*>, ColumnGrads<ColumnGrad<__nv_bfloat16>>,
    int64_t, int64_t, Scalars<double>, void*, cudaStream_t);

}  // namespace rms_norm
