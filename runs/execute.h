// The composition root of a run: a scenario (either kind) and what a command chose for this run,
// resolved against the scenario's [explore] into the one run configuration (sim::RunConfig) and run
// on the simulator, or run on this machine's GPUs. `ppspec run`, `replay`, `fuzz` (its campaign),
// `fidelity`, both sides of `run --backend gpu|both` and the GPU child process (runs/gpu_jobs/) differ
// only in their choices, never in how a choice becomes a run.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "core/event.h"
#include "core/verdict.h"
#include "program/program.h"
#include "scenario/scenario.h"
#include "serving/runner.h"
#include "serving/scenario.h"
#include "sim/run_config.h"

namespace ppspec::runs {

// What a run gave: a program's result, or a serving run (its result, figures and coverage).
struct Executed {
  std::variant<core::RunResult, serving::ServingRun> run;
  const core::RunResult& result() const;
  const serving::ServingRun* serving() const { return std::get_if<serving::ServingRun>(&run); }
};

// Where a scenario runs.
enum class Target : uint8_t { simulator, gpus };

// What a run on this machine's GPUs needs beyond its scenario. The real backend ends the process
// on a hang (its watchdog), on a CUDA or NCCL error and on a verdict NCCL forced: such a run
// belongs in a process of its own (gpu_jobs::run_on_gpus), and what it found is handed to `ended`
// (or its error to `failed`) before the process ends.
struct GpuChoices {
  std::string trace;                       // the trace this process writes; empty: none
  std::optional<core::Time> hang_timeout;  // unset: the scenario's
  uint64_t scenario_hash = 0;              // of the scenario's file, for the trace header
  std::function<void(const Executed&)> ended;
  std::function<void(const std::string& error)> failed;
};

// What a command chooses for one run; what it leaves unset comes from the scenario's [explore].
struct RunChoices {
  Target target = Target::simulator;
  GpuChoices gpu;                               // target gpus only; every choice below is the simulator's
  std::optional<uint64_t> seed;                 // unset: the scenario's [explore] seed
  std::optional<core::StrategySpec> strategy;   // unset: the scenario's [explore] strategy
  core::EventSink* sink = nullptr;              // the trace writer, or another listener; null: none
  std::optional<std::vector<uint32_t>> replay;  // a recorded schedule instead of the strategy
  // Programs only: keep the schedule, which a trace's trailer and `replay` need; a command that
  // writes no trace and runs many seeds (fuzz, fidelity) saves the memory.
  bool record_decisions = true;
  sim::NcclObserver* nccl_observer = nullptr;  // what NCCL's profiler interface would be told
};

// The run configuration of a scenario under a command's choices.
sim::RunConfig run_config(const program::Program& p, const RunChoices& c);
sim::RunConfig run_config(const serving::ServingScenario& s, const RunChoices& c);

// The scenario run on its target: a serving scenario with its monitors online and its oracles
// after the run (their references are simulated, whatever the target). On GPUs, a scenario that
// this machine cannot run throws NotRunnableHere.
core::RunResult execute(const program::Program& p, const RunChoices& c);
serving::ServingRun execute(const serving::ServingScenario& s, const RunChoices& c);
Executed execute(const scenario::Scenario& sc, const RunChoices& c);

// The same on this machine's GPUs (runs/execute_gpu_*.cc; without the real backend they throw
// NotRunnableHere saying so).
core::RunResult execute_on_gpus(const program::Program& p, const GpuChoices& g);
serving::ServingRun execute_on_gpus(const serving::ServingScenario& s, const GpuChoices& g);
// Whether this build has the real backend.
bool gpus_built();
// How long a GPU run of `p` or `s` may make no progress before its watchdog calls it a hang, unless
// the command says otherwise: a program's [explore] hang_timeout; for serving, long enough for
// NCCL's first connections and far shorter than NCCL's own 10-minute watchdog.
core::Time gpu_hang_timeout(const program::Program& p);
core::Time gpu_hang_timeout(const serving::ServingScenario& s);

// This machine cannot run the scenario on its GPUs (fewer GPUs than ranks, a mode the real backend
// lacks, a build without it): bad input for this machine (exit 2), not a failed run.
class NotRunnableHere : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ppspec::runs
