// Verdict precedence. Several checkers may fire in one run — the simulator (a misaligned pairing, a
// deadlock), the event-stream monitors, the oracles after the run. The earliest failure decides the
// verdict and is reported first; the other failures follow in time order. Hazards are notes, unless
// nothing failed and the scenario is strict, when they decide the verdict themselves.
#pragma once

#include <vector>

#include "core/verdict.h"

namespace ppspec::verify {

void settle_verdict(core::RunResult& r, std::vector<core::Finding> more, bool strict);

// A verdict that says the system misbehaved, not merely that it risks to.
inline bool is_failure(core::Verdict v) { return v != core::Verdict::pass && v != core::Verdict::hazard; }

}  // namespace ppspec::verify
