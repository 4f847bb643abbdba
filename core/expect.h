// What a scenario expects of its runs ([expect]), and whether a run met it. Shared by program and
// serving scenarios.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/verdict.h"

namespace ppspec::core {

struct Expect {
  Verdict verdict = Verdict::pass;
  // false: the scenario has no [expect] (explore mode): it is run to see what it does, and only a
  // pass is as expected.
  bool given = true;
  std::optional<Verdict> gpu_verdict;               // for the real backend, where hardware may differ
  std::optional<std::vector<FindingKind>> hazards;  // if given: exactly these hazard kinds (sorted_kinds)
  // If given: the kind of the finding that decided the verdict (the first), so that the right
  // verdict for the wrong reason does not pass (core/finding_kinds.h).
  std::optional<FindingKind> kind;
  // Serving: the run's acceptance rate (accepted / verified drafts) lies in [lo, hi]; checked by
  // the serving oracles (kind `acceptance`), so a drafter that proposes worse drafts fails.
  std::optional<std::pair<double, double>> acceptance;
};

// `kinds` sorted by name, each once: how [expect] hazards are held and compared.
std::vector<FindingKind> sorted_kinds(std::vector<FindingKind> kinds);

// Why a simulated run does not meet the expectation, in words; empty when it does.
std::string expectation_mismatch(const Expect& expect, const RunResult& r);

}  // namespace ppspec::core
