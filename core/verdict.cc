#include "core/verdict.h"

#include <array>
#include <utility>

namespace ppspec::core {
namespace {
constexpr std::array<std::pair<std::string_view, Verdict>, 11> kNames{{
    {"pass", Verdict::pass},
    {"fifo-misalignment", Verdict::fifo_misalignment},
    {"deadlock", Verdict::deadlock},
    {"hazard", Verdict::hazard},
    {"stale-draft", Verdict::stale_draft},
    {"padding-violation", Verdict::padding_violation},
    {"embedding-violation", Verdict::embedding_violation},
    {"output-divergence", Verdict::output_divergence},
    {"nondeterminism", Verdict::nondeterminism},
    {"step-limit", Verdict::step_limit},
    {"hang", Verdict::hang},
}};
}  // namespace

std::string_view to_string(Verdict v) {
  for (const auto& [name, value] : kNames)
    if (value == v) return name;
  return "?";
}

std::optional<Verdict> parse_verdict(std::string_view s) {
  for (const auto& [name, value] : kNames)
    if (name == s) return value;
  return std::nullopt;
}

std::string_view verdict_names() {
  return "pass, fifo-misalignment, deadlock, hazard, stale-draft, padding-violation, embedding-violation, "
         "output-divergence, nondeterminism, step-limit, hang";
}

bool Finding::involves_rank(RankId r) const {
  for (const Site& s : sites)
    if (s.rank == r) return true;
  return false;
}

}  // namespace ppspec::core
