// fused_axpby.cpp: fused_axpby on the CPU, and on CUDA through the launchers of
// csrc/fused_axpby_kernel.cu; both check their inputs first. csrc/library.cpp declares
// its schema.
//
// Light ATen headers only (not torch/extension.h, not ATen/ops/*.h: outputs come from
// at::detail::empty_cpu and empty_cuda), so this file compiles in a few seconds.
// The op goes through the dispatcher (TORCH_LIBRARY_IMPL), so it works with autograd,
// torch.compile and every device that has a kernel registered below.
#include <ATen/Dispatch.h>
#include <ATen/EmptyTensor.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include <algorithm>
#include <initializer_list>
#include <numeric>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "fused_axpby_math.h"

#ifdef WITH_CUDA
#include <ATen/cuda/EmptyTensor.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "fused_axpby_kernel.h"
#endif

// The dtypes fused_axpby was generated for: float32, float64, float16, bfloat16.
#define FUSED_AXPBY_DISPATCH_CASES(...)      \
  AT_DISPATCH_CASE(at::kFloat, __VA_ARGS__)  \
  AT_DISPATCH_CASE(at::kDouble, __VA_ARGS__) \
  AT_DISPATCH_CASE(at::kHalf, __VA_ARGS__)   \
  AT_DISPATCH_CASE(at::kBFloat16, __VA_ARGS__)

