#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kernels/cuda_launch.h"
#include "kernels/launch.h"

namespace ppspec::kernels::cuda {

// cudaFuncGetAttributes loads the function's module under lazy loading, as warmup needs.
#define PPSPEC_CUDA_LAUNCHER(K)                                                            \
  void launch(const K& k, int64_t rows, void* stream) { run_on_gpu(k, rows, stream); }    \
  void preload(const K&) {                                                                \
    cudaFuncAttributes attr;                                                              \
    const cudaError_t e = cudaFuncGetAttributes(&attr, row_kernel<K>);                    \
    if (e != cudaSuccess) throw std::runtime_error(std::string("loading " #K ": ") + cudaGetErrorString(e)); \
  }
PPSPEC_ENGINE_KERNELS(PPSPEC_CUDA_LAUNCHER)
#undef PPSPEC_CUDA_LAUNCHER

}  // namespace ppspec::kernels::cuda
