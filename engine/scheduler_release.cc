// The scheduler's other half: a step's output coming back, and requests let go of (finished,
// aborted, preempted), with their state index and KV blocks.
#include <algorithm>

#include "core/assert.h"
#include "engine/finish_rules.h"
#include "engine/stop_strings.h"
#include "engine/scheduler.h"

namespace ppspec::engine {

void Scheduler::free_blocks(int64_t req, int64_t step, core::Release reason, std::vector<int32_t> blocks) {
  if (blocks.empty()) return;
  pool_.release(blocks);
  ledger_.push_back(LedgerEntry{LedgerEntry::What::freed, req, step, reason, -1, 0, std::move(blocks)});
}

// Frees `r`'s req-state index (reported to the workers with the next step) and its blocks; the
// blocks of a request with a step in flight stay fenced until that step returns (vLLM #45357),
// except under `late_output_after_preempt`, which frees a preempted request's blocks at once.
void Scheduler::release(RequestRecord& r, core::Release reason, int64_t step) {
  PPSPEC_ASSERT(r.idx >= 0 && slot_owner_[static_cast<size_t>(r.idx)] == index_of(r),
                "request {} releases a slot it does not own", r.spec.id);
  slot_owner_[static_cast<size_t>(r.idx)] = kNoOwner;
  finished_idx_.push_back(r.idx);
  free_idx_.push_back(r.idx);
  std::sort(free_idx_.begin(), free_idx_.end(), std::greater<>());  // lowest index is reused first
  std::vector<int32_t> blocks;
  blocks.swap(r.blocks);
  r.cached_blocks = 0;
  // A prefill instance's finished request keeps its blocks for the decode instance's pulls.
  if (cfg_.instance() == Instance::prefill && reason == core::Release::finished && !r.dummy) hold_for_export(r, blocks);
  const bool unfenced = reason == core::Release::preempted && cfg_.faults.late_output_after_preempt;
  const bool fence = r.in_flight() && !unfenced && !blocks.empty();
  ledger_.push_back(LedgerEntry{LedgerEntry::What::released, r.spec.id, step, reason, r.idx, 0,
                                fence ? blocks : std::vector<int32_t>{}});
  if (fence)  // until its newest step in flight returns
    fences_.push_back(Fence{r.steps_in_flight.back(), r.spec.id, reason, std::move(blocks)});
  else
    free_blocks(r.spec.id, step, reason, std::move(blocks));
  running_.erase(std::find(running_.begin(), running_.end(), index_of(r)));
}

void Scheduler::return_fenced(int64_t step) {
  for (Fence& f : fences_)
    if (f.step == step) free_blocks(f.req, step, f.reason, std::move(f.blocks));
  std::erase_if(fences_, [step](const Fence& f) { return f.step == step; });
}

void Scheduler::finish(RequestRecord& r, bool aborted, int64_t step) {
  PPSPEC_ASSERT(!r.finished, "request {} finishes twice", r.spec.id);
  if (r.idx >= 0 && slot_owner_[static_cast<size_t>(r.idx)] == index_of(r))
    release(r, aborted ? core::Release::aborted : core::Release::finished, step);
  else  // waiting: a late output adopted after a preemption finished it (late_output_after_preempt)
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), index_of(r)), waiting_.end());
  r.finished = true;
  r.aborted = aborted;
  r.steps_in_flight.clear();  // a step still in flight is stale: its output is discarded
  r.tokens_in_flight = 0;
  if (!r.dummy) ++finished_count_;
}

// Preemption by recompute (vLLM _preempt_request): the request gives up its slot and blocks and
// waits (FCFS: first in the queue); resumed, its prefill is its prompt and its output so far.
void Scheduler::preempt(RequestRecord& r, int64_t step) {
  PPSPEC_ASSERT(!r.finished && r.idx >= 0, "request {} preempted (finished {}, slot {})", r.spec.id, r.finished, r.idx);
  if (r.preemptions++ == 0) r.first_preempted_at = static_cast<int64_t>(r.output.size());
  release(r, core::Release::preempted, step);
  r.idx = -1;
  r.steps_in_flight.clear();  // a step still in flight is stale: its output is discarded
  r.tokens_in_flight = 0;
  r.stale_in_flight_mark = false;
  r.num_computed = 0;
  r.prefill_tokens = static_cast<int32_t>(r.spec.prompt.size() + r.output.size());
  enqueue(index_of(r), true);
}

