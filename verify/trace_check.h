// Checks a recorded event stream: positional pairing (fifo-misalignment) and, for a GPU run that
// hung, the watchdog's dump of what each rank had posted and where each host thread was stuck.
#pragma once

#include <vector>

#include "core/event.h"
#include "core/verdict.h"
#include "traces/trace_reader.h"

namespace ppspec::verify {

// The hang finding of a watchdog dump (op_pending and actor_blocked events).
core::Finding hang_finding(const std::vector<core::Event>& dump, core::Time timeout);

// Findings in order of the event that revealed them (earliest first); the verdict is the first's.
core::RunResult check_events(const std::vector<core::Event>& events);
core::RunResult check_trace(const traces::Trace& trace);

}  // namespace ppspec::verify
