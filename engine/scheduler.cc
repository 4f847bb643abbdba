#include "engine/scheduler.h"
#include "core/assert.h"

#include <algorithm>

namespace ppspec::engine {

namespace {

// The `tokens` rows of `r` one step schedules, before its new blocks are allocated.
ScheduledRequest scheduled_row(const RequestRecord& r, int tokens) {
  ScheduledRequest s;
  s.idx = r.idx;
  s.id = r.spec.id;
  s.num_computed = r.num_computed;
  s.num_tokens = tokens;
  s.prefill_len = r.prefill_len();
  s.out_index = static_cast<int32_t>(r.output.size());
  s.first_new_block = static_cast<int32_t>(r.blocks.size());
  return s;
}

// What the workers learn of a request when it is admitted.
NewRequest new_request_of(const RequestRecord& r) {
  NewRequest n;
  n.idx = r.idx;
  n.id = r.spec.id;
  n.prompt = r.spec.prompt;
  n.seed = r.spec.seed;
  n.spread = r.spec.spread;
  return n;
}

}  // namespace

int blocks_needed(const EngineConfig& cfg) { return cfg.serving.max_num_seqs * cfg.max_blocks_per_req() + 1; }

Scheduler::Scheduler(const EngineConfig& cfg, std::vector<RequestSpec> workload) : cfg_(cfg) {
  workload_size_ = static_cast<int>(workload.size());
  std::stable_sort(workload.begin(), workload.end(),
                   [](const RequestSpec& a, const RequestSpec& b) { return a.arrival < b.arrival; });
  for (auto& w : workload) {
    RequestRecord r;
    r.spec = std::move(w);
    records_.push_back(std::move(r));
  }
  for (int32_t i = cfg.serving.max_num_seqs - 1; i >= 0; --i) free_idx_.push_back(i);
  slot_owner_.assign(static_cast<size_t>(cfg.serving.max_num_seqs), kNoOwner);
  const int blocks = cfg.model.num_blocks > 0 ? cfg.model.num_blocks : blocks_needed(cfg);
  for (int32_t b = blocks - 1; b >= 1; --b) free_blocks_.push_back(b);
}

void Scheduler::admit_until(core::Time now) {
  while (next_arrival_ < static_cast<size_t>(workload_size_) && records_[next_arrival_].spec.arrival <= now)
    waiting_.push_back(next_arrival_++);
}

std::optional<core::Time> Scheduler::next_arrival() const {
  if (next_arrival_ >= static_cast<size_t>(workload_size_)) return std::nullopt;
  return records_[next_arrival_].spec.arrival;
}

bool Scheduler::done() const { return finished_count_ == workload_size_; }

bool Scheduler::allocate_blocks(RequestRecord& r, int upto_tokens, std::vector<int32_t>& fresh) {
  const int need = (upto_tokens + cfg_.model.block_size - 1) / cfg_.model.block_size;
  const int missing = need - static_cast<int>(r.blocks.size());
  if (missing <= 0) return true;
  if (static_cast<int>(free_blocks_.size()) < missing) return false;
  for (int i = 0; i < missing; ++i) {
    fresh.push_back(free_blocks_.back());
    r.blocks.push_back(free_blocks_.back());
    free_blocks_.pop_back();
  }
  return true;
}

std::shared_ptr<SchedulerOutput> Scheduler::schedule(int64_t step) {
  if (cfg_.workload.abort_in_flight) abort_in_flight();
  auto so = std::make_shared<SchedulerOutput>();
  so->step = step;
  const int k = cfg_.spec.k;
  int budget = cfg_.serving.max_num_batched_tokens;
  auto add = [&](RequestRecord& r, int tokens) -> bool {
    ScheduledRequest s = scheduled_row(r, tokens);
    if (!allocate_blocks(r, r.num_computed + tokens, s.new_blocks)) return false;
    so->requests.push_back(std::move(s));
    so->num_tokens += tokens;
    budget -= tokens;
    r.in_flight = true;
    r.last_step = step;
    return true;
  };
  const int64_t pp = cfg_.topology.pp;
  auto eligible = [&](const RequestRecord& r) { return !r.in_flight && !r.finished && step >= r.last_step + pp; };
  // Decode rows first (1 + K: the scheduler knows only the draft count), then prefill chunks.
  for (size_t i : running_) {
    RequestRecord& r = records_[i];
    if (!eligible(r) || r.num_computed < r.prefill_len()) continue;
    // A warmup dummy decodes without drafts: the drafter does not run in warmup, and with feedback
    // off the earlier stages never learn how many drafts the last stage rejected, so their
    // optimistic num_computed would drift from the engine core's (vLLM's dummy runs keep no
    // request state at all).
    const int tokens = 1 + (r.dummy ? 0 : std::min(k, cfg_.model.max_model_len - r.num_computed - 1));
    if (tokens > budget) break;
    add(r, tokens);
  }
  for (size_t i : running_) {
    RequestRecord& r = records_[i];
    if (!eligible(r) || r.num_computed >= r.prefill_len() || budget <= 0) continue;
    const int remaining = r.prefill_len() - r.num_computed;
    if (!cfg_.serving.chunked_prefill && remaining > budget) continue;
    add(r, std::min(remaining, budget));
  }
  // Admit waiting requests while a req-state index and the budget allow.
  while (!waiting_.empty() && budget > 0 && !free_idx_.empty()) {
    RequestRecord& r = records_[waiting_.front()];
    const int remaining = r.prefill_len();
    if (!cfg_.serving.chunked_prefill && remaining > budget) break;
    r.idx = free_idx_.back();
    if (!add(r, std::min(remaining, budget))) {
      r.idx = -1;
      break;
    }
    free_idx_.pop_back();
    slot_owner_[static_cast<size_t>(r.idx)] = waiting_.front();
    r.admitted = true;
    running_.push_back(waiting_.front());
    waiting_.pop_front();
    so->new_requests.push_back(new_request_of(r));
  }
  if (so->requests.empty() && running_.empty()) return nullptr;  // wait for arrivals
  so->finished.swap(finished_idx_);
  return so;
}

void Scheduler::abort_in_flight() {
  const std::deque<size_t> running = running_;  // finish() edits the list
  for (size_t i : running) {
    RequestRecord& r = records_[i];
    if (r.in_flight && r.spec.abort && static_cast<int>(r.output.size()) >= cfg_.workload.abort_after) finish(r, true);
  }
}

void Scheduler::finish(RequestRecord& r, bool aborted) {
  slot_owner_[static_cast<size_t>(r.idx)] = kNoOwner;
  r.finished = true;
  r.aborted = aborted;
  r.in_flight = false;
  finished_idx_.push_back(r.idx);
  free_idx_.push_back(r.idx);
  std::sort(free_idx_.begin(), free_idx_.end(), std::greater<>());  // lowest index is reused first
  for (int32_t b : r.blocks) free_blocks_.push_back(b);
  r.blocks.clear();
  running_.erase(std::find(running_.begin(), running_.end(), static_cast<size_t>(&r - records_.data())));
  if (!r.dummy) ++finished_count_;
}

void Scheduler::update(const SchedulerOutput& so, const ModelOutput& out) {
  PPSPEC_ASSERT(out.rows.size() == so.requests.size());
  if (!so.requests.empty()) ++steps_with_output_;
  for (size_t i = 0; i < so.requests.size(); ++i) {
    const ScheduledRequest& s = so.requests[i];
    const RowOutput& row = out.rows[i];
    const size_t owner = slot_owner_[static_cast<size_t>(s.idx)];
    if (owner == kNoOwner || records_[owner].spec.id != s.id) continue;  // finished meanwhile (not under the PP cadence)
    RequestRecord* r = &records_[owner];
    r->in_flight = false;
    if (!s.produces_sample()) {
      r->num_computed += s.num_tokens;
      continue;
    }
    r->num_computed += s.num_tokens - row.num_rejected;
    if (s.decode()) {
      ++r->decode_steps;
      r->verified_drafts.push_back(row.drafts_verified);
      r->verified_step.push_back(so.step);
      r->accepted_drafts += row.num_sampled - 1;
    }
    r->proposed_drafts += static_cast<int64_t>(row.drafts_proposed.size());
    bool stop = false;
    for (int64_t t : row.tokens) {
      if (static_cast<int>(r->output.size()) >= r->spec.max_tokens) break;
      r->output.push_back(t);
      r->output_step.push_back(so.step);
      r->output_time.push_back(out.time);
      if (t == cfg_.model.stop_token) {
        stop = true;
        break;
      }
    }
    if (stop || static_cast<int>(r->output.size()) >= r->spec.max_tokens ||
        r->num_computed + cfg_.spec.k + 1 >= cfg_.model.max_model_len)
      finish(*r, false);
    else if (r->spec.abort && !cfg_.workload.abort_in_flight && static_cast<int>(r->output.size()) >= cfg_.workload.abort_after)
      finish(*r, true);
  }
}

void Scheduler::add_dummies(int n, int prompt_len, int max_tokens) {
  PPSPEC_ASSERT(prompt_len >= 1 && prompt_len <= cfg_.max_prompt());
  PPSPEC_ASSERT(max_tokens >= 1 && max_tokens <= cfg_.workload.output_max);
  for (int i = 0; i < n; ++i) {
    RequestRecord r;
    r.spec.id = -2 - dummies_added_++;  // -1 is events' "no request"
    r.spec.prompt.assign(static_cast<size_t>(prompt_len), 1);
    r.spec.max_tokens = max_tokens;
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
    if (r.dummy && !r.finished && r.admitted) finish(r, true);
  waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), [this](size_t i) { return records_[i].dummy; }),
                 waiting_.end());
}

}  // namespace ppspec::engine
