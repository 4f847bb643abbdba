// Schedule policies: which ready fiber runs next. Every interleaving the simulator explores comes
// from one of these, driven by a seed, so a failing schedule is reproduced by its seed.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/strategy.h"
#include "sim/fiber.h"

namespace ppspec::sim {

class SchedulePolicy {
 public:
  virtual ~SchedulePolicy() = default;
  virtual void on_spawn(Fiber& f) { (void)f; }
  // `ready` has at least one fiber, in a deterministic order; returns an index into it.
  virtual size_t pick(std::span<Fiber* const> ready, uint64_t step) = 0;
  // Replay reports a schedule that no longer fits the program.
  virtual bool diverged() const { return false; }
  virtual std::string describe() const = 0;
};

// Uniformly random among the ready fibers.
std::unique_ptr<SchedulePolicy> make_random_policy(uint64_t seed);

// Probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010): random fiber priorities,
// highest ready runs; at depth-1 random steps within `horizon`, the running fiber drops to the
// lowest priority. Finds any bug of depth d with probability ≥ 1/(n·k^(d-1)).
std::unique_ptr<SchedulePolicy> make_pct_policy(uint64_t seed, int depth, uint64_t horizon);

// Re-executes a recorded list of decisions (fiber ids chosen at contested points).
std::unique_ptr<SchedulePolicy> make_replay_policy(std::vector<uint32_t> decisions);

std::unique_ptr<SchedulePolicy> make_policy(const core::StrategySpec& spec, uint64_t seed);

}  // namespace ppspec::sim
