#include "verify/monitors/scheduling_progress.h"

#include <algorithm>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

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
    case core::EventKind::request_released: on_released(e); return;
    case core::EventKind::blocks_freed: on_freed(e); return;
    case core::EventKind::engine_stalled: report_stalled(e); return;
    default: return;
  }
}

void SchedulingProgress::on_released(const core::Event& e) {
  const auto released = core::RequestReleasedProbe::decode(e);
  const auto it = running_.find(e.req);
  if (!released.fenced_blocks.empty()) {
    Fence f;
    f.req = e.req;
    f.released_at = issued_through_;
    if (it != running_.end()) f.waits_for = it->second.in_flight;
    f.waited_for = f.waits_for;
    if (f.waits_for.empty()) f.stale_since = issued_through_;
    f.blocks.insert(released.fenced_blocks.begin(), released.fenced_blocks.end());
    fences_.push_back(std::move(f));
    if (fences_.size() > kFencedKept) fences_.erase(fences_.begin());  // a trace's, never the engine's
  }
  if (it != running_.end()) running_.erase(it);
}

void SchedulingProgress::on_freed(const core::Event& e) {
  for (const int64_t b : core::BlocksFreedProbe::decode(e).blocks)
    for (Fence& f : fences_) f.blocks.erase(b);
  std::erase_if(fences_, [](const Fence& f) { return f.blocks.empty(); });
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
  if (!batch.request_ids.empty()) {
    stale_idle_steps_ = 0;
    stale_first_idle_ = -1;
  }
  const bool live_fence =
      std::any_of(fences_.begin(), fences_.end(), [](const Fence& f) { return !f.waits_for.empty(); });
  if (!batch.request_ids.empty() || batch.step_kind != core::StepKind::serving || live_fence ||
      reported(core::FindingKind::starvation))
    return;
  if (!fences_.empty()) {
    // Only stale fences hold blocks: whatever waits for them is held back by a fence whose steps
    // have all returned.
    if (stale_idle_steps_++ == 0) stale_first_idle_ = e.step;
    if (stale_idle_steps_ > idle_steps_allowed()) report_stale_fence(e);
    return;
  }
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
  for (Fence& f : fences_) {
    const auto w = std::find(f.waits_for.begin(), f.waits_for.end(), e.step);
    if (w == f.waits_for.end()) continue;
    f.waits_for.erase(w);
    if (f.waits_for.empty()) f.stale_since = issued_through_;
  }
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

// A starvation finding about request `req`, placed at the engine core's scheduler.
core::Finding SchedulingProgress::starvation(const core::Event& e, int64_t req, std::string summary) const {
  core::Finding f = finding_at(e, core::Verdict::hang, core::FindingKind::starvation, std::move(summary));
  f.request = req;
  f.sites.push_back(core::Site{-1, "engine", "", -1, "the engine core's scheduler", ""});
  return f;
}

// The engine core stopped: the waiting requests, and what the KV pool says of why none is admitted.
void SchedulingProgress::report_stalled(const core::Event& e) {
  const auto p = core::EngineStalledProbe::decode(e);
  const int64_t first = p.waiting.empty() ? -1 : p.waiting.front();
  core::Finding f = starvation(
      e, first,
      fmt::format("the engine core stopped issuing steps after engine step {}: nothing is in flight, no request is "
                  "left to arrive, and it admits none of its {} waiting request{} (the next in its queue: request {})",
                  e.step, p.waiting.size(), p.waiting.size() == 1 ? "" : "s", first));
  size_t fenced = 0;
  for (const Fence& fence : fences_) fenced += fence.blocks.size();
  const int64_t lost = p.usable_blocks - p.free_blocks - static_cast<int64_t>(fenced);
  f.details.push_back(fmt::format("{} of the {} usable KV blocks are free, {} fenced, and no request is running",
                                  p.free_blocks, p.usable_blocks, fenced));
  if (fenced > 0)
    f.details.push_back(fmt::format("request {}'s fenced blocks were never freed, though no step of it is in flight",
                                    fences_.front().req));
  else if (lost > 0)
    f.details.push_back(fmt::format(
        "{} block{} held by no request and no fence: a release that did not give them back (a leak), and the "
        "waiting requests need them",
        lost, lost == 1 ? " is" : "s are"));
  else
    f.details.push_back(
        "the whole pool is free: the next request needs more blocks than the pool holds, or the admission rule "
        "never lets it in (vllm-rbln #957: a prompt past the usable pool, the null block counted as usable)");
  f.details.push_back("vLLM's engine core would poll its input queue for ever here, with no error and no timeout");
  report(std::move(f));
}

void SchedulingProgress::report_starved(const core::Event& e, int64_t req) {
  const Running& r = running_.at(req);
  core::Finding f = starvation(
      e, req,
      fmt::format("request {} is runnable and never scheduled: its last step, {} ({}), returned by engine step {}, "
                  "and the engine core has since issued {} steps with no request in them (steps {}..{})",
                  req, r.last_step, step_words(r.computed, r.scheduled, r.prefill_len), r.returned_at, r.idle_steps,
                  r.first_idle, e.step));
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

void SchedulingProgress::report_stale_fence(const core::Event& e) {
  PPSPEC_ASSERT(!fences_.empty(), "a stale fence reported with none held");
  const Fence& f = fences_.front();
  const std::vector<int64_t> blocks(f.blocks.begin(), f.blocks.end());
  const std::string why =
      f.waited_for.empty()
          ? fmt::format("fenced at engine step {} though no step of it was in flight", f.released_at)
          : fmt::format("fenced at engine step {} for its step{} {} in flight, which returned by step {}",
                        f.released_at, f.waited_for.size() > 1 ? "s" : "", fmt::join(f.waited_for, ", "),
                        f.stale_since);
  core::Finding finding =
      starvation(e, f.req,
                 fmt::format("KV blocks {} of request {} stay fenced with no step of it in flight: {}; the engine "
                             "core has since issued {} steps with no request in them (steps {}..{})",
                             fmt::join(blocks, ", "), f.req, why, stale_idle_steps_, stale_first_idle_, e.step));
  finding.details.push_back(fmt::format(
      "a release fences a request's blocks until its steps in flight return, and frees them then; these outlived "
      "that, and whatever waits for them (a request to admit or resume, a running one short of blocks) waits for "
      "good: {} empty steps with only such fences holding blocks are allowed",
      idle_steps_allowed()));
  finding.details.push_back(
      "the engine core still counts a step of the request in flight that has returned: an in-flight mark the "
      "step's return did not clear (tt-xla's AscendScheduler cleared its scheduled_req_ids for fully prefilled "
      "requests only), so the fence waits for a step that will never return again");
  report(std::move(finding));
}

}  // namespace ppspec::verify
