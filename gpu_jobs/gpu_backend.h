// `ppspec run --backend gpu`: each scenario runs in a child process of its own on the GPUs of this
// machine, so that a hang (ended by the real backend's watchdog with _exit) costs only that child,
// and CUDA_MODULE_LOADING can be set per scenario before CUDA starts.
#pragma once

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/types.h"
#include "program/program.h"
#include "report/report.h"

namespace ppspec::gpu_jobs {

struct GpuRunOptions {
  std::string trace;                       // JSON Lines path for this run; empty: none
  std::optional<core::Time> hang_timeout;  // overrides the scenario's
};
// What `run --backend gpu` and `fidelity` choose: the trace path and --hang-timeout in seconds.
GpuRunOptions gpu_run_options(std::string trace, std::optional<double> hang_timeout_s);

// One scenario for a child process: what the parent must know before CUDA starts.
struct GpuJob {
  std::string file;
  std::string name;
  core::ModuleLoading module_loading = core::ModuleLoading::lazy;
  core::Time hang_timeout = 20 * core::kSec;
  bool runtime_connect = true;  // NCCL_RUNTIME_CONNECT, read by NCCL at its first call
};

// How a GPU run ended when it gave no verdict: bad input (the scenario does not fit this machine,
// a mode the real backend lacks: exit 2) or a failure of the run itself (a CUDA error, a child
// that died or wrote no verdict: exit 3). Never a pass.
enum class GpuFailure : uint8_t { none, bad_input, failed };

struct GpuOutcome {
  GpuFailure failure = GpuFailure::none;
  std::string error;
  nlohmann::json result;  // the child's result (serving runs: requests, stats, completed)
};

// Runs one scenario in a child process; `rec.result` holds the verdict when `failure` is none.
GpuOutcome run_on_gpu(const GpuJob& job, const GpuRunOptions& opts, report::RunRecord& rec);

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

}  // namespace ppspec::gpu_jobs
