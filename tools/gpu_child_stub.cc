// Without the real backend (no CUDA toolkit or NCCL at build time) there is no GPU child.
#include "tools/gpu_backend.h"

namespace ppspec::tools {

bool gpu_backend_built() { return false; }
int gpu_child_main(const GpuChildArgs&) { return 2; }

}  // namespace ppspec::tools

#include <iostream>

#include "tools/gpu_latency.h"

namespace ppspec::tools {

int gpu_latency_main(int, int64_t) {
  std::cerr << "ppspec: this ppspec was built without the GPU backend\n";
  return 2;
}

}  // namespace ppspec::tools
