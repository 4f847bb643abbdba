// `ppspec run --backend gpu`: each scenario runs in a child process of its own on the GPUs of this
// machine, so that a hang (ended by the real backend's watchdog with _exit) costs only that child,
// and CUDA_MODULE_LOADING can be set per scenario before CUDA starts.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "core/types.h"
#include "program/program.h"
#include "tools/report.h"

namespace ppspec::tools {

struct GpuRunOptions {
  std::string trace;                         // JSON Lines path for this run; empty: none
  std::optional<core::Time> hang_timeout;    // overrides the scenario's
};

// Runs one program scenario in a child process. Returns false with `error` set when the run could
// not take place (no GPUs, too few, a CUDA error); `rec.result` holds the verdict otherwise.
bool run_on_gpu(const program::Program& p, const GpuRunOptions& opts, RunRecord& rec, std::string& error);

// The child's entry point (`ppspec gpu-child`): runs FILE on the real backend and writes the
// result as JSON to RESULT. Exit status 0 when RESULT was written.
struct GpuChildArgs {
  std::string file;
  std::string result;
  std::string trace;
  double hang_timeout_s = -1;
};
int gpu_child_main(const GpuChildArgs& args);
bool gpu_backend_built();

}  // namespace ppspec::tools