namespace fused_axpby {
namespace {

constexpr const char* kSupportedDtypes =
    "torch.float32, torch.float64, torch.float16, torch.bfloat16";
// Elements per CPU task: small tensors stay on one thread.
constexpr int64_t kCpuGrain = 32768;

// The vector loops this CPU runs (csrc/fused_axpby_cpu_loops.h, AVX2 or AVX512), as
// PyTorch picks its own kernels (ATEN_CPU_CAPABILITY=avx2 or default turns them down, for
// both): none where it has neither.
std::optional<CpuIsa> cpu_vector_isa() {
  static const std::optional<CpuIsa> isa = []() -> std::optional<CpuIsa> {
    const std::string capability = at::get_cpu_capability();
    if (capability == "AVX512") return CpuIsa::kAvx512;
    if (capability == "AVX2") return CpuIsa::kAvx2;
    return std::nullopt;
  }();
  return isa;
}

bool is_supported(at::ScalarType dtype) {
  return dtype == at::kFloat || dtype == at::kDouble || dtype == at::kHalf ||
         dtype == at::kBFloat16;
}

std::string dtype_name(at::ScalarType dtype) {
  return "torch." + std::string(c10::getDtypeNames(dtype).first);
}

struct NamedTensor {
  const char* name;
  const at::Tensor& tensor;
};

// A new contiguous tensor on like's device. at::detail::empty_cpu and empty_cuda allocate
// directly; Tensor::new_empty goes through the dispatcher twice (new_empty, then empty),
// which took a quarter of a microsecond of a 1.8 us call on small CPU tensors.
at::Tensor new_tensor(const at::Tensor& like, at::IntArrayRef sizes, at::ScalarType dtype) {
#ifdef WITH_CUDA
  if (like.is_cuda()) return at::detail::empty_cuda(sizes, dtype, like.device(), std::nullopt);
#endif
  return at::detail::empty_cpu(sizes, dtype, /*pin_memory=*/false, std::nullopt);
}

#ifdef WITH_CUDA
// c10::Half and c10::BFloat16 have the layouts of __half and __nv_bfloat16, so tensor
// data can be handed to the kernels as the CUDA types.
template <typename scalar_t>
struct CudaType {
  using type = scalar_t;
};
template <>
struct CudaType<c10::Half> {
  using type = __half;
};
template <>
struct CudaType<c10::BFloat16> {
  using type = __nv_bfloat16;
};
static_assert(sizeof(c10::Half) == sizeof(__half), "c10::Half must match __half");
static_assert(sizeof(c10::BFloat16) == sizeof(__nv_bfloat16),
              "c10::BFloat16 must match __nv_bfloat16");

template <typename scalar_t>
const typename CudaType<scalar_t>::type* cuda_data(const at::Tensor& t) {
  return reinterpret_cast<const typename CudaType<scalar_t>::type*>(t.const_data_ptr<scalar_t>());
}

template <typename scalar_t>
typename CudaType<scalar_t>::type* cuda_mutable_data(at::Tensor& t) {
  return reinterpret_cast<typename CudaType<scalar_t>::type*>(t.mutable_data_ptr<scalar_t>());
}

template <typename scalar_t>
using CudaScalar = typename CudaType<scalar_t>::type;
#endif  // WITH_CUDA

// Every tensor argument must have a supported dtype and the dtype and device of
// the first one (shapes: see broadcast_shape). Each message names the argument, what it got and
// what was expected.
void check_tensors(const char* op, std::initializer_list<NamedTensor> args) {
  const NamedTensor& first = *args.begin();
  for (const NamedTensor& arg : args) {
    const at::Tensor& t = arg.tensor;
    TORCH_CHECK(is_supported(t.scalar_type()), op, ": ", arg.name, " has dtype ",
                dtype_name(t.scalar_type()), "; supported dtypes are ", kSupportedDtypes);
    TORCH_CHECK(t.scalar_type() == first.tensor.scalar_type(), op, ": ", arg.name, " has dtype ",
                dtype_name(t.scalar_type()), " but ", first.name, " has dtype ",
                dtype_name(first.tensor.scalar_type()), "; pass tensors of one dtype");
    TORCH_CHECK(t.device() == first.tensor.device(), op, ": ", arg.name, " is on ", t.device(),
                " but ", first.name, " is on ", first.tensor.device(),
                "; move the tensors to one device");
  }
}

// The shape the tensors broadcast to, as in PyTorch: aligned at their last dimensions, each
// dimension of size 1 or of the others' size. The message names the first that does not fit.
std::vector<int64_t> broadcast_shape(const char* op, std::initializer_list<NamedTensor> args) {
  std::vector<int64_t> shape;
  std::string before;  // the tensors checked so far, for the message
  size_t count = 0;
  for (const NamedTensor& arg : args) {
    const at::IntArrayRef sizes = arg.tensor.sizes();
    const size_t common = std::min(sizes.size(), shape.size());
    for (size_t d = 1; d <= common; ++d) {  // d counts from the last dimension
      const int64_t size = sizes[sizes.size() - d];
      const int64_t have = shape[shape.size() - d];
      TORCH_CHECK(size == have || size == 1 || have == 1, op, ": ", arg.name, " has shape ", sizes,
                  " but ", before, count == 1 ? " has shape " : " broadcast to ",
                  at::IntArrayRef(shape),
                  "; pass shapes that broadcast (from the last dimension on, equal sizes or 1)");
    }
    if (sizes.size() > shape.size()) shape.insert(shape.begin(), sizes.size() - shape.size(), 1);
    for (size_t d = 1; d <= sizes.size(); ++d) {
      int64_t& have = shape[shape.size() - d];
      if (have == 1) have = sizes[sizes.size() - d];
    }
    before += (count++ == 0 ? "" : ", ") + std::string(arg.name);
  }
  return shape;
}

// Whether every tensor has `shape` (nullptr entries, a one-value gradient, count as having it).
bool all_of_shape(at::IntArrayRef shape, std::initializer_list<const at::Tensor*> tensors) {
  for (const at::Tensor* t : tensors) {
    if (t != nullptr && t->sizes() != shape) return false;
  }
  return true;
}

// t where it has the result's full shape, else nullptr: the tensors that choose the layout of
// a broadcast's results.
const at::Tensor* if_full_size(const at::Tensor& t, at::IntArrayRef shape) {
  return t.sizes() == shape ? &t : nullptr;
}
// The layout the tensors share if every one is dense (no gaps, no overlap) with the same
// strides (a channels_last batch, matrices transposed alike): element i of each is then at
// data_ptr() + i, and the kernels read them as they are. nullptr if they do not share one;
// nullptr entries (a one-value gradient) do not count.
const at::Tensor* shared_dense_layout(std::initializer_list<const at::Tensor*> tensors) {
  const at::Tensor* first = nullptr;
  for (const at::Tensor* t : tensors) {
    if (t == nullptr) continue;
    if (!t->is_non_overlapping_and_dense()) return nullptr;
    if (first != nullptr && t->strides() != first->strides()) return nullptr;
    if (first == nullptr) first = t;
  }
  return first;
}

// t as it is in the shared layout, else a contiguous copy (t itself if already contiguous).
at::Tensor in_layout(const at::Tensor& t, const at::Tensor* layout) {
  return layout != nullptr ? t : t.contiguous();
}

// A new tensor of like's sizes on like's device: in the shared layout where there is one,
// else contiguous.
at::Tensor new_in_layout(const at::Tensor* layout, const at::Tensor& like, at::ScalarType dtype) {
  if (layout == nullptr) return new_tensor(like, like.sizes(), dtype);
#ifdef WITH_CUDA
  if (like.is_cuda()) {
    return at::detail::empty_strided_cuda(like.sizes(), layout->strides(), dtype, like.device());
  }
#endif
  return at::detail::empty_strided_cpu(like.sizes(), layout->strides(), dtype,
                                       /*pin_memory=*/false);
}

// A broadcast as the kernels step through it: the dimensions of a dense result in memory
// order, innermost first, with each operand's stride along them (0 where it broadcasts),
// merged where every operand steps through two dimensions as through one. A bias of shape
// (C,) against a (N, C) result: sizes {C, N}, strides {{1, 1}, {C, 0}}.
struct Dims {
  std::vector<int64_t> sizes;
  std::vector<std::vector<int64_t>> strides;  // [dimension][operand]
};

// t's stride along dimension d of a result with `ndim` dimensions, 0 where it broadcasts.
int64_t stride_in(const at::Tensor& t, int64_t d, int64_t ndim) {
  const int64_t own = d - (ndim - t.dim());  // shapes align at their last dimensions
  return own < 0 || t.size(own) == 1 ? 0 : t.stride(own);
}

Dims broadcast_dims(const at::Tensor& result, std::initializer_list<const at::Tensor*> operands) {
  const int64_t ndim = result.dim();
  std::vector<int64_t> order(ndim);
  std::iota(order.begin(), order.end(), 0);
  // Memory order: a dense result's smallest stride first; reversed, so that among equal
  // strides (dimensions of size 1, skipped below) the last dimension comes first.
  std::reverse(order.begin(), order.end());
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return result.stride(a) < result.stride(b); });
  Dims dims;
  for (const int64_t d : order) {
    if (result.size(d) == 1) continue;
    std::vector<int64_t> strides;
    for (const at::Tensor* t : operands) strides.push_back(stride_in(*t, d, ndim));
    bool merges = !dims.sizes.empty();
    for (size_t k = 0; merges && k < strides.size(); ++k) {
      merges = strides[k] == dims.strides.back()[k] * dims.sizes.back();
    }
    if (merges) {
      dims.sizes.back() *= result.size(d);
    } else {
      dims.sizes.push_back(result.size(d));
      dims.strides.push_back(std::move(strides));
    }
  }
  return dims;
}

