// Without the real backend (no CUDA toolkit or NCCL at build time) there is no latency probe.
#include <iostream>

#include "runs/gpu_jobs/gpu_latency.h"

namespace ppspec::gpu_jobs {

int gpu_latency_main(int, int64_t) {
  std::cerr << "ppspec: this ppspec was built without the GPU backend\n";
  return 2;
}

}  // namespace ppspec::gpu_jobs
