// `ppspec run --backend gpu` and `fidelity`'s GPU side: each scenario runs in a child process of
// its own on the GPUs of this machine, so that a hang (ended by the real backend's watchdog with
// _exit) costs only that child, and CUDA_MODULE_LOADING can be set per scenario before CUDA starts.
// The child is this process forked, not a new program: it runs the scenario this process loaded
// (runs::execute, target gpus) and hands back its result (runs/gpu_jobs/result_codec.h); nothing is
// read or reported twice. This process must not have initialised CUDA (CUDA does not survive a
// fork): the CLI never touches it.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "core/types.h"
#include "runs/execute.h"
#include "scenario/scenario.h"

namespace ppspec::gpu_jobs {

struct GpuRunOptions {
  std::string trace;                       // JSON Lines path for this run; empty: none
  std::optional<core::Time> hang_timeout;  // overrides the scenario's
};
// What `run --backend gpu` and `fidelity` choose: the trace path and --hang-timeout in seconds.
GpuRunOptions gpu_run_options(std::string trace, std::optional<double> hang_timeout_s);

// How a GPU run ended when it gave no result: bad input (the scenario does not fit this machine,
// a mode the real backend lacks: exit 2) or a failure of the run itself (a CUDA error, a child
// that died or wrote no verdict: exit 3). Never a pass.
enum class GpuFailure : uint8_t { none, bad_input, failed };

struct GpuOutcome {
  GpuFailure failure = GpuFailure::none;
  std::string error;
  std::optional<runs::Executed> executed;  // the run's result, when `failure` is none
  double wall_ms = 0;                      // from the start of the child to its end
};

// What the child does: runs its scenario and writes the result (result_codec.h) to the path it is
// given, atomically. `child_run` is the real one; tests give stand-ins (tests/gpu_child_test.cc).
using ChildBody = std::function<void(const std::string& result_path)>;
ChildBody child_run(const scenario::Loaded& loaded, const GpuRunOptions& opts);

// Runs `loaded` in a child process on this machine's GPUs.
GpuOutcome run_on_gpus(const scenario::Loaded& loaded, const GpuRunOptions& opts);
// The same with the child's body given.
GpuOutcome run_in_child(const scenario::Loaded& loaded, const GpuRunOptions& opts, const ChildBody& body);
bool gpu_backend_built();

}  // namespace ppspec::gpu_jobs
