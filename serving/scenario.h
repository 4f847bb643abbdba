// A serving scenario (kind = "serving"): the engine's configuration plus what to check.
#pragma once

#include <optional>
#include <string>

#include "core/expect.h"
#include "engine/config.h"
#include "core/strategy.h"
#include "core/world_config.h"

namespace ppspec::serving {

struct Oracles {
  bool golden = true;              // greedy outputs equal the golden continuation
  bool pp_invariance = true;       // the same scenario at pp = 1 gives the same tokens and drafts
  bool padding_invariance = true;  // the same scenario without graphs (no padding) gives the same
};

// A serving run checks races unless its scenario says otherwise ([runtime] race_detection).
inline core::WorldConfig serving_runtime_defaults() {
  core::WorldConfig c;
  c.detect_races = true;
  return c;
}

struct ServingScenario {
  std::string name;
  std::string file;
  std::string description;
  engine::EngineConfig config;
  // [runtime]: the rules of every backend (its core::RuntimeConfig part, all a GPU run reads) and
  // the simulator's own rules and costs.
  core::WorldConfig runtime = serving_runtime_defaults();
  Oracles oracles;
  core::Expect expect;
  uint64_t seed = 1;
  uint64_t seeds = 1;
  core::StrategySpec strategy;
};

}  // namespace ppspec::serving
