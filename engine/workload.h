// The requests of a serving scenario, drawn from its workload seed: prompts, output lengths,
// arrival times, sampling seeds and temperature.
#pragma once

#include <cstdint>
#include <vector>

#include "core/types.h"
#include "engine/config.h"

namespace ppspec::engine {

struct RequestSpec {
  int64_t id = 0;
  std::vector<int32_t> prompt;
  int max_tokens = 0;
  core::Time arrival = 0;
  int64_t seed = 0;
  uint32_t spread = 0;  // 0: greedy; else the temperature's weight spread (kernels/rejection_sample.h)
  bool abort = false;   // aborted once it has `abort_after` output tokens
  int priority = 0;     // vLLM's request priority: under the priority policy a lower value runs first
};

std::vector<RequestSpec> make_workload(const EngineConfig& cfg);
// The requests data-parallel replica `replica` serves: those whose id % dp == replica (vLLM's DP
// front end balances by load; a fixed split keeps the run a function of the scenario and seed).
std::vector<RequestSpec> make_replica_workload(const EngineConfig& cfg, int replica);

// The integer weight spread the sampler uses for a temperature.
uint32_t spread_of(double temperature);

}  // namespace ppspec::engine
