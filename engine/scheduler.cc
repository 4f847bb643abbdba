#include "engine/scheduler.h"
#include "core/assert.h"
#include "engine/finish_rules.h"

#include <algorithm>
#include <fmt/ranges.h>

namespace ppspec::engine {

namespace {

// The `tokens` rows of `r` one step schedules, before its new blocks are allocated.
ScheduledRequest scheduled_row(const RequestRecord& r, int tokens) {
  ScheduledRequest s;
  s.idx = r.idx;
  s.id = r.spec.id;
  s.num_computed = r.computed_if_accepted();
  s.num_tokens = tokens;
  s.prefill_len = r.prefill_len();
  s.first_new_block = static_cast<int32_t>(r.blocks.size());
  return s;
}

// What the workers learn of a request when it is admitted, or resumed after a preemption: then
// its prefill is the prompt and every token it has generated (vLLM recomputes a preempted request).
NewRequest new_request_of(const RequestRecord& r) {
  NewRequest n;
  n.idx = r.idx;
  n.id = r.spec.id;
  n.prompt = r.spec.prompt;
  for (size_t i = 0; n.prompt.size() < static_cast<size_t>(r.prefill_len()); ++i)
    n.prompt.push_back(static_cast<int32_t>(r.output[i]));
  n.num_output = static_cast<int32_t>(r.output.size());
  n.num_computed = r.num_computed;  // a prefix-cache hit: the prefill starts after it
  n.seed = r.spec.seed;
  n.spread = r.spec.spread;
  return n;
}

}  // namespace

int blocks_needed(const EngineConfig& cfg) { return cfg.blocks_needed(); }
int blocks_minimum(const EngineConfig& cfg) { return cfg.max_blocks_per_req() + 1; }

// One step's batch as it is built: the rows, the budget left, whether anything was preempted.
class Scheduler::StepBuilder {
 public:
  StepBuilder(Scheduler& s, int64_t step)
      : s_(s), step_(step), so(std::make_shared<SchedulerOutput>()), budget(s.cfg_.serving.max_num_batched_tokens) {
    so->step = step;
  }

  // Schedules `tokens` of `r` if its blocks fit the free pool; nothing changes when they do not.
  bool add(RequestRecord& r, int tokens) {
    ScheduledRequest row = scheduled_row(r, tokens);
    if (!s_.allocate_blocks(r, r.computed_if_accepted() + tokens, step_, row.new_blocks)) return false;
    so->requests.push_back(std::move(row));
    so->num_tokens += tokens;
    budget -= tokens;
    if (r.in_flight()) ++r.steps_ahead;
    r.steps_in_flight.push_back(step_);
    r.tokens_in_flight += tokens;
    r.last_step = step_;
    PPSPEC_ASSERT(r.steps_in_flight.size() <= 2, "request {} has {} steps in flight ({}), at {}", r.spec.id,
                  r.steps_in_flight.size(), fmt::join(r.steps_in_flight, " "), step_);
    return true;
  }

  // A running request's step: when the pool is short, preempt the scheduling policy's victim and
  // try again, until it fits or `r` itself was the one preempted. When the blocks fenced for steps
  // in flight would cover the shortfall, the request waits for them instead: preempting more would
  // free nothing this step (the zero-progress cascade of vLLM #49674) and, with nothing else left
  // to preempt, a request would preempt itself for ever.
  bool add_running(RequestRecord& r, int tokens) {
    for (;;) {
      if (add(r, tokens)) return true;
      if (s_.missing_blocks(r, r.computed_if_accepted() + tokens) <= s_.pool_.free_count() + s_.fenced_blocks()) {
        waits_for_fence = true;
        return false;
      }
      RequestRecord& victim = s_.records_[s_.victim()];
      preempted = true;
      unschedule(victim);
      s_.preempt(victim, step_);
      if (&victim == &r) return false;
    }
  }

  bool preempted = false;
  // A running request waits for blocks that steps in flight still fence: in vLLM it would have
  // preempted, so the step admits nothing (a waiting request would take the blocks it waits for,
  // be preempted for them at the next step, and take them again, for ever).
  bool waits_for_fence = false;