// Steps through a broadcast from one result element on, a run along the innermost
// dimension at a time: offsets() holds each operand's offset at the run's start, steps()
// its stride within the run.
class BroadcastWalk {
 public:
  BroadcastWalk(const Dims& dims, size_t operands, int64_t first)
      : dims_(dims), index_(dims.sizes.size()), offsets_(operands), steps_(operands) {
    for (size_t d = 0; d < index_.size(); ++d) {
      index_[d] = first % dims_.sizes[d];
      first /= dims_.sizes[d];
      for (size_t k = 0; k < operands; ++k) offsets_[k] += index_[d] * dims_.strides[d][k];
    }
    if (!index_.empty()) steps_ = dims_.strides[0];
  }

  // The elements of this run, at most `left`.
  int64_t run(int64_t left) const {
    return index_.empty() ? left : std::min(left, dims_.sizes[0] - index_[0]);
  }
  const int64_t* offsets() const { return offsets_.data(); }
  const int64_t* steps() const { return steps_.data(); }

  // Past `count` elements of the run: into the next run where this one ends.
  void advance(int64_t count) {
    if (index_.empty()) return;
    for (size_t k = 0; k < offsets_.size(); ++k) offsets_[k] += count * steps_[k];
    index_[0] += count;
    for (size_t d = 0; d + 1 < index_.size() && index_[d] == dims_.sizes[d]; ++d) {
      index_[d] = 0;
      ++index_[d + 1];
      for (size_t k = 0; k < offsets_.size(); ++k) {
        offsets_[k] += dims_.strides[d + 1][k] - dims_.sizes[d] * dims_.strides[d][k];
      }
    }
  }

