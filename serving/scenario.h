// A serving scenario (kind = "serving"): the engine's configuration plus what to check.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// A deployment knob its author did not fix ([explore] free): vLLM's default, or a value chosen for
// the scenario rather than the deployment. `ppspec fuzz --around` draws it (scenario/fuzzer/around.h).
enum class FreeAxis : uint8_t { max_num_seqs, max_num_batched_tokens, max_model_len };
inline constexpr std::string_view kFreeAxisNames = "max_num_seqs, max_num_batched_tokens, max_model_len";
// The longest prompt drawn around a scenario whose max_model_len is free (prompts past two of
// vLLM's default token budgets, in seconds a case); run judges what such a draw can reach with it.
inline constexpr int kLongestFreePrompt = 16384;
inline std::string_view to_string(FreeAxis a) {
  switch (a) {
    case FreeAxis::max_num_seqs: return "max_num_seqs";
    case FreeAxis::max_num_batched_tokens: return "max_num_batched_tokens";
    case FreeAxis::max_model_len: return "max_model_len";
  }
  return "?";
}
inline std::optional<FreeAxis> parse_free_axis(std::string_view s) {
  for (FreeAxis a : {FreeAxis::max_num_seqs, FreeAxis::max_num_batched_tokens, FreeAxis::max_model_len})
    if (to_string(a) == s) return a;
  return std::nullopt;
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
  std::vector<FreeAxis> free;  // [explore] free: sorted, unique
};

}  // namespace ppspec::serving