 private:
  // Under the priority policy the victim may already be in this step's batch (the walk is in
  // running order, the victim the lowest priority): its row comes out again, and its budget back
  // (vLLM #28558). FCFS's victim, the last running request, is never reached before it is taken.
  void unschedule(RequestRecord& victim) {
    auto row = std::find_if(so->requests.begin(), so->requests.end(),
                            [&](const ScheduledRequest& x) { return x.id == victim.spec.id; });
    if (row == so->requests.end()) return;
    PPSPEC_ASSERT(s_.cfg_.serving.scheduling_policy == SchedulingPolicy::priority,
                  "FCFS preempted request {} at step {} after the walk scheduled it: its victim is the last running",
                  victim.spec.id, step_);
    ++victim.preempted_in_step;
    // This step's blocks were never stored through: only an earlier step in flight fences them.
    victim.steps_in_flight.pop_back();
    if (s_.cfg_.faults.preempt_keeps_spec_tokens) return;  // the row stays in the step
    budget += row->num_tokens;
    so->num_tokens -= row->num_tokens;
    so->requests.erase(row);
  }

  Scheduler& s_;
  int64_t step_;

 public:
  std::shared_ptr<SchedulerOutput> so;
  int budget;
};

Scheduler::Scheduler(const EngineConfig& cfg, std::vector<RequestSpec> workload)
    : cfg_(cfg),
      pool_(cfg.model.num_blocks > 0 ? cfg.model.num_blocks : blocks_needed(cfg), cfg.serving.enable_prefix_caching) {
  workload_size_ = static_cast<int>(workload.size());
  std::stable_sort(workload.begin(), workload.end(),
                   [](const RequestSpec& a, const RequestSpec& b) { return a.arrival < b.arrival; });
  for (auto& w : workload) {
    RequestRecord r;
    r.spec = std::move(w);
    r.prefill_tokens = static_cast<int32_t>(r.spec.prompt.size());
    records_.push_back(std::move(r));
  }
  for (int32_t i = cfg.serving.max_num_seqs - 1; i >= 0; --i) free_idx_.push_back(i);
  slot_owner_.assign(static_cast<size_t>(cfg.serving.max_num_seqs), kNoOwner);
  PPSPEC_ASSERT(pool_.num_blocks() >= blocks_minimum(cfg), "{} KV blocks cannot hold one request at its longest ({})",
                pool_.num_blocks(), blocks_minimum(cfg));
}

std::vector<int64_t> Scheduler::waiting_ids() const {
  std::vector<int64_t> out;
  for (size_t i : waiting_) out.push_back(records_[i].spec.id);
  return out;
}

void Scheduler::admit_until(core::Time now) {
  if (cfg_.instance() == Instance::decode) return;  // requests arrive from the prefill instance
  while (next_arrival_ < static_cast<size_t>(workload_size_) && records_[next_arrival_].spec.arrival <= now)
    enqueue(next_arrival_++, false);
}

// vLLM's request queues: FCFS appends an arrival and puts a preempted request first; the priority
// queue is a heap on (priority, arrival time, request id) for both (a lower value runs first).
void Scheduler::enqueue(size_t i, bool preempted) {
  if (cfg_.serving.scheduling_policy == SchedulingPolicy::fcfs) {
    if (preempted)
      waiting_.push_front(i);
    else
      waiting_.push_back(i);
    return;
  }
  const auto first_after = std::upper_bound(
      waiting_.begin(), waiting_.end(), i, [this](size_t x, size_t w) { return runs_after(records_[w], records_[x]); });
  waiting_.insert(first_after, i);
}

// Whether `a` runs after `b` under the priority policy: vLLM's Request.__lt__ reversed. Ties of
// arrival (a burst arrives at one simulated instant; a real server's clock tells its requests
// apart) fall to the request id, the order they were sent in.
bool Scheduler::runs_after(const RequestRecord& a, const RequestRecord& b) {
  if (a.spec.priority != b.spec.priority) return a.spec.priority > b.spec.priority;
  if (a.spec.arrival != b.spec.arrival) return a.spec.arrival > b.spec.arrival;
  return a.spec.id > b.spec.id;
}

// The running request a preemption takes: FCFS the last admitted (vLLM `running.pop()`), the
// priority policy the one that runs last (vLLM `max(running, key=(priority, arrival_time))`).
size_t Scheduler::victim() const {
  PPSPEC_ASSERT(!running_.empty());
  if (cfg_.serving.scheduling_policy == SchedulingPolicy::fcfs) return running_.back();
  size_t v = running_.front();
  for (size_t i : running_)
    if (runs_after(records_[i], records_[v])) v = i;
  return v;
}

std::optional<core::Time> Scheduler::next_arrival() const {
  if (cfg_.instance() == Instance::decode) return std::nullopt;
  if (next_arrival_ >= static_cast<size_t>(workload_size_)) return std::nullopt;
  return records_[next_arrival_].spec.arrival;
}

bool Scheduler::done() const { return finished_count_ == workload_size_ && held_.empty(); }

std::vector<LedgerEntry> Scheduler::take_ledger() {
  std::vector<LedgerEntry> out;
  out.swap(ledger_);
  return out;
}

// The drafter's queries run K positions past the step's last token (vLLM num_lookahead_tokens):
// their slots are reserved with the step's, and are not computed tokens.
int32_t Scheduler::lookahead() const { return cfg_.faults.no_draft_lookahead_slots ? 0 : cfg_.spec.k; }

int Scheduler::missing_blocks(const RequestRecord& r, int upto_tokens) const {
  const int slots = std::max(upto_tokens, std::min(upto_tokens + lookahead(), cfg_.model.max_model_len));
  const int need = (slots + cfg_.model.block_size - 1) / cfg_.model.block_size;
  PPSPEC_ASSERT(need <= cfg_.max_blocks_per_req(), "request {} needs {} blocks, its table has {}", r.spec.id, need,
                cfg_.max_blocks_per_req());
  return need - static_cast<int>(r.blocks.size());
}

int Scheduler::fenced_blocks() const {
  int n = 0;
  for (const Fence& f : fences_) n += static_cast<int>(f.blocks.size());
  return n;
}

bool Scheduler::allocate_blocks(RequestRecord& r, int upto_tokens, int64_t step, std::vector<int32_t>& fresh) {
  const int missing = missing_blocks(r, upto_tokens);
  if (missing <= 0) return true;
  if (pool_.free_count() < missing) return false;
  LedgerEntry e{LedgerEntry::What::allocated,          r.spec.id, step, core::Release::none, r.idx,
                static_cast<int32_t>(r.blocks.size()), {}};
  pool_.allocate(missing, e.blocks);
  fresh.insert(fresh.end(), e.blocks.begin(), e.blocks.end());
  r.blocks.insert(r.blocks.end(), e.blocks.begin(), e.blocks.end());
  ledger_.push_back(std::move(e));
  return true;
}

std::shared_ptr<SchedulerOutput> Scheduler::schedule(int64_t step) {
  if (cfg_.workload.abort_in_flight) abort_in_flight(step);
  if (cfg_.workload.abort_while_loading) abort_remote(step);
  StepBuilder b(*this, step);
  const std::deque<size_t> running = running_;  // a preemption edits running_
  bool out_of_blocks = false;
  // One walk over the running requests in admission order, decode rows and prefill chunks alike
  // (vLLM's running loop), until the budget or the blocks run out.
  for (size_t i : running) {
    RequestRecord& r = records_[i];
    if (b.budget <= 0) break;
    if (!eligible(r, step)) continue;
    const int tokens = running_tokens(r, b.budget);
    if (tokens == 0) continue;  // a whole prefill over the budget without chunked prefill
    if (tokens > b.budget) break;
    if (out_of_blocks = !b.add_running(r, tokens); out_of_blocks) break;
  }
  // The workers take decode rows first (vLLM's model runner reorders its batch so).
  std::stable_partition(b.so->requests.begin(), b.so->requests.end(),
                        [](const ScheduledRequest& x) { return x.num_computed >= x.prefill_len; });
  if (pool_.caching()) cache_rows(*b.so);  // before admission: a new request may hit the blocks this step computes
  if (!b.preempted && !b.waits_for_fence) admit_waiting(b);  // vLLM admits nothing in a step that preempted
  // Nothing running: wait for arrivals (after a preemption, the next step resumes the request).
  if (b.so->requests.empty() && running_.empty() && !b.preempted) return nullptr;
  b.so->finished.swap(finished_idx_);
  return b.so;
}

// The tokens a running request asks of this step: a decode row (1 + K: the scheduler knows only
// the draft count), or its prefill's next chunk; 0 when its whole prefill must wait for a budget
// that holds it (no chunked prefill).
int Scheduler::running_tokens(const RequestRecord& r, int budget) const {
  if (!r.prefill_scheduled()) {
    const int remaining = r.prefill_len() - r.computed_if_accepted();
    if (!cfg_.serving.chunked_prefill && remaining > budget) return 0;
    return std::min(remaining, budget);
  }
  // A warmup dummy decodes without drafts: the drafter does not run in warmup, and with feedback
  // off the earlier stages never learn how many drafts the last stage rejected, so their
  // optimistic num_computed would drift from the engine core's (vLLM's dummy runs keep no
  // request state at all).
  // An adaptive budget: the drafts the request's last step proposed, which its next step verifies.
  const int drafts = r.drafts_next >= 0 ? r.drafts_next : cfg_.spec.k;
  return 1 + (r.dummy ? 0 : std::min(drafts, cfg_.model.max_model_len - r.computed_if_accepted() - 1));
}

// A running request may run at this step: every pp steps (step T's feedback is adopted at T + pp,
// before the request's next step); at depth pp + 1 also while its previous step is in flight, unless
// that step's one sure token already ends it (vLLM's async guard: scheduling it would be wasted).
// The guard reads output placeholders, which only a sampling step adds (AsyncScheduler's
// _update_after_schedule skips a prefill chunk): a prefill chunk in flight that leaves tokens of
// the prefill samples nothing, so the request's next chunk is scheduled whatever its max_tokens.
bool Scheduler::eligible(const RequestRecord& r, int64_t step) const {
  if (r.idx < 0 || r.finished || step < r.last_step + cfg_.topology.pp || r.stale_in_flight_mark) return false;
  if (!r.in_flight()) return true;
  if (!cfg_.schedules_ahead()) return false;
  const bool ends_for_sure =
      r.prefill_scheduled() && (static_cast<int>(r.output.size()) + 1 >= r.spec.max_tokens ||
                                r.computed_if_accepted() + cfg_.spec.k + 1 >= cfg_.model.max_model_len);
  return !ends_for_sure;
}

// Waiting requests, new or preempted, while a req-state index, the budget and the blocks allow. A
// disaggregated decode instance's request whose KV is not pulled yet is passed over, in its place.
void Scheduler::admit_waiting(StepBuilder& b) {
  size_t at = 0;
  while (at < waiting_.size() && b.budget > 0 && !free_idx_.empty()) {
    RequestRecord& r = records_[waiting_[at]];
    // A pull takes a request slot (simplification: vLLM counts running requests only, and pulled
    // blocks beyond the slots could starve a running request of the cache sized for the slots);
    // without one, the request waits and those behind it, whose pulls may have completed, go on.
    if (r.remote == RemoteKv::waiting && free_idx_.size() <= pulls_waiting_) {
      ++at;
      continue;
    }
    if (r.remote == RemoteKv::waiting && !start_load(r, b.so->step)) break;
    if (r.remote == RemoteKv::loading) {
      ++at;
      continue;
    }
    const bool pulled = r.remote == RemoteKv::loaded;
    const PrefixHit hit = prefix_hit(r);
    const int remaining = r.prefill_len() - (pulled ? r.num_computed : hit.computed);
    if (!cfg_.serving.chunked_prefill && remaining > b.budget) break;
    const int tokens = std::min(remaining, b.budget);
    if (!hit_fits(r, hit, tokens)) break;
    r.idx = free_idx_.back();
    take_hit(r, hit, b.so->step);
    if (!b.add(r, tokens)) {
      PPSPEC_ASSERT(hit.blocks.empty(), "request {}'s prefix hit was taken, then its blocks did not fit", r.spec.id);
      r.idx = -1;
      break;
    }
    if (pool_.caching()) admitted_with_hit(r, hit, b.so->requests.back(), b.so->step);
    if (pulled) admitted_pulled(r, b.so->requests.back());
    free_idx_.pop_back();
    slot_owner_[static_cast<size_t>(r.idx)] = waiting_[at];
    r.admitted = true;
    r.admitted_step = b.so->step;
    running_.push_back(waiting_[at]);
    waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(at));
    b.so->new_requests.push_back(new_request_of(r));
  }
}

}  // namespace ppspec::engine
