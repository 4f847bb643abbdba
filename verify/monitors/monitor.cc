#include "verify/monitors/monitor.h"

#include <fmt/format.h>

namespace ppspec::verify {

core::Finding finding_at(const core::Event& e, core::Verdict v, core::FindingKind kind, std::string summary) {
  PPSPEC_ASSERT(kind != core::FindingKind::none, "a finding without a kind: {}", summary);
  core::Finding f;
  f.verdict = v;
  f.kind = kind;
  f.time = e.t;
  f.engine_step = e.step;
  f.request = e.req;  // the probe's request is the one the finding is about; a caller names another
  f.summary = std::move(summary);
  return f;
}

std::string token_list(std::span<const int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += fmt::format("{}{}", i ? ", " : "", v[i]);
  return s + "]";
}

}  // namespace ppspec::verify
