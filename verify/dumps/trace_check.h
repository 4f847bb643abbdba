// Checks a recorded event stream: positional pairing (fifo-misalignment) and, for a GPU run that
// hung, the watchdog's dump of what each rank had posted and where each host thread was stuck.
// It consumes one event at a time and keeps only what is still open (unpaired operations, the
// dump), so a trace of any length is checked in bounded memory.
#pragma once

#include <string>
#include <vector>

#include "core/event.h"
#include "core/verdict.h"
#include "traces/trace_reader.h"
#include "verify/monitors/pairing_checker.h"

namespace ppspec::verify {

class TraceChecker final : public core::EventSink {
 public:
  void on_event(const core::Event& e) override;
  // Findings in order of the event that revealed them (earliest first); the verdict is the first's.
  core::RunResult result() const;

 private:
  // One line of a watchdog dump, copied out of its event.
  struct DumpEntry {
    int order = 0;  // operations first, then kernels, then host threads: what the GPU holds, then who waits
    core::RankId rank = -1;
    bool pending_op = false;
    std::string detail;
    core::Site site;
  };
  core::Finding hang_finding() const;

  PairingChecker pairing_;
  std::vector<DumpEntry> dump_;
  core::Time hang_at_ = -1;
  core::Time timeout_ = 0;
  core::Time end_ = 0;
  uint64_t events_ = 0;
};

// Every remaining event of `reader` through a TraceChecker.
core::RunResult check_trace(traces::TraceReader& reader);
// Lines of a trace in memory (a header, events, no trailer needed): a live GPU run, tests.
core::RunResult check_lines(const std::vector<std::string>& lines, const std::string& where);

}  // namespace ppspec::verify
