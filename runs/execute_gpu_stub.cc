// Without the real backend (no CUDA toolkit or NCCL at build time) no scenario runs on GPUs.
#include "runs/execute.h"

namespace ppspec::runs {
namespace {

[[noreturn]] void refuse() {
  throw NotRunnableHere("this ppspec was built without the GPU backend (CMake found no CUDA toolkit or NCCL)");
}

}  // namespace

bool gpus_built() { return false; }
core::RunResult execute_on_gpus(const program::Program&, const GpuChoices&) { refuse(); }
serving::ServingRun execute_on_gpus(const serving::ServingScenario&, const GpuChoices&) { refuse(); }

}  // namespace ppspec::runs
