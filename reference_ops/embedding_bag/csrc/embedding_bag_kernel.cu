// embedding_bag_kernel.cu: compiles your CUDA kernels (csrc/embedding_bag_cuda.cuh) for each
// dtype of embedding_bag.
//
// Generated, and kept up to date by opgen update: the dtypes come from the op's answers.
// Pure CUDA, no torch headers, so editing a kernel rebuilds in seconds.
#include "embedding_bag_cuda.cuh"

namespace embedding_bag {
namespace cuda {

template void forward<float>(const Inputs<float>&, const Scalars&, const Outputs<float>&,
                             cudaStream_t);
template void backward<float>(const GradOutputs<float>&, const Inputs<float>&, const Scalars&,
                              const GradInputs<float>&, cudaStream_t);
template void forward<double>(const Inputs<double>&, const Scalars&, const Outputs<double>&,
                              cudaStream_t);
template void backward<double>(const GradOutputs<double>&, const Inputs<double>&, const Scalars&,
                               const GradInputs<double>&, cudaStream_t);
template void forward<__half>(const Inputs<__half>&, const Scalars&, const Outputs<__half>&,
                              cudaStream_t);
template void backward<__half>(const GradOutputs<__half>&, const Inputs<__half>&, const Scalars&,
                               const GradInputs<__half>&, cudaStream_t);
template void forward<__nv_bfloat16>(const Inputs<__nv_bfloat16>&, const Scalars&,
                                     const Outputs<__nv_bfloat16>&, cudaStream_t);
template void backward<__nv_bfloat16>(const GradOutputs<__nv_bfloat16>&,
                                      const Inputs<__nv_bfloat16>&, const Scalars&,
                                      const GradInputs<__nv_bfloat16>&, cudaStream_t);

}  // namespace cuda
}  // namespace embedding_bag
