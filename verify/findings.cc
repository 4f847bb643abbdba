#include "verify/findings.h"

#include <algorithm>

namespace ppspec::verify {

void settle_verdict(core::RunResult& r, std::vector<core::Finding> more, bool strict) {
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
}

}  // namespace ppspec::verify
