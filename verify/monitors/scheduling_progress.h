// Scheduling progress (`hang`, kind `starvation`): a running request whose steps have all returned
// is runnable, and an empty serving step (no request in it: the whole token budget and every block
// unused) that leaves it out serves it nothing. The monitor names the request once it sat out
// more empty steps than anything in a correct engine can hold it back for: the pp-deep ring of
// steps in flight, whose return frees the fenced blocks a request may wait for, twice over.
// Without it such a run stepped on in silence until the simulator's step limit, a finding that
// named no request, no step and no cause (tt-xla's AscendScheduler; vLLM #25890's empty schedules).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "verify/monitors/monitor.h"

namespace ppspec::verify {

class SchedulingProgress final : public Monitor {
 public:
  using Monitor::Monitor;
  void on_event(const core::Event& e) override;
  // The kinds on_event acts on; it returns at once on any other.
  KindSet kinds() const override {
    return kind_set({core::EventKind::batch_scheduled, core::EventKind::request_scheduled,
                     core::EventKind::step_returned, core::EventKind::request_released});
  }
  // Empty serving steps a runnable request may sit out before it is named.
  int idle_steps_allowed() const { return 2 * (facts_.pp + 1) + 2; }

 private:
  void on_batch(const core::Event& e);
  void on_returned(const core::Event& e);
  void report_starved(const core::Event& e, int64_t req);

  struct Running {
    int64_t last_step = -1;  // its last scheduled step
    // Its steps not returned yet (a step of an earlier admission, before a preemption or an abort
    // released it, is not: it belongs to no running request).
    std::vector<int64_t> in_flight;
    int64_t returned_at = -1;  // the newest step issued when its last step returned
    int64_t first_idle = -1;   // the first empty step it sat out since, -1: none
    int idle_steps = 0;        // empty serving steps it sat out since its last step returned
    // What its last step scheduled: tokens [computed, computed + scheduled) of a prefill of prefill_len.
    int64_t computed = 0, scheduled = 0, prefill_len = 0;
  };
  // Bounds: a request in the table is running (admitted, not released): at most max_num_seqs, and
  // batches are those in flight: at most pp + 1 (asserted at kBatchesKept).
  static constexpr size_t kRequestsKept = 4096;
  static constexpr size_t kBatchesKept = 64;
  std::map<int64_t, Running> running_;
  std::map<int64_t, std::vector<int64_t>> batches_;  // step -> its request ids, until it returns
  int64_t issued_through_ = -1;                      // the newest step issued
};

}  // namespace ppspec::verify