 private:
  const Dims& dims_;
  std::vector<int64_t> index_;
  std::vector<int64_t> offsets_;
  std::vector<int64_t> steps_;
};

// The gradient of a sum (op(x).sum().backward()) arrives expanded: one value, every stride
// 0. The backward kernels read that value for every element (grad_step 0) instead of a
// copy of it the size of the output (grad_step 1 reads a gradient element by element).
bool is_one_value(const at::Tensor& t) {
  if (t.numel() <= 1) return false;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) != 1 && t.stride(d) != 0) return false;
  }
  return true;
}

// The vector loops for the processors this CPU has.
template <typename scalar_t, typename out_t>
void forward_vectors(CpuIsa isa, const Tensors<const scalar_t*>& data, const Tensors<int64_t>& step,
                     out_t* out, int64_t count, const Scalars<double>& s) {
  if (isa == CpuIsa::kAvx512) {
    forward_lanes<CpuIsa::kAvx512, scalar_t, out_t>(data, step, out, count, s);
  } else {
    forward_lanes<CpuIsa::kAvx2, scalar_t, out_t>(data, step, out, count, s);
  }
}

template <typename scalar_t>
void backward_vectors(CpuIsa isa, const scalar_t* grad, int64_t grad_step,
                      const GradReads<const scalar_t*>& data, const GradReads<int64_t>& step,
                      const Grads<scalar_t*>& grads, int64_t count, const Scalars<double>& s) {
  if (isa == CpuIsa::kAvx512) {
    backward_lanes<CpuIsa::kAvx512, scalar_t>(grad, grad_step, data, step, grads, count, s);
  } else {
    backward_lanes<CpuIsa::kAvx2, scalar_t>(grad, grad_step, data, step, grads, count, s);
  }
}
// The kernels take the arguments in the structs of csrc/fused_axpby_math.h; the functions
// registered at the end of this file pass them on.
namespace cpu {

// Tensors of different shapes (see broadcast_dims): each read in place through its strides.
at::Tensor forward_broadcast(const Tensors<const at::Tensor&>& in, const Scalars<double>& s,
                             at::IntArrayRef shape) {
  const at::Tensor* layout =
      shared_dense_layout({if_full_size(in.x, shape), if_full_size(in.b, shape)});
  at::Tensor out = layout != nullptr ? new_in_layout(layout, *layout, in.x.scalar_type())
                                     : new_tensor(in.x, shape, in.x.scalar_type());
  const Dims dims = broadcast_dims(out, {&in.x, &in.b});
  const int64_t n = out.numel();
  AT_DISPATCH_SWITCH(
      in.x.scalar_type(), "fused_axpby_broadcast_cpu", FUSED_AXPBY_DISPATCH_CASES([&] {
        using out_t = scalar_t;
        // double where the input or the output is double; float for the rest.
        using acc_t =
            std::conditional_t<std::is_same_v<scalar_t, double> || std::is_same_v<out_t, double>,
                               double, float>;
        const Scalars<acc_t> s_acc{static_cast<acc_t>(s.a)};
        const Tensors<const scalar_t*> data{in.x.const_data_ptr<scalar_t>(),
                                            in.b.const_data_ptr<scalar_t>()};
        out_t* out_p = out.mutable_data_ptr<out_t>();
        at::parallel_for(0, n, kCpuGrain, [&](int64_t begin, int64_t end) {
          BroadcastWalk walk(dims, 2, begin);
          int64_t run = 0;
          for (int64_t i = begin; i < end; walk.advance(run), i += run) {
            run = walk.run(end - i);
            const int64_t* offset = walk.offsets();
            const int64_t* step = walk.steps();
#ifndef NO_CPU_VECTOR_LOOPS
            if (const std::optional<CpuIsa> isa = cpu_vector_isa()) {
              forward_vectors<scalar_t, out_t>(*isa, {data.x + offset[0], data.b + offset[1]},
                                               {step[0], step[1]}, out_p + i, run, s);
              continue;
            }
#endif
            for (int64_t k = 0; k < run; ++k) {
              out_p[i + k] = static_cast<out_t>(
                  forward<acc_t>(s_acc.a, static_cast<acc_t>(data.x[offset[0] + k * step[0]]),
                                 static_cast<acc_t>(data.b[offset[1] + k * step[1]])));
            }
          }
        });
      }));
  return out;
}

at::Tensor forward_impl(const Tensors<const at::Tensor&>& in, const Scalars<double>& s) {
  check_tensors("fused_axpby", {{"x", in.x}, {"b", in.b}});
  const std::vector<int64_t> shape = broadcast_shape("fused_axpby", {{"x", in.x}, {"b", in.b}});
  if (!all_of_shape(shape, {&in.x, &in.b})) return forward_broadcast(in, s, shape);
  // Read as they are where the inputs share a dense layout (the output then takes it, as
  // eager's does: channels_last stays channels_last), else from contiguous copies; held in
  // locals until the kernels finish.
  const at::Tensor* layout = shared_dense_layout({&in.x, &in.b});
  const Tensors<at::Tensor> dense{in_layout(in.x, layout), in_layout(in.b, layout)};
  at::Tensor out = new_in_layout(layout, in.x, in.x.scalar_type());
  const int64_t n = out.numel();
  AT_DISPATCH_SWITCH(
      in.x.scalar_type(), "fused_axpby_cpu", FUSED_AXPBY_DISPATCH_CASES([&] {
        using out_t = scalar_t;
        // double where the input or the output is double; float for the rest.
        using acc_t =
            std::conditional_t<std::is_same_v<scalar_t, double> || std::is_same_v<out_t, double>,
                               double, float>;
        const Scalars<acc_t> s_acc{static_cast<acc_t>(s.a)};
        const Tensors<const scalar_t*> data{dense.x.const_data_ptr<scalar_t>(),
                                            dense.b.const_data_ptr<scalar_t>()};
        out_t* out_p = out.mutable_data_ptr<out_t>();
        at::parallel_for(0, n, kCpuGrain, [&](int64_t begin, int64_t end) {
#ifndef NO_CPU_VECTOR_LOOPS
          if (const std::optional<CpuIsa> isa = cpu_vector_isa()) {
            forward_vectors<scalar_t, out_t>(*isa, {data.x + begin, data.b + begin}, {1, 1},
                                             out_p + begin, end - begin, s);
            return;
          }
#endif
          for (int64_t i = begin; i < end; ++i) {
            out_p[i] = static_cast<out_t>(forward<acc_t>(s_acc.a, static_cast<acc_t>(data.x[i]),
                                                         static_cast<acc_t>(data.b[i])));
          }
        });
      }));
  return out;
}

at::Tensor backward_impl(const at::Tensor& grad, const GradReads<const at::Tensor&>& reads,
                         const Scalars<double>& s) {
  check_tensors("fused_axpby_backward", {{"grad", grad}});
  // grad as it is where it is one value; the rest as they are where they share a dense
  // layout (the gradients then take it), else from contiguous copies.
  const bool grad_is_one_value = is_one_value(grad);
  const at::Tensor* layout = shared_dense_layout({grad_is_one_value ? nullptr : &grad});
  const at::Tensor grad_c = grad_is_one_value ? grad.as_strided({1}, {1}) : in_layout(grad, layout);
  const int64_t grad_step = grad_is_one_value ? 0 : 1;
  Grads<at::Tensor> grads{new_in_layout(layout, grad, grad.scalar_type())};
  const int64_t n = grad.numel();
  AT_DISPATCH_SWITCH(grad.scalar_type(), "fused_axpby_backward_cpu",
                     FUSED_AXPBY_DISPATCH_CASES([&] {
                       using acc_t = at::opmath_type<scalar_t>;
                       const Scalars<acc_t> s_acc{static_cast<acc_t>(s.a)};
                       const scalar_t* grad_p = grad_c.const_data_ptr<scalar_t>();
                       const Grads<scalar_t*> grads_p{grads.x.mutable_data_ptr<scalar_t>()};
                       at::parallel_for(0, n, kCpuGrain, [&](int64_t begin, int64_t end) {
#ifndef NO_CPU_VECTOR_LOOPS
                         if (const std::optional<CpuIsa> isa = cpu_vector_isa()) {
                           backward_vectors<scalar_t>(*isa, grad_p + begin * grad_step, grad_step,
                                                      {}, {}, {grads_p.x + begin}, end - begin, s);
                           return;
                         }
#endif
                         for (int64_t i = begin; i < end; ++i) {
                           const acc_t g = static_cast<acc_t>(grad_p[i * grad_step]);
                           grads_p.x[i] = static_cast<scalar_t>(grad_wrt_x<acc_t>(g, s_acc.a));
                         }
                       });
                     }));
  return grads.x;
}

}  // namespace cpu

