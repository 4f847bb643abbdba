// "1 rank", "2 ranks": a count with its noun in the number the count takes.
#pragma once

#include <cstdint>
#include <fmt/format.h>
#include <string>
#include <string_view>

namespace ppspec::core {

// `many` defaults to `one` + "s".
inline std::string count_of(int64_t n, std::string_view one, std::string_view many = {}) {
  if (n == 1) return fmt::format("1 {}", one);
  return many.empty() ? fmt::format("{} {}s", n, one) : fmt::format("{} {}", n, many);
}

}  // namespace ppspec::core
