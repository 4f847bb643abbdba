// The composition root of a simulated run: a scenario (either kind) and what a command chose for
// this run, resolved against the scenario's [explore] into the one run configuration
// (sim::RunConfig), and run. `ppspec run`, `replay`, `fuzz` (its campaign), `fidelity` and the
// simulator's side of `run --backend gpu|both` differ only in their choices, never in how a choice
// becomes a run.
#pragma once

#include <cstdint>
#include <optional>
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

// What a command chooses for one run; what it leaves unset comes from the scenario's [explore].
struct RunChoices {
  std::optional<uint64_t> seed;                 // unset: the scenario's [explore] seed
  std::optional<sim::StrategySpec> strategy;    // unset: the scenario's [explore] strategy
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

// What a run gave: a program's result, or a serving run (its result, figures and coverage).
struct Executed {
  std::variant<core::RunResult, serving::ServingRun> run;
  const core::RunResult& result() const;
  const serving::ServingRun* serving() const { return std::get_if<serving::ServingRun>(&run); }
};

// The scenario run on the simulator: a serving scenario with its monitors online and its oracles
// after the run.
core::RunResult execute(const program::Program& p, const RunChoices& c);
serving::ServingRun execute(const serving::ServingScenario& s, const RunChoices& c);
Executed execute(const scenario::Scenario& sc, const RunChoices& c);

}  // namespace ppspec::runs
