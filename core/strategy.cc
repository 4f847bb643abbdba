#include "core/strategy.h"

#include <charconv>
#include <fmt/format.h>

namespace ppspec::core {
namespace {

bool parse_u64(std::string_view s, uint64_t& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

std::string StrategySpec::str() const {
  if (kind == Kind::random) return "random";
  if (horizon == StrategySpec{}.horizon) return fmt::format("pct:{}", depth);
  return fmt::format("pct:{}:{}", depth, horizon);
}

std::optional<StrategySpec> parse_strategy(std::string_view s) {
  StrategySpec spec;
  if (s == "random") return spec;
  if (s.substr(0, 4) != "pct:") return std::nullopt;
  spec.kind = StrategySpec::Kind::pct;
  std::string_view rest = s.substr(4);
  const size_t colon = rest.find(':');
  uint64_t depth = 0;
  if (!parse_u64(rest.substr(0, colon), depth) || depth < 1 || depth > 64) return std::nullopt;
  spec.depth = static_cast<int>(depth);
  if (colon != std::string_view::npos) {
    if (!parse_u64(rest.substr(colon + 1), spec.horizon) || spec.horizon < 1 || spec.horizon > (uint64_t{1} << 40))
      return std::nullopt;
  }
  return spec;
}

}  // namespace ppspec::core
