// The scenario a trace was recorded with, found the same way by every command that reads a trace
// (`check`, `show`, `export` through check_path, and `replay`).
#pragma once

#include <iosfwd>
#include <string>

#include "tools/run_support.h"
#include "traces/trace_format.h"
#include "traces/trace_reader.h"

namespace ppspec::tools {

// Where it looks, in this order:
//   1. `cli_scenario` (--scenario FILE) when given, and nothing else;
//   2. else the scenario the header embeds (`scenario_text`), named as the header's `file`;
//   3. else the file the header names (`file`), as named (from the working folder),
//   4. then, when that name is relative, the same name beside the trace.
// A candidate that cannot be read is passed over; so is one whose bytes do not hash to the
// header's `scenario_hash` (the next may be the file as it was) unless what it says does
// (`content_hash`: it differs only in comments and blank lines, noted on `err`). The first that
// matches is loaded.
// A header with no `scenario_hash` (an older ppspec) is trusted only with --scenario, with a note
// on `err`.
//
// Throws core::InputError at (`trace`, line 1) when:
//   - the header records no hash and no --scenario is given: "... records no scenario hash ...";
//   - a candidate was found but changed: "the scenario FILE has changed since this trace was recorded
//     (hash H, recorded R); ..." (the last such candidate);
//   - nothing was found: "cannot find the scenario 'NAME' ..." (NAME: --scenario's, else the header's);
//   - the header names no file and no --scenario is given.
// A scenario that is found but does not load throws the loader's error (its file, line, what was
// expected).
Loaded trace_scenario(const traces::TraceHeader& h, const std::string& trace, const std::string& cli_scenario,
                      std::ostream& err);

// Bounds the reader's ranks by the scenario its header embeds (its ranks, all data-parallel
// replicas'), where it embeds one that loads; else leaves them unbounded (a command that needs the
// scenario finds it with trace_scenario, and says why it cannot).
void limit_to_embedded_ranks(traces::TraceReader& reader);

}  // namespace ppspec::tools
