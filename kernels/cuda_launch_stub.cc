// The CUDA launchers of a build without the CUDA toolkit: the real backend is not built then, so
// only a broken build could call one; it says so instead of running nothing.
#include <stdexcept>

#include "kernels/cuda_launch.h"

namespace ppspec::kernels::cuda {

#define PPSPEC_CUDA_LAUNCHER_STUB(K)                                                     \
  void launch(const K&, int64_t, void*) {                                                \
    throw std::logic_error("ppspec was built without CUDA: no device launcher for " #K); \
  }                                                                                      \
  void preload(const K&) { throw std::logic_error("ppspec was built without CUDA: no module of " #K); }
PPSPEC_ENGINE_KERNELS(PPSPEC_CUDA_LAUNCHER_STUB)
#undef PPSPEC_CUDA_LAUNCHER_STUB

}  // namespace ppspec::kernels::cuda
