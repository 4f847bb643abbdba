// Runs a serving scenario on the simulator, then its oracles.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/event.h"
#include "core/verdict.h"
#include "engine/engine.h"
#include "serving/scenario.h"
#include "sim/policy.h"

namespace ppspec::serving {

struct ServingRun {
  core::RunResult result;             // verdict and findings, oracles included
  engine::ServingStats stats;
  std::vector<engine::RequestRecord> requests;  // the workload's requests (dummies left out)
  bool completed = false;
};

struct RunOptions {
  uint64_t seed = 1;
  sim::StrategySpec strategy;
  std::vector<core::EventSink*> sinks;
  bool oracles = true;
};

// One run of the engine on the simulator (no oracles).
ServingRun simulate(const engine::EngineConfig& cfg, const RunOptions& opts);
// The run, then its oracles: golden and PP invariance (the latter simulates the scenario at pp = 1).
ServingRun run_on_sim(const ServingScenario& s, const RunOptions& opts);

}  // namespace ppspec::serving
