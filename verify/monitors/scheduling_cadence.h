// Scheduling cadence: the engine core schedules a request's decode step only once the feedback it
// needs can have been adopted. Under the PP feedback ring, the sampled tokens and drafts of step T
// reach the earlier stages' tables at T + pp, when their deferred update adopts them: a request
// whose step T sampled (a decode, or a final prefill chunk) may decode next at T + pp at the
// earliest, or its earlier stages embed a stale last token and stale drafts. Non-final prefill
// chunks need no feedback and may flow back to back (vLLM #38726). Checked at every scheduling
// decision (request_scheduled); a request's admission or resumption (its prompt) starts it afresh. Today's engine keeps
// the cadence by construction (a request in an in-flight batch is not scheduled); this monitor is what says so, and
// what judges a trace of another engine.
#pragma once

#include <cstdint>
#include <map>

#include "verify/monitors/monitor.h"

namespace ppspec::verify {

class SchedulingCadence final : public Monitor {
 public:
  using Monitor::Monitor;
  void on_event(const core::Event& e) override;
  // The kinds on_event acts on; it returns at once on any other.
  KindSet kinds() const override { return kind_set({core::EventKind::request_scheduled}); }

 private:
  static constexpr size_t kRequestsKept = 4096;  // the oldest is forgotten past it
  std::map<int64_t, int64_t> last_step_;         // request -> the last step of it that sampled
};

}  // namespace ppspec::verify
