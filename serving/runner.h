// Runs a serving scenario on the simulator, then its oracles.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "core/event.h"
#include "core/verdict.h"
#include "engine/engine.h"
#include "serving/paths_reached.h"
#include "serving/scenario.h"
#include "sim/run_config.h"
#include "verify/oracles/serving_oracles.h"

namespace ppspec::serving {

struct ServingRun {
  core::RunResult result;  // verdict and findings, oracles included
  engine::ServingStats stats;
  std::vector<engine::RequestRecord> requests;  // the workload's requests (dummies left out)
  bool completed = false;
  verify::OnlineCoverage coverage;  // what the online monitors checked
  PathsReached paths;               // the engine paths it reached
};

// What a serving run needs of its runtime beyond the interface: how to stop at the first failure
// (the simulator halts; hardware cannot, the run goes on), and where hazards are noted.
struct RuntimeHooks {
  std::function<void(const core::Finding&)> failed;  // at each failure: the simulator halts
  std::function<void(core::Finding)> note;
  std::function<std::vector<core::Finding>()> notes;  // the notes to report, when the runtime keeps none
};

// The engine on a runtime with the serving monitors online (no oracles).
// `strict`: hazards fail the run.
ServingRun serve(core::Runtime& rt, const engine::EngineConfig& cfg, const std::vector<core::EventSink*>& sinks,
                 const RuntimeHooks& hooks, bool strict);
// One run of the engine on the simulator configured by `runtime` (no oracles).
ServingRun simulate(const engine::EngineConfig& cfg, const core::WorldConfig& world, const sim::RunConfig& opts);
// The oracles over a completed run (golden, PP and padding invariance, whose references are
// simulated); their findings join the run's.
void check_oracles(const ServingScenario& s, const sim::RunConfig& opts, ServingRun& run);
// What an invariance oracle reports when its reference run (`name`: "pp = 1", "eager", ...) did not
// complete: the reference's own first failure, said to be the reference's (its engine step, rank
// and request kept), or, when nothing failed, that there was nothing to compare against.
core::Finding reference_failure(const std::string& name, core::FindingKind kind, core::Time at,
                                const core::RunResult& reference);
// The run, then its oracles: golden and PP invariance (the latter simulates the scenario at pp = 1).
ServingRun run_on_sim(const ServingScenario& s, const sim::RunConfig& opts);

}  // namespace ppspec::serving