// The abort reaches the engine core while the request's step is the oldest in flight, the next to
// return (at depth 2 the only one): the core frees the request at this schedule, before that
// step's output returns, while younger batches are in flight as well.
void Scheduler::abort_in_flight(int64_t step) {
  const std::deque<size_t> running = running_;  // finish() edits the list
  for (size_t i : running) {
    RequestRecord& r = records_[i];
    const int64_t oldest = step - std::max(cfg_.batches_in_flight() - 1, 1);  // the oldest batch in flight
    if (!r.in_flight() || r.steps_in_flight.front() > oldest) continue;
    if (!r.spec.abort || r.abort_arrived || static_cast<int>(r.output.size()) < cfg_.workload.abort_after) continue;
    abort_arrives(r, step);
    if (abort_scan_reaches(r, step)) finish(r, true, step);
  }
}

// Where the abort handler looks for a running request: everywhere. Under `abort_scan_current_batch`
// (SGLang #29405) only in the batch of the current micro-batch slot (the requests last scheduled pp
// steps ago) and the previous step's batch: with pp > 2, requests in other in-flight batches are
// never aborted, and keep running and holding their KV.
bool Scheduler::abort_scan_reaches(const RequestRecord& r, int64_t step) const {
  if (!cfg_.faults.abort_scan_current_batch) return true;
  return r.last_step == step - 1 || r.last_step == step - cfg_.topology.pp;
}

// The running request a row's output belongs to; null when it was let go of since (its step is
// stale). Under `late_output_after_preempt` the output is matched by request id (vLLM before
// #49620), which finds a preempted request too.
// A row of a step scheduled before the request was last admitted is stale as well: it was resumed
// since, perhaps into the same state index.
RequestRecord* Scheduler::owner_of_row(int64_t step, const ScheduledRequest& s) {
  if (cfg_.faults.late_output_after_preempt) {
    for (RequestRecord& r : records_)
      if (r.spec.id == s.id && !r.finished) return &r;
    return nullptr;
  }
  const size_t owner = slot_owner_[static_cast<size_t>(s.idx)];
  if (owner == kNoOwner || records_[owner].spec.id != s.id || step < records_[owner].admitted_step) return nullptr;
  return &records_[owner];
}

// A step of `r` returned: it is no longer in flight, and its tokens no longer placeholders. Steps
// return in order, so it is the request's oldest (under `late_output_after_preempt` a stale one may
// land on a request that has none in flight).
void Scheduler::land(RequestRecord& r, int64_t step, int32_t tokens) {
  if (r.steps_in_flight.empty() || r.steps_in_flight.front() != step) {
    PPSPEC_ASSERT(cfg_.faults.late_output_after_preempt,
                  "request {}: step {} returned, not the oldest of its steps in flight", r.spec.id, step);
    return;
  }
  r.steps_in_flight.erase(r.steps_in_flight.begin());
  r.tokens_in_flight -= tokens;
  PPSPEC_ASSERT(r.tokens_in_flight >= 0 && (r.tokens_in_flight == 0) == r.steps_in_flight.empty());
}

