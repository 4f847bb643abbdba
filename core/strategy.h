// How a scenario's runs explore schedules ([explore] strategy): uniformly random, or probabilistic
// concurrency testing of a depth. The simulator's policies implement it (sim/policy.h); a scenario
// states it without naming the simulator.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ppspec::core {

// "random" or "pct:D" (optionally "pct:D:HORIZON").
struct StrategySpec {
  enum class Kind { random, pct } kind = Kind::random;
  int depth = 3;
  uint64_t horizon = 2000;
  std::string str() const;
};
std::optional<StrategySpec> parse_strategy(std::string_view s);
// What parse_strategy accepts, for messages.
inline constexpr std::string_view kStrategySyntax =
    "\"random\" or \"pct:DEPTH\" (DEPTH 1..64; optionally pct:DEPTH:HORIZON, HORIZON 1..2^40 scheduling steps, default "
    "2000)";

}  // namespace ppspec::core
