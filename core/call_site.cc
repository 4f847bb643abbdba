#include "core/call_site.h"

#include <charconv>
#include <fmt/format.h>

namespace ppspec::core {
namespace {
constexpr std::string_view kPrefix = "execute_model step ";
}

std::string step_call_site(int64_t step) { return fmt::format("{}{}", kPrefix, step); }

std::optional<int64_t> step_of_call_site(std::string_view call_site) {
  if (!call_site.starts_with(kPrefix)) return std::nullopt;
  int64_t step = 0;
  const auto digits = call_site.substr(kPrefix.size());
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
  if (ec != std::errc{} || end != digits.data() + digits.size() || step < 0) return std::nullopt;
  return step;
}

}  // namespace ppspec::core