#ifdef WITH_CUDA
namespace cuda {

at::Tensor forward_impl(const Tensors<const at::Tensor&>& in, const Scalars<double>& s);

// t copied out to like's shape and layout: for broadcasts of more than kMaxDims dimensions.
at::Tensor expanded(const at::Tensor& t, const at::Tensor& like) {
  at::Tensor copy = new_in_layout(&like, like, t.scalar_type());
  copy.copy_(t.expand(like.sizes()));
  return copy;
}

// Tensors of different shapes (see Broadcast in csrc/fused_axpby_kernel.h): each read in
// place through its strides.
at::Tensor forward_broadcast(const Tensors<const at::Tensor&>& in, const Scalars<double>& s,
                             at::IntArrayRef shape) {
  const c10::cuda::CUDAGuard device_guard(in.x.device());
  const at::Tensor* layout =
      shared_dense_layout({if_full_size(in.x, shape), if_full_size(in.b, shape)});
  at::Tensor out = layout != nullptr ? new_in_layout(layout, *layout, in.x.scalar_type())
                                     : new_tensor(in.x, shape, in.x.scalar_type());
  const Dims dims = broadcast_dims(out, {&in.x, &in.b});
  const int64_t n = out.numel();
  if (n == 0) return out;
  if (dims.sizes.size() > size_t(kMaxDims)) {
    return forward_impl({expanded(in.x, out), expanded(in.b, out)}, s);
  }
  Broadcast<Tensors<int64_t>> b{};
  b.ndim = int(dims.sizes.size());
  for (int d = 0; d < b.ndim; ++d) {
    b.sizes[d] = dims.sizes[d];
    b.strides[d] = {dims.strides[d][0], dims.strides[d][1]};
  }
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_SWITCH(
      in.x.scalar_type(), "fused_axpby_broadcast_cuda", FUSED_AXPBY_DISPATCH_CASES([&] {
        using out_t = scalar_t;
        const Tensors<const CudaScalar<scalar_t>*> data{cuda_data<scalar_t>(in.x),
                                                        cuda_data<scalar_t>(in.b)};
        C10_CUDA_CHECK(
            launch_forward_broadcast(data, cuda_mutable_data<out_t>(out), n, b, s, stream));
      }));
  return out;
}

at::Tensor forward_impl(const Tensors<const at::Tensor&>& in, const Scalars<double>& s) {
  check_tensors("fused_axpby", {{"x", in.x}, {"b", in.b}});
  const std::vector<int64_t> shape = broadcast_shape("fused_axpby", {{"x", in.x}, {"b", in.b}});
  if (!all_of_shape(shape, {&in.x, &in.b})) return forward_broadcast(in, s, shape);
  // Allocate, copy and launch on the inputs' device, whichever device is current.
  const c10::cuda::CUDAGuard device_guard(in.x.device());
  // Read as they are where the inputs share a dense layout (the output then takes it, as
  // eager's does: channels_last stays channels_last), else from contiguous copies; held in
  // locals until the kernels finish.
  const at::Tensor* layout = shared_dense_layout({&in.x, &in.b});
  const Tensors<at::Tensor> dense{in_layout(in.x, layout), in_layout(in.b, layout)};
  at::Tensor out = new_in_layout(layout, in.x, in.x.scalar_type());
  const int64_t n = out.numel();
  if (n == 0) return out;
  // The current stream, not the default one: correct under user streams and CUDA graphs.
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_SWITCH(
      in.x.scalar_type(), "fused_axpby_cuda", FUSED_AXPBY_DISPATCH_CASES([&] {
        using out_t = scalar_t;
        const Tensors<const CudaScalar<scalar_t>*> data{cuda_data<scalar_t>(dense.x),
                                                        cuda_data<scalar_t>(dense.b)};
        C10_CUDA_CHECK(launch_forward(data, cuda_mutable_data<out_t>(out), n, s, stream));
      }));
  return out;
}

at::Tensor backward_impl(const at::Tensor& grad, const GradReads<const at::Tensor&>& reads,
                         const Scalars<double>& s) {
  check_tensors("fused_axpby_backward", {{"grad", grad}});
  const c10::cuda::CUDAGuard device_guard(grad.device());
  // grad as it is where it is one value; the rest as they are where they share a dense
  // layout (the gradients then take it), else from contiguous copies.
  const bool grad_is_one_value = is_one_value(grad);
  const at::Tensor* layout = shared_dense_layout({grad_is_one_value ? nullptr : &grad});
  const at::Tensor grad_c = grad_is_one_value ? grad.as_strided({1}, {1}) : in_layout(grad, layout);
  const int64_t grad_step = grad_is_one_value ? 0 : 1;
  Grads<at::Tensor> grads{new_in_layout(layout, grad, grad.scalar_type())};
  const int64_t n = grad.numel();
  if (n == 0) return grads.x;
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_SWITCH(
      grad.scalar_type(), "fused_axpby_backward_cuda", FUSED_AXPBY_DISPATCH_CASES([&] {
        const GradReads<const CudaScalar<scalar_t>*> data{};
        const Grads<CudaScalar<scalar_t>*> grads_p{cuda_mutable_data<scalar_t>(grads.x)};
        C10_CUDA_CHECK(
            launch_backward(cuda_data<scalar_t>(grad_c), grad_step, data, grads_p, n, s, stream));
      }));
  return grads.x;
}

}  // namespace cuda
#endif  // WITH_CUDA

// The functions the dispatcher calls, with the arguments one by one in the schema's order.
at::Tensor forward_cpu(double a, const at::Tensor& x, const at::Tensor& b) {
  return cpu::forward_impl({x, b}, {a});
}

at::Tensor backward_cpu(const at::Tensor& grad, double a) {
  return cpu::backward_impl(grad, {}, {a});
}

#ifdef WITH_CUDA
at::Tensor forward_cuda(double a, const at::Tensor& x, const at::Tensor& b) {
  return cuda::forward_impl({x, b}, {a});
}

at::Tensor backward_cuda(const at::Tensor& grad, double a) {
  return cuda::backward_impl(grad, {}, {a});
}
#endif  // WITH_CUDA
}  // namespace

TORCH_LIBRARY_IMPL(fused_axpby, CPU, m) {
  m.impl("fused_axpby", &forward_cpu);
  m.impl("fused_axpby_backward", &backward_cpu);
}

#ifdef WITH_CUDA
TORCH_LIBRARY_IMPL(fused_axpby, CUDA, m) {
  m.impl("fused_axpby", &forward_cuda);
  m.impl("fused_axpby_backward", &backward_cuda);
}
#endif

}  // namespace fused_axpby
