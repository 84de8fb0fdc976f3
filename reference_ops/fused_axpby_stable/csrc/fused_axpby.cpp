// fused_axpby.cpp: fused_axpby on the CPU, and on CUDA through the launchers of
// csrc/fused_axpby_kernel.cu; both check their inputs first. csrc/library.cpp declares
// its schema.
//
// Built on PyTorch's stable ABI (torch/csrc/stable, torch/headeronly and the C shims, no
// ATen or c10 headers; setup.py passes -DTORCH_TARGET_VERSION): the library calls torch
// only through functions torch keeps for years, so one build loads under every torch from
// the targeted version on. Autograd is registered in Python, in
// fused_axpby_stable/fused_axpby.py: the stable ABI has no C++ autograd.
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/Dispatch.h>
#include <torch/headeronly/core/ScalarType.h>
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Half.h>
#include <torch/headeronly/util/shim_utils.h>

#include <algorithm>
#include <initializer_list>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "fused_axpby_math.h"

#ifdef WITH_CUDA
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <torch/csrc/stable/accelerator.h>
#include <torch/csrc/stable/macros.h>

#include "fused_axpby_kernel.h"
#endif

// The dtypes fused_axpby was generated for: float32, float64, float16, bfloat16.
#define FUSED_AXPBY_DISPATCH_CASES(...)                                 \
  THO_DISPATCH_CASE(torch::headeronly::ScalarType::Float, __VA_ARGS__)  \
  THO_DISPATCH_CASE(torch::headeronly::ScalarType::Double, __VA_ARGS__) \
  THO_DISPATCH_CASE(torch::headeronly::ScalarType::Half, __VA_ARGS__)   \
  THO_DISPATCH_CASE(torch::headeronly::ScalarType::BFloat16, __VA_ARGS__)

// A failed check: a RuntimeError in Python whose message is the parts, which name the
// argument, what it got and what was expected. (STD_TORCH_CHECK would put the C++ function,
// file and line before them.) The parts are only evaluated when the check fails.
#define FUSED_AXPBY_CHECK(condition, ...) \
  if (!(condition)) throw std::runtime_error(fused_axpby::message(__VA_ARGS__))

