#include "verify/monitors/scheduling_progress.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "core/assert.h"
#include "core/finding_kinds.h"
#include "core/probes.h"

namespace ppspec::verify {

void SchedulingProgress::on_event(const core::Event& e) {
  switch (e.kind) {
    case core::EventKind::batch_scheduled: on_batch(e); return;
    case core::EventKind::request_scheduled: {
      const auto s = core::RequestScheduledProbe::decode(e);
      const auto it = running_.find(e.req);
      if (it == running_.end()) return;  // a trace that begins inside a step: its batch is not on record
      Running& r = it->second;
      r.computed = s.num_computed;
      r.scheduled = s.num_scheduled;
      r.prefill_len = s.prefill_len;
      return;
    }
    case core::EventKind::step_returned: on_returned(e); return;
    case core::EventKind::request_released: {
      running_.erase(e.req);
      const auto released = core::RequestReleasedProbe::decode(e);
      fenced_.insert(released.fenced_blocks.begin(), released.fenced_blocks.end());
      while (fenced_.size() > kFencedKept) fenced_.erase(fenced_.begin());  // a trace's, never the engine's
      return;
    }
    case core::EventKind::blocks_freed:
      for (const int64_t b : core::BlocksFreedProbe::decode(e).blocks) fenced_.erase(b);
      return;
    default: return;
  }
}

void SchedulingProgress::on_batch(const core::Event& e) {
  const auto batch = core::BatchScheduledProbe::decode(e);
  issued_through_ = std::max(issued_through_, e.step);
  batches_[e.step].assign(batch.request_ids.begin(), batch.request_ids.end());
  // The engine keeps at most pp + 1 steps in flight and max_num_seqs requests running; a recorded
  // trace that returns no step or releases no request is read with its oldest forgotten.
  while (batches_.size() > kBatchesKept) batches_.erase(batches_.begin());
  for (const int64_t req : batch.request_ids) {
    Running& r = running_[req];
    r.last_step = e.step;
    r.in_flight.push_back(e.step);
    if (r.in_flight.size() > kBatchesKept) r.in_flight.erase(r.in_flight.begin());
    r.first_idle = -1;
    r.idle_steps = 0;
  }
  while (running_.size() > kRequestsKept) running_.erase(running_.begin());
  if (!batch.request_ids.empty() || batch.step_kind != core::StepKind::serving || !fenced_.empty() ||
      reported(core::FindingKind::starvation))
    return;
  for (auto& [req, r] : running_) {
    if (!r.in_flight.empty()) continue;
    if (r.idle_steps++ == 0) r.first_idle = e.step;
    if (r.idle_steps > idle_steps_allowed()) {
      report_starved(e, req);
      return;
    }
  }
}

void SchedulingProgress::on_returned(const core::Event& e) {
  const auto it = batches_.find(e.step);
  if (it == batches_.end()) return;  // a batch before the monitor saw any (a trace's tail)
  for (const int64_t req : it->second) {
    const auto r = running_.find(req);
    if (r == running_.end()) continue;  // released while the step was in flight
    std::vector<int64_t>& steps = r->second.in_flight;
    const auto step = std::find(steps.begin(), steps.end(), e.step);
    if (step == steps.end()) continue;  // a step of its earlier admission
    steps.erase(step);
    r->second.returned_at = issued_through_;
  }
  batches_.erase(it);
}

namespace {

// What a step scheduled of a request, in words: "a prefill chunk (tokens 0..31 of its 57-token prefill)".
std::string step_words(int64_t computed, int64_t scheduled, int64_t prefill_len) {
  if (computed >= prefill_len) return fmt::format("a decode step of {} tokens", scheduled);
  const char* what = computed + scheduled < prefill_len ? "a prefill chunk that leaves tokens of the prefill"
                                                        : "its prefill's last chunk";
  return fmt::format("{}: tokens {}..{} of its {}-token prefill", what, computed, computed + scheduled - 1,
                     prefill_len);
}

}  // namespace

void SchedulingProgress::report_starved(const core::Event& e, int64_t req) {
  const Running& r = running_.at(req);
  core::Finding f = finding_at(
      e, core::Verdict::hang, core::FindingKind::starvation,
      fmt::format("request {} is runnable and never scheduled: its last step, {} ({}), returned by engine step {}, "
                  "and the engine core has since issued {} steps with no request in them (steps {}..{})",
                  req, r.last_step, step_words(r.computed, r.scheduled, r.prefill_len), r.returned_at, r.idle_steps,
                  r.first_idle, e.step));
  f.request = req;
  f.sites.push_back(core::Site{-1, "engine", "", -1, "the engine core's scheduler", ""});
  f.details.push_back(fmt::format(
      "nothing holds the request back: it is running (admitted, not released), no step of it is in flight, and each "
      "of these steps left it the whole token budget with no block fenced for a step in flight (a request short of "
      "blocks then preempts until it fits); {} such steps are allowed",
      idle_steps_allowed()));
  f.details.push_back(
      "what keeps a runnable request out of every step is scheduler state that outlived its reason: an in-flight "
      "mark the step's return did not clear (tt-xla's AscendScheduler cleared its scheduled_req_ids for fully "
      "prefilled requests only, so a partial prefill chunk's stayed), a reservation nobody releases; without this "
      "monitor the run steps on until the step limit");
  report(std::move(f));
}

}  // namespace ppspec::verify
