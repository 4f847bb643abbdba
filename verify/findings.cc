#include "verify/findings.h"

#include <algorithm>

#include "core/assert.h"

namespace ppspec::verify {

void settle_verdict(core::RunResult& r, std::vector<core::Finding> more, bool strict) {
  const size_t given = r.findings.size() + r.notes.size() + more.size();
  std::vector<core::Finding> failures, notes = std::move(r.notes);
  for (std::vector<core::Finding>* from : {&r.findings, &more})
    for (core::Finding& f : *from) (is_failure(f.verdict) ? failures : notes).push_back(std::move(f));
  auto by_time = [](const core::Finding& a, const core::Finding& b) { return a.time < b.time; };
  std::stable_sort(failures.begin(), failures.end(), by_time);
  std::stable_sort(notes.begin(), notes.end(), by_time);
  r.findings.clear();
  r.notes.clear();
  if (!failures.empty()) {
    r.findings = std::move(failures);
    r.notes = std::move(notes);
  } else if (strict) {
    for (core::Finding& f : notes) (f.verdict == core::Verdict::hazard ? r.findings : r.notes).push_back(std::move(f));
  } else {
    r.notes = std::move(notes);
  }
  r.verdict = r.findings.empty() ? core::Verdict::pass : r.findings.front().verdict;
  PPSPEC_ASSERT(r.findings.size() + r.notes.size() == given, "{} findings and notes settled into {}", given,
                r.findings.size() + r.notes.size());
  PPSPEC_ASSERT(r.findings.empty() == (r.verdict == core::Verdict::pass), "verdict {} over {} findings",
                core::to_string(r.verdict), r.findings.size());
}

}  // namespace ppspec::verify
