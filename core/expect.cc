#include "core/expect.h"

#include <algorithm>
#include <fmt/format.h>

namespace ppspec::core {

std::vector<FindingKind> sorted_kinds(std::vector<FindingKind> kinds) {
  std::sort(kinds.begin(), kinds.end(), [](FindingKind a, FindingKind b) { return to_string(a) < to_string(b); });
  kinds.erase(std::unique(kinds.begin(), kinds.end()), kinds.end());
  return kinds;
}

std::string expectation_mismatch(const Expect& expect, const RunResult& r) {
  if (r.verdict != expect.verdict)
    return fmt::format("verdict {}, expected {}", to_string(r.verdict), to_string(expect.verdict));
  if (expect.kind) {
    const std::string_view got = r.findings.empty() ? std::string_view("none") : to_string(r.findings.front().kind);
    if (got != to_string(*expect.kind))
      return fmt::format("verdict {} of kind {}, expected kind {}", to_string(r.verdict), got, *expect.kind);
  }
  if (!expect.hazards) return "";
  std::vector<FindingKind> found;
  for (const auto* list : {&r.notes, &r.findings})
    for (const auto& f : *list)
      if (f.verdict == Verdict::hazard) found.push_back(f.kind);
  const std::vector<FindingKind> kinds = sorted_kinds(std::move(found));
  if (kinds == *expect.hazards) return "";
  auto join = [](const std::vector<FindingKind>& v) {
    std::string s;
    for (const FindingKind k : v) s += fmt::format("{}{}", s.empty() ? "" : ", ", k);
    return s.empty() ? std::string("none") : s;
  };
  return fmt::format("hazards [{}], expected [{}]", join(kinds), join(*expect.hazards));
}

}  // namespace ppspec::core