void Scheduler::update(const SchedulerOutput& so, const ModelOutput& out) {
  PPSPEC_ASSERT(out.rows.size() == so.requests.size());
  if (!so.requests.empty()) ++steps_with_output_;
  if (out.draft_budget > 0 && out.draft_budget < cfg_.spec.k) ++steps_budget_below_k_;
  for (size_t i = 0; i < so.requests.size(); ++i) {
    const ScheduledRequest& s = so.requests[i];
    const RowOutput& row = out.rows[i];
    RequestRecord* r = owner_of_row(so.step, s);
    if (r == nullptr) continue;
    const int32_t computed_before = r->num_computed;  // exact: the request's earlier steps returned
    land(*r, so.step, s.num_tokens);
    if (!s.produces_sample()) {
      r->num_computed += s.num_tokens;
      r->stale_in_flight_mark = cfg_.faults.partial_prefill_stays_in_flight;
      continue;
    }
    r->num_computed += s.num_tokens - row.num_rejected;
    if (s.decode()) {
      ++r->decode_steps;
      r->verified_drafts.push_back(row.drafts_verified);
      r->verified_step.push_back(so.step);
      r->verified_position.push_back(computed_before + 1);
      r->accepted_drafts += row.num_sampled - 1;
    }
    r->proposed_drafts += static_cast<int64_t>(row.drafts_proposed.size());
    if (cfg_.spec.adaptive_budget) r->drafts_next = static_cast<int32_t>(row.drafts_proposed.size());
    const FinishRules rules{r->spec.max_tokens, cfg_.model.stop_token, cfg_.faults.cap_before_stop};
    const KeptTokens kept = keep_sampled(rules, static_cast<int32_t>(r->output.size()), row.tokens);
    for (int32_t t = 0; t < kept.count; ++t) {
      r->output.push_back(row.tokens[static_cast<size_t>(t)]);
      r->output_step.push_back(so.step);
      r->output_time.push_back(out.time);
    }
    const bool stop_string = front_end_stops(*r, kept.count);
    if (kept.reason != FinishReason::none || r->num_computed + cfg_.spec.k + 1 >= cfg_.model.max_model_len) {
      finish(*r, false, so.step);
    } else if (stop_string || (r->spec.abort && !cfg_.workload.abort_in_flight &&
                               static_cast<int>(r->output.size()) >= cfg_.workload.abort_after)) {
      client_abort(*r, so.step);
    }
  }
  return_fenced(so.step);
}

void Scheduler::abort_arrives(RequestRecord& r, int64_t step) {
  r.abort_arrived = true;
  ledger_.push_back(
      LedgerEntry{LedgerEntry::What::abort_arrived, r.spec.id, step, core::Release::aborted, r.idx, 0, {}});
}

void Scheduler::client_abort(RequestRecord& r, int64_t step) {
  abort_arrives(r, step);
  finish(r, true, step);
}

// vLLM's output processor runs in the front end, on the engine core's outputs of the step; a stop
// string it finds makes it abort the request in the engine core (output_processor.py's
// reqs_to_abort). Simplification: the abort reaches the core with the step's output, before its
// next schedule; in vLLM it crosses a process boundary and may arrive a schedule or more later, while
// the core goes on sampling tokens the front end drops.
// A prefill instance's one token goes to the proxy, which discards it: no front end reads it.
bool Scheduler::front_end_stops(RequestRecord& r, int32_t new_tokens) {
  if (cfg_.workload.stop_strings.empty() || cfg_.disagg.prefill_side) return false;
  if (new_tokens == 0 || r.stop_string >= 0 || r.dummy) return false;
  const StopStringRules rules{cfg_.workload.stop_strings, cfg_.workload.include_stop_str_in_output,
                              cfg_.faults.stop_string_keeps_tokens, cfg_.faults.stop_string_first_listed,
                              cfg_.faults.stop_string_tail_window};
  const StopMatch m = stop_string_update(cfg_.model, rules, r.output, new_tokens, r.text);
  if (m.stop < 0) return false;
  r.stop_string = m.stop;
  r.returned_tokens = static_cast<int32_t>(r.output.size()) - new_tokens + m.kept;
  PPSPEC_ASSERT(r.returned_tokens >= 0 && r.returned_tokens <= static_cast<int32_t>(r.output.size()));
  return true;
}

void Scheduler::add_dummies(int n, int prompt_len, int max_tokens) {
  PPSPEC_ASSERT(prompt_len >= 1 && prompt_len <= cfg_.max_prompt());
  PPSPEC_ASSERT(max_tokens >= 1 && max_tokens <= cfg_.workload.output_max);
  for (int i = 0; i < n; ++i) {
    RequestRecord r;
    r.spec.id = -2 - dummies_added_++;  // -1 is events' "no request"
    r.spec.prompt.assign(static_cast<size_t>(prompt_len), 1);
    r.spec.max_tokens = max_tokens;
    r.prefill_tokens = prompt_len;
    r.dummy = true;
    records_.push_back(std::move(r));
    waiting_.push_front(records_.size() - 1);
  }
}

bool Scheduler::dummies_live() const {
  for (size_t i : running_)
    if (records_[i].dummy) return true;
  for (size_t i : waiting_)
    if (records_[i].dummy) return true;
  return false;
}

void Scheduler::finish_dummies() {
  for (auto& r : records_)
    if (r.dummy && !r.finished && r.admitted) finish(r, true, -1);
  waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), [this](size_t i) { return records_[i].dummy; }),
                 waiting_.end());
}

}  // namespace ppspec::engine
