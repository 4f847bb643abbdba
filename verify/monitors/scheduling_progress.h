// Scheduling progress (`hang`, kind `starvation`): a running request whose steps have all returned
// is runnable, and an empty serving step (no request in it: the whole token budget unused) while no
// block is fenced (every block is free or held by a running request, so a request short of blocks
// preempts until it fits or is itself preempted) that leaves it out serves it nothing. The monitor
// names the request once it sat out more such steps than the pp-deep ring of steps in flight can
// explain, twice over. An empty step while blocks are fenced is not counted: a request may wait
// for them, and a churn of admissions and preemptions can keep fencing blocks while others run.
// A fence is a release's blocks held until the request's steps in flight return; once they all
// have, the fence has outlived its reason, and empty steps taken while only such stale fences hold
// blocks are counted against it: past the same bound the fence is named (the request, its blocks,
// the step it waited for and when that returned), since whatever waits for those blocks, admitted
// or not, is starved by it.
// An engine core that stops issuing steps altogether (nothing in flight, nothing to arrive, waiting
// requests it never admits: its engine_stalled probe) is named the same way, with what the KV pool
// says of why: fenced blocks never freed, blocks held by no request (a leak), or a whole free pool.
// Without it such a run stepped on in silence until the simulator's step limit, a finding that
// named no request, no step and no cause (tt-xla's AscendScheduler; vLLM #25890's empty schedules).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
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
                     core::EventKind::step_returned, core::EventKind::request_released, core::EventKind::blocks_freed,
                     core::EventKind::engine_stalled});
  }
  // Empty serving steps a runnable request may sit out before it is named.
  int idle_steps_allowed() const { return 2 * (facts_.pp + 1) + 2; }

 private:
  void on_batch(const core::Event& e);
  void on_returned(const core::Event& e);
  core::Finding starvation(const core::Event& e, int64_t req, std::string summary) const;
  void report_starved(const core::Event& e, int64_t req);
  void report_stale_fence(const core::Event& e);
  void report_stalled(const core::Event& e);
  void on_released(const core::Event& e);
  void on_freed(const core::Event& e);

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
  // Bounds: a request in the table is running (admitted, not released): at most max_num_seqs;
  // batches are those in flight: at most pp + 1; fenced blocks: at most the pool. Past the bounds
  // (a recorded trace's) the oldest are forgotten.
  static constexpr size_t kRequestsKept = 4096;
  static constexpr size_t kBatchesKept = 64;
  static constexpr size_t kFencedKept = 1 << 16;
  std::map<int64_t, Running> running_;
  std::map<int64_t, std::vector<int64_t>> batches_;  // step -> its request ids, until it returns
  int64_t issued_through_ = -1;                      // the newest step issued
  // A release's fenced blocks, until freed, and the request's steps in flight it waits for.
  struct Fence {
    int64_t req = -1;
    int64_t released_at = -1;         // the newest step issued at the release
    std::vector<int64_t> waits_for;   // its steps in flight at the release, until each returns
    std::vector<int64_t> waited_for;  // the same, for the report
    int64_t stale_since = -1;         // the newest step issued when its last awaited step returned
    std::set<int64_t> blocks;         // fenced and not freed yet
  };
  std::vector<Fence> fences_;  // in release order; at most kFencedKept
  int stale_idle_steps_ = 0;   // empty serving steps taken while stale fences alone held blocks
  int64_t stale_first_idle_ = -1;
};

}  // namespace ppspec::verify
