// The logical label every communication operation carries (e.g. `feedback.sampled@step7`).
// Real NCCL ignores it; traces record it and the simulator checks it at every pairing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ppspec::core {

struct Label {
  // Must outlive the run: a string literal, or a string owned by the scenario.
  std::string_view name;
  // The engine step the operation belongs to; -1 when the operation has none.
  int64_t step = -1;

  bool empty() const { return name.empty(); }
  std::string str() const;  // "name" or "name@stepN"
  friend bool operator==(const Label& a, const Label& b) { return a.step == b.step && a.name == b.name; }
};

}  // namespace ppspec::core
