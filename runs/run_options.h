// The options of one simulated run, for either scenario kind, built in one place from the scenario
// and what the command chose: `ppspec run`, `replay`, `fuzz` (its campaign), `fidelity` and the
// oracle and comparison runs of `run --backend gpu|both` differ only in their choices, never in
// how a choice becomes an option.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/event.h"
#include "program/program.h"
#include "program/runner.h"
#include "serving/runner.h"
#include "serving/scenario.h"
#include "sim/policy.h"

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
  sim::NcclObserver* nccl_observer =
      nullptr;  // what NCCL's profiler interface would be told (the adapter of nccl_profiler/)
};

program::SimRunOptions sim_options(const program::Program& p, const RunChoices& c);
serving::RunOptions sim_options(const serving::ServingScenario& s, const RunChoices& c);

}  // namespace ppspec::runs