namespace fused_axpby {

template <typename... Parts>
std::string message(const Parts&... parts) {
  std::ostringstream text;
  (text << ... << parts);
  return text.str();
}

namespace {

using torch::headeronly::ScalarType;
using torch::stable::Tensor;
using Sizes = torch::headeronly::IntHeaderOnlyArrayRef;

constexpr const char* kSupportedDtypes =
    "torch.float32, torch.float64, torch.float16, torch.bfloat16";
// Elements per CPU task: small tensors stay on one thread.
constexpr int64_t kCpuGrain = 32768;

bool is_supported(ScalarType dtype) {
  return dtype == torch::headeronly::ScalarType::Float ||
         dtype == torch::headeronly::ScalarType::Double ||
         dtype == torch::headeronly::ScalarType::Half ||
         dtype == torch::headeronly::ScalarType::BFloat16;
}

// A dtype as Python spells it (torch.float32), for messages.
std::string dtype_name(ScalarType dtype) {
  switch (dtype) {
    case ScalarType::Float:
      return "torch.float32";
    case ScalarType::Double:
      return "torch.float64";
    case ScalarType::Half:
      return "torch.float16";
    case ScalarType::BFloat16:
      return "torch.bfloat16";
    case ScalarType::Byte:
      return "torch.uint8";
    case ScalarType::Char:
      return "torch.int8";
    case ScalarType::Short:
      return "torch.int16";
    case ScalarType::Int:
      return "torch.int32";
    case ScalarType::Long:
      return "torch.int64";
    case ScalarType::Bool:
      return "torch.bool";
    case ScalarType::UInt16:
      return "torch.uint16";
    case ScalarType::ComplexFloat:
      return "torch.complex64";
    case ScalarType::ComplexDouble:
      return "torch.complex128";
    default:
      return "torch." + std::string(torch::headeronly::toString(dtype));
  }
}

// The C shim's code for a dtype this op allocates.
int32_t shim_dtype(ScalarType dtype) {
  if (dtype == torch::headeronly::ScalarType::Float) return aoti_torch_dtype_float32();
  if (dtype == torch::headeronly::ScalarType::Double) return aoti_torch_dtype_float64();
  if (dtype == torch::headeronly::ScalarType::Half) return aoti_torch_dtype_float16();
  if (dtype == torch::headeronly::ScalarType::BFloat16) return aoti_torch_dtype_bfloat16();
  throw std::runtime_error(message("fused_axpby: cannot allocate ", dtype_name(dtype)));
}

// A device as Python spells it (cpu, cuda:0), for messages.
std::string device_name(const Tensor& t) {
  if (t.is_cpu()) return "cpu";
  return (t.is_cuda() ? "cuda:" : "device:") + std::to_string(t.get_device_index());
}

bool same_device(const Tensor& a, const Tensor& b) {
  return a.is_cuda() == b.is_cuda() && a.get_device_index() == b.get_device_index();
}

// Sizes as Python prints a shape's list ([2, 3]), for messages.
std::string sizes_text(Sizes sizes) {
  std::string text = "[";
  for (size_t d = 0; d < sizes.size(); ++d) text += (d ? ", " : "") + std::to_string(sizes[d]);
  return text + "]";
}

bool same_sizes(Sizes a, Sizes b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

struct NamedTensor {
  const char* name;
  const Tensor& tensor;
};

// A new tensor of `sizes` with `strides` on like's device. (torch::stable has empty() for
// contiguous tensors only; the C shim allocates any strides.)
Tensor new_strided(const Tensor& like, Sizes sizes, Sizes strides, ScalarType dtype) {
  AtenTensorHandle handle = nullptr;
  TORCH_ERROR_CODE_CHECK(aoti_torch_empty_strided(
      static_cast<int64_t>(sizes.size()), sizes.data(), strides.data(), shim_dtype(dtype),
      like.is_cuda() ? aoti_torch_device_type_cuda() : aoti_torch_device_type_cpu(),
      like.is_cuda() ? like.get_device_index() : 0, &handle));
  return Tensor(handle);
}

// A new contiguous tensor on like's device.
Tensor new_tensor(const Tensor& like, Sizes sizes, ScalarType dtype) {
  std::vector<int64_t> strides(sizes.size());
  int64_t stride = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= std::max<int64_t>(sizes[d], 1);
  }
  return new_strided(like, sizes, strides, dtype);
}

#ifdef WITH_CUDA
// torch's Half and BFloat16 have the layouts of __half and __nv_bfloat16, so tensor data
// can be handed to the kernels as the CUDA types.
template <typename scalar_t>
struct CudaType {
  using type = scalar_t;
};
template <>
struct CudaType<torch::headeronly::Half> {
  using type = __half;
};
template <>
struct CudaType<torch::headeronly::BFloat16> {
  using type = __nv_bfloat16;
};
static_assert(sizeof(torch::headeronly::Half) == sizeof(__half), "Half must match __half");
static_assert(sizeof(torch::headeronly::BFloat16) == sizeof(__nv_bfloat16),
              "BFloat16 must match __nv_bfloat16");

template <typename scalar_t>
using CudaScalar = typename CudaType<scalar_t>::type;

template <typename scalar_t>
const CudaScalar<scalar_t>* cuda_data(const Tensor& t) {
  return reinterpret_cast<const CudaScalar<scalar_t>*>(t.const_data_ptr<scalar_t>());
}

template <typename scalar_t>
CudaScalar<scalar_t>* cuda_mutable_data(const Tensor& t) {
  return reinterpret_cast<CudaScalar<scalar_t>*>(t.mutable_data_ptr<scalar_t>());
}

// The current stream of t's device, not the default one: correct under user streams and
// CUDA graphs. (The C shim: torch::stable's Stream has a native handle from torch 2.13.)
cudaStream_t current_stream(const Tensor& t) {
  void* stream = nullptr;
  TORCH_ERROR_CODE_CHECK(aoti_torch_get_current_cuda_stream(t.get_device_index(), &stream));
  return static_cast<cudaStream_t>(stream);
}
#endif  // WITH_CUDA

// Every tensor argument must have a supported dtype and the dtype and device of
// the first one (shapes: see broadcast_shape). Each message names the argument, what it got and
// what was expected.
void check_tensors(const char* op, std::initializer_list<NamedTensor> args) {
  const NamedTensor& first = *args.begin();
  for (const NamedTensor& arg : args) {
    const Tensor& t = arg.tensor;
    FUSED_AXPBY_CHECK(is_supported(t.scalar_type()), op, ": ", arg.name, " has dtype ",
                      dtype_name(t.scalar_type()), "; supported dtypes are ", kSupportedDtypes);
    FUSED_AXPBY_CHECK(t.scalar_type() == first.tensor.scalar_type(), op, ": ", arg.name,
                      " has dtype ", dtype_name(t.scalar_type()), " but ", first.name,
                      " has dtype ", dtype_name(first.tensor.scalar_type()),
                      "; pass tensors of one dtype");
    FUSED_AXPBY_CHECK(same_device(t, first.tensor), op, ": ", arg.name, " is on ", device_name(t),
                      " but ", first.name, " is on ", device_name(first.tensor),
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
    const Sizes sizes = arg.tensor.sizes();
    const size_t common = std::min(sizes.size(), shape.size());
    for (size_t d = 1; d <= common; ++d) {  // d counts from the last dimension
      const int64_t size = sizes[sizes.size() - d];
      const int64_t have = shape[shape.size() - d];
      FUSED_AXPBY_CHECK(
          size == have || size == 1 || have == 1, op, ": ", arg.name, " has shape ",
          sizes_text(sizes), " but ", before, count == 1 ? " has shape " : " broadcast to ",
          sizes_text(shape),
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
bool all_of_shape(Sizes shape, std::initializer_list<const Tensor*> tensors) {
  for (const Tensor* t : tensors) {
    if (t != nullptr && !same_sizes(t->sizes(), shape)) return false;
  }
  return true;
}

// t where it has the result's full shape, else nullptr: the tensors that choose the layout of
// a broadcast's results.
const Tensor* if_full_size(const Tensor& t, Sizes shape) {
  return same_sizes(t.sizes(), shape) ? &t : nullptr;
}

// Whether t is dense (no gaps, no overlap), as ATen's is_non_overlapping_and_dense: its
// dimensions of size >= 2, in the order of their strides, step through its elements one
// after another. The fake kernels in fused_axpby_stable/fused_axpby.py follow the same rule.
bool is_dense(const Tensor& t) {
  if (t.is_contiguous()) return true;  // the usual case: torch keeps this flag, no walk needed
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) >= 2) dims.emplace_back(t.stride(d), t.size(d));
  }
  std::stable_sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (const auto& [stride, size] : dims) {
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

// The layout the tensors share if every one is dense with the same strides (a channels_last
// batch, matrices transposed alike): element i of each is then at data_ptr() + i, and the
// kernels read them as they are. nullptr if they do not share one; nullptr entries (a
// one-value gradient) do not count.
const Tensor* shared_dense_layout(std::initializer_list<const Tensor*> tensors) {
  const Tensor* first = nullptr;
  for (const Tensor* t : tensors) {
    if (t == nullptr) continue;
    if (!is_dense(*t)) return nullptr;
    if (first != nullptr && !same_sizes(t->strides(), first->strides())) return nullptr;
    if (first == nullptr) first = t;
  }
  return first;
}

// t as it is in the shared layout, else a contiguous copy (t itself if already contiguous).
Tensor in_layout(const Tensor& t, const Tensor* layout) {
  return layout != nullptr || t.is_contiguous() ? t : torch::stable::contiguous(t);
}

// A new tensor of like's sizes on like's device: in the shared layout where there is one,
// else contiguous.
Tensor new_in_layout(const Tensor* layout, const Tensor& like, ScalarType dtype) {
  if (layout == nullptr) return new_tensor(like, like.sizes(), dtype);
  return new_strided(like, like.sizes(), layout->strides(), dtype);
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
int64_t stride_in(const Tensor& t, int64_t d, int64_t ndim) {
  const int64_t own = d - (ndim - t.dim());  // shapes align at their last dimensions
  return own < 0 || t.size(own) == 1 ? 0 : t.stride(own);
}

Dims broadcast_dims(const Tensor& result, std::initializer_list<const Tensor*> operands) {
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
    for (const Tensor* t : operands) strides.push_back(stride_in(*t, d, ndim));
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
bool is_one_value(const Tensor& t) {
  if (t.numel() <= 1) return false;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) != 1 && t.stride(d) != 0) return false;
  }
  return true;
}

// The checks and allocations that the CPU and CUDA versions share, with the tensors the
// kernels read: held in a struct that outlives the kernels.
struct Forward {
  Tensors<Tensor> dense;  // the inputs as they are, or contiguous copies
  Tensor out;
};

Forward prepare_forward(const Tensors<const Tensor&>& in) {
  // Read as they are where the inputs share a dense layout (the output then takes it, as
  // eager's does: channels_last stays channels_last), else from contiguous copies.
  const Tensor* layout = shared_dense_layout({&in.x, &in.b});
  return {
      {in_layout(in.x, layout), in_layout(in.b, layout)},
      new_in_layout(layout, in.x, in.x.scalar_type()),
  };
}

struct Backward {
  Tensor grad;        // as it is where it is one value, else in the shared layout
  int64_t grad_step;  // 0 for one value, else 1
  Grads<Tensor> grads;
};

Backward prepare_backward(const Tensor& grad, const GradReads<const Tensor&>& reads) {
  // grad as it is where it is one value; the rest as they are where they share a dense
  // layout (the gradients then take it), else from contiguous copies.
  const bool grad_is_one_value = is_one_value(grad);
  const Tensor* layout = shared_dense_layout({grad_is_one_value ? nullptr : &grad});
  return {
      grad_is_one_value ? grad : in_layout(grad, layout),
      grad_is_one_value ? 0 : 1,
      {new_in_layout(layout, grad, grad.scalar_type())},
  };
}

// A broadcast's output, in the layout of the full-size operands where they share a dense
// one, and how the operands step through it.
struct BroadcastForward {
  Tensor out;
  Dims dims;
};

BroadcastForward prepare_forward_broadcast(const Tensors<const Tensor&>& in, Sizes shape) {
  const Tensor* layout =
      shared_dense_layout({if_full_size(in.x, shape), if_full_size(in.b, shape)});
  Tensor out = layout != nullptr ? new_in_layout(layout, *layout, in.x.scalar_type())
                                 : new_tensor(in.x, shape, in.x.scalar_type());
  Dims dims = broadcast_dims(out, {&in.x, &in.b});
  return {out, std::move(dims)};
}

// The checks of every call, before anything is allocated.
void check_forward_inputs(const Tensors<const Tensor&>& in) {
  check_tensors("fused_axpby", {{"x", in.x}, {"b", in.b}});
}

void check_backward_inputs(const Tensor& grad, const GradReads<const Tensor&>& reads) {
  check_tensors("fused_axpby_backward", {{"grad", grad}});
}

// The kernels take the arguments in the structs of csrc/fused_axpby_math.h; the functions
// registered at the end of this file pass them on.
namespace cpu {

// Tensors of different shapes (see broadcast_dims): each read in place through its strides.
Tensor forward_broadcast(const Tensors<const Tensor&>& in, const Scalars<double>& s, Sizes shape) {
  BroadcastForward b = prepare_forward_broadcast(in, shape);
  const int64_t n = b.out.numel();
  THO_DISPATCH_SWITCH(
      in.x.scalar_type(), "fused_axpby_broadcast_cpu", FUSED_AXPBY_DISPATCH_CASES([&] {
        using out_t = scalar_t;
        // double where the input or the output is double; float for the rest.
        using acc_t =
            std::conditional_t<std::is_same_v<scalar_t, double> || std::is_same_v<out_t, double>,
                               double, float>;
        const Scalars<acc_t> s_acc{static_cast<acc_t>(s.a)};
        const Tensors<const scalar_t*> data{in.x.const_data_ptr<scalar_t>(),
                                            in.b.const_data_ptr<scalar_t>()};
        out_t* out_p = b.out.mutable_data_ptr<out_t>();
        torch::stable::parallel_for(0, n, kCpuGrain, [&](int64_t begin, int64_t end) {
          BroadcastWalk walk(b.dims, 2, begin);
          int64_t run = 0;
          for (int64_t i = begin; i < end; walk.advance(run), i += run) {
            run = walk.run(end - i);
            const int64_t* offset = walk.offsets();
            const int64_t* step = walk.steps();
            for (int64_t k = 0; k < run; ++k) {
              out_p[i + k] = static_cast<out_t>(
                  forward<acc_t>(s_acc.a, static_cast<acc_t>(data.x[offset[0] + k * step[0]]),
                                 static_cast<acc_t>(data.b[offset[1] + k * step[1]])));
            }
          }
        });
      }));
  return b.out;
}

Tensor forward_impl(const Tensors<const Tensor&>& in, const Scalars<double>& s) {
  check_forward_inputs(in);
  const std::vector<int64_t> shape = broadcast_shape("fused_axpby", {{"x", in.x}, {"b", in.b}});
  if (!all_of_shape(shape, {&in.x, &in.b})) return forward_broadcast(in, s, shape);
  Forward f = prepare_forward(in);
  const int64_t n = f.out.numel();
  THO_DISPATCH_SWITCH(
      in.x.scalar_type(), "fused_axpby_cpu", FUSED_AXPBY_DISPATCH_CASES([&] {
        using out_t = scalar_t;
        // double where the input or the output is double; float for the rest.
        using acc_t =
            std::conditional_t<std::is_same_v<scalar_t, double> || std::is_same_v<out_t, double>,
                               double, float>;
        const Scalars<acc_t> s_acc{static_cast<acc_t>(s.a)};
        const Tensors<const scalar_t*> data{f.dense.x.const_data_ptr<scalar_t>(),
                                            f.dense.b.const_data_ptr<scalar_t>()};
        out_t* out_p = f.out.mutable_data_ptr<out_t>();
        torch::stable::parallel_for(0, n, kCpuGrain, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) {
            out_p[i] = static_cast<out_t>(forward<acc_t>(s_acc.a, static_cast<acc_t>(data.x[i]),
                                                         static_cast<acc_t>(data.b[i])));
          }
        });
      }));
  return f.out;
}

Tensor backward_impl(const Tensor& grad, const GradReads<const Tensor&>& reads,
                     const Scalars<double>& s) {
  check_backward_inputs(grad, reads);
  Backward b = prepare_backward(grad, reads);
  Grads<Tensor>& grads = b.grads;
  const int64_t n = grad.numel();
  THO_DISPATCH_SWITCH(
      grad.scalar_type(), "fused_axpby_backward_cpu", FUSED_AXPBY_DISPATCH_CASES([&] {
        // float for the half types, as PyTorch computes them.
        using acc_t = std::conditional_t<std::is_same_v<scalar_t, double>, double, float>;
        const Scalars<acc_t> s_acc{static_cast<acc_t>(s.a)};
        const scalar_t* grad_p = b.grad.const_data_ptr<scalar_t>();
        const int64_t grad_step = b.grad_step;
        const Grads<scalar_t*> grads_p{grads.x.mutable_data_ptr<scalar_t>()};
        torch::stable::parallel_for(0, n, kCpuGrain, [&](int64_t begin, int64_t end) {
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

Tensor forward_impl(const Tensors<const Tensor&>& in, const Scalars<double>& s);

// t copied out to like's shape and layout: for broadcasts of more than kMaxDims dimensions.
// (copy_ broadcasts its source to the destination's shape.)
Tensor expanded(const Tensor& t, const Tensor& like) {
  Tensor copy = new_in_layout(&like, like, t.scalar_type());
  torch::stable::copy_(copy, t);
  return copy;
}

// Tensors of different shapes (see Broadcast in csrc/fused_axpby_kernel.h): each read in
// place through its strides.
Tensor forward_broadcast(const Tensors<const Tensor&>& in, const Scalars<double>& s, Sizes shape) {
  BroadcastForward f = prepare_forward_broadcast(in, shape);
  const int64_t n = f.out.numel();
  if (n == 0) return f.out;
  if (f.dims.sizes.size() > size_t(kMaxDims)) {
    return forward_impl({expanded(in.x, f.out), expanded(in.b, f.out)}, s);
  }
  Broadcast<Tensors<int64_t>> b{};
  b.ndim = int(f.dims.sizes.size());
  for (int d = 0; d < b.ndim; ++d) {
    b.sizes[d] = f.dims.sizes[d];
    b.strides[d] = {f.dims.strides[d][0], f.dims.strides[d][1]};
  }
  const cudaStream_t stream = current_stream(in.x);
  THO_DISPATCH_SWITCH(
      in.x.scalar_type(), "fused_axpby_broadcast_cuda", FUSED_AXPBY_DISPATCH_CASES([&] {
        using out_t = scalar_t;
        const Tensors<const CudaScalar<scalar_t>*> data{cuda_data<scalar_t>(in.x),
                                                        cuda_data<scalar_t>(in.b)};
        STD_CUDA_CHECK(
            launch_forward_broadcast(data, cuda_mutable_data<out_t>(f.out), n, b, s, stream));
      }));
  return f.out;
}

Tensor forward_impl(const Tensors<const Tensor&>& in, const Scalars<double>& s) {
  check_forward_inputs(in);
  // Allocate, copy and launch on the inputs' device, whichever device is current.
  const torch::stable::accelerator::DeviceGuard device_guard(in.x.get_device_index());
  const std::vector<int64_t> shape = broadcast_shape("fused_axpby", {{"x", in.x}, {"b", in.b}});
  if (!all_of_shape(shape, {&in.x, &in.b})) return forward_broadcast(in, s, shape);
  Forward f = prepare_forward(in);
  const int64_t n = f.out.numel();
  if (n == 0) return f.out;
  const cudaStream_t stream = current_stream(in.x);
  THO_DISPATCH_SWITCH(
      in.x.scalar_type(), "fused_axpby_cuda", FUSED_AXPBY_DISPATCH_CASES([&] {
        using out_t = scalar_t;
        const Tensors<const CudaScalar<scalar_t>*> data{cuda_data<scalar_t>(f.dense.x),
                                                        cuda_data<scalar_t>(f.dense.b)};
        STD_CUDA_CHECK(launch_forward(data, cuda_mutable_data<out_t>(f.out), n, s, stream));
      }));
  return f.out;
}

Tensor backward_impl(const Tensor& grad, const GradReads<const Tensor&>& reads,
                     const Scalars<double>& s) {
  check_backward_inputs(grad, reads);
  const torch::stable::accelerator::DeviceGuard device_guard(grad.get_device_index());
  Backward b = prepare_backward(grad, reads);
  Grads<Tensor>& grads = b.grads;
  const int64_t n = grad.numel();
  if (n == 0) return grads.x;
  const cudaStream_t stream = current_stream(grad);
  THO_DISPATCH_SWITCH(
      grad.scalar_type(), "fused_axpby_backward_cuda", FUSED_AXPBY_DISPATCH_CASES([&] {
        const GradReads<const CudaScalar<scalar_t>*> data{};
        const Grads<CudaScalar<scalar_t>*> grads_p{cuda_mutable_data<scalar_t>(grads.x)};
        STD_CUDA_CHECK(
            launch_backward(cuda_data<scalar_t>(b.grad), b.grad_step, data, grads_p, n, s, stream));
      }));
  return grads.x;
}

}  // namespace cuda
#endif  // WITH_CUDA

// The functions the dispatcher calls, with the arguments one by one in the schema's order.
Tensor forward_cpu(double a, const Tensor& x, const Tensor& b) {
  return cpu::forward_impl({x, b}, {a});
}

Tensor backward_cpu(const Tensor& grad, double a) { return cpu::backward_impl(grad, {}, {a}); }

#ifdef WITH_CUDA
Tensor forward_cuda(double a, const Tensor& x, const Tensor& b) {
  return cuda::forward_impl({x, b}, {a});
}

Tensor backward_cuda(const Tensor& grad, double a) { return cuda::backward_impl(grad, {}, {a}); }
#endif  // WITH_CUDA
}  // namespace

STABLE_TORCH_LIBRARY_IMPL(fused_axpby_stable, CPU, m) {
  m.impl("fused_axpby", TORCH_BOX(&forward_cpu));
  m.impl("_fused_axpby_no_autograd", TORCH_BOX(&forward_cpu));
  m.impl("fused_axpby_backward", TORCH_BOX(&backward_cpu));
}

#ifdef WITH_CUDA
STABLE_TORCH_LIBRARY_IMPL(fused_axpby_stable, CUDA, m) {
  m.impl("fused_axpby", TORCH_BOX(&forward_cuda));
  m.impl("_fused_axpby_no_autograd", TORCH_BOX(&forward_cuda));
  m.impl("fused_axpby_backward", TORCH_BOX(&backward_cuda));
}
#endif

}  // namespace fused_axpby
