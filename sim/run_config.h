// How one simulated run is driven, for either kind of scenario: its schedule (a seed and a
// strategy, or a recorded schedule replayed), who listens to its events, and what it keeps. A
// command never fills it by hand: runs/execute.h resolves it from the scenario's [explore] and the
// command's choices, in one place.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/event.h"
#include "sim/nccl_observer.h"
#include "sim/policy.h"

namespace ppspec::sim {

struct RunConfig {
  uint64_t seed = 1;
  core::StrategySpec strategy;
  // A recorded schedule instead of the strategy (serving: the run under test only; the oracles'
  // reference runs use the strategy).
  std::optional<std::vector<uint32_t>> replay;
  std::vector<core::EventSink*> sinks;  // serving: the run under test only
  // Programs: keep the schedule, which a trace's trailer and `replay` need (a serving run always
  // keeps it); a command that writes no trace and runs many seeds saves the memory.
  bool record_decisions = true;
  NcclObserver* nccl_observer = nullptr;  // what NCCL's profiler interface would be told; null: none
  bool oracles = true;                    // serving: the whole-run oracles after the run
};

}  // namespace ppspec::sim
