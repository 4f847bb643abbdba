// The scheduler's part in prefill/decode disaggregation (engine/disaggregation.h). The prefill
// instance: a finished request keeps its blocks for the transfer, and exports those that hold its
// prompt (vLLM: get_block_ids_for_computed_tokens, #46694). The decode instance: an arrived
// request gets blocks for its prompt at its first pass through admission, without a step of its
// own (vLLM's WAITING_FOR_REMOTE_KVS: no lookahead slots, no token budget), and keeps its place in
// the queue, passed over, until every rank pulled its KV; it is then admitted from its prompt's
// last token, which is recomputed for its logits.
#include <algorithm>

#include "core/assert.h"
#include "engine/scheduler.h"

namespace ppspec::engine {

void Scheduler::hold_for_export(RequestRecord& r, std::vector<int32_t>& blocks) {
  PPSPEC_ASSERT(!r.in_flight() && !held_.contains(r.spec.id),
                "request {} exports its KV twice, or with a step in flight", r.spec.id);
  KvExport e{r.spec.id, {}};
  const auto prompt_blocks =
      static_cast<size_t>(kv_blocks_of_prompt(static_cast<int>(r.spec.prompt.size()), cfg_.model.block_size));
  PPSPEC_ASSERT(blocks.size() >= prompt_blocks, "request {} holds {} blocks for a prompt of {}", r.spec.id,
                blocks.size(), prompt_blocks);
  const size_t exported = cfg_.faults.prefill_exports_lookahead ? blocks.size() : prompt_blocks;
  e.blocks.assign(blocks.begin(), blocks.begin() + static_cast<std::ptrdiff_t>(exported));
  exports_.push_back(std::move(e));
  if (cfg_.faults.prefill_frees_before_read) return;  // freed with the release, as by an expired lease
  held_.emplace(r.spec.id, std::move(blocks));
  blocks.clear();
}

std::vector<KvExport> Scheduler::take_exports() {
  std::vector<KvExport> out;
  out.swap(exports_);
  return out;
}

void Scheduler::release_export(int64_t req, int64_t step) {
  const auto it = held_.find(req);
  if (it == held_.end() && cfg_.faults.prefill_frees_before_read) return;  // freed at the release already
  PPSPEC_ASSERT(it != held_.end(), "request {}'s transfer completed, and it holds no blocks for it", req);
  free_blocks(req, step, core::Release::finished, std::move(it->second));
  held_.erase(it);
}

void Scheduler::arrive_remote(const KvExport& e) {
  PPSPEC_ASSERT(cfg_.instance() == Instance::decode);
  const auto it = std::find_if(records_.begin(), records_.end(),
                               [&](const RequestRecord& r) { return !r.dummy && r.spec.id == e.req; });
  PPSPEC_ASSERT(it != records_.end() && it->remote == RemoteKv::none && !it->finished,
                "request {} arrived from the prefill instance twice, or is not the workload's", e.req);
  it->remote = RemoteKv::waiting;
  it->remote_blocks = e.blocks;
  enqueue(index_of(*it), false);
}

bool Scheduler::start_load(RequestRecord& r, int64_t step) {
  PPSPEC_ASSERT(r.remote == RemoteKv::waiting && r.blocks.empty());
  const int n = kv_blocks_of_prompt(static_cast<int>(r.spec.prompt.size()), cfg_.model.block_size);
  if (pool_.free_count() < n) return false;
  LedgerEntry e{LedgerEntry::What::allocated, r.spec.id, step, core::Release::none, r.idx, 0, {}};
  pool_.allocate(n, e.blocks);
  r.blocks = e.blocks;
  ledger_.push_back(std::move(e));
  r.remote = RemoteKv::loading;
  ++pulls_waiting_;
  loads_.push_back(KvLoad{r.spec.id, step, r.blocks, r.remote_blocks});
  return true;
}

void Scheduler::admitted_pulled(RequestRecord& r, ScheduledRequest& row) {
  const auto pulled = static_cast<size_t>(row.first_new_block);
  PPSPEC_ASSERT(row.id == r.spec.id && pulled <= r.blocks.size() && row.num_computed == r.num_computed);
  row.new_blocks.insert(row.new_blocks.begin(), r.blocks.begin(),
                        r.blocks.begin() + static_cast<std::ptrdiff_t>(pulled));
  row.first_new_block = 0;
  r.remote = RemoteKv::admitted;
  end_pull();
}

// vLLM finish_requests on a request in WAITING_FOR_REMOTE_KVS (#32255): it ends, but its blocks
// stay held while a pull still writes them, freed when its pulls complete (kv_loaded). It held no
// state index: its release says -1. Under `abort_frees_loading_blocks` they are freed at once.
void Scheduler::abort_remote(int64_t step) {
  const std::deque<size_t> waiting = waiting_;  // finish() edits the queue
  for (size_t i : waiting) {
    RequestRecord& r = records_[i];
    if (!r.spec.abort || r.abort_arrived || (r.remote != RemoteKv::loading && r.remote != RemoteKv::loaded)) continue;
    PPSPEC_ASSERT(r.idx < 0, "request {} waits for its KV with state index {}", r.spec.id, r.idx);
    abort_arrives(r, step);
    const bool hold = r.remote == RemoteKv::loading && !cfg_.faults.abort_frees_loading_blocks;
    std::vector<int32_t> blocks;
    blocks.swap(r.blocks);
    ledger_.push_back(LedgerEntry{LedgerEntry::What::released, r.spec.id, step, core::Release::aborted, -1, 0,
                                  hold ? blocks : std::vector<int32_t>{}});
    if (r.remote == RemoteKv::loaded) end_pull();  // its pulls are done: nothing writes the blocks any more
    if (hold)
      held_.emplace(r.spec.id, std::move(blocks));
    else
      free_blocks(r.spec.id, step, core::Release::aborted, std::move(blocks));
    finish(r, true, step);
  }
}

void Scheduler::end_pull() {
  PPSPEC_ASSERT(pulls_waiting_ > 0, "a pull ended with none waiting");
  --pulls_waiting_;
}

std::vector<KvLoad> Scheduler::take_loads() {
  std::vector<KvLoad> out;
  out.swap(loads_);
  return out;
}

// vLLM _update_waiting_for_remote_kv: the computed tokens are the blocks' worth, at most the
// prompt less its last token, which the first step recomputes for its logits. A request aborted
// while loading gets its blocks freed now, its pulls done (vLLM #32255).
void Scheduler::kv_loaded(int64_t req, int64_t step) {
  const auto it = std::find_if(records_.begin(), records_.end(),
                               [&](const RequestRecord& r) { return !r.dummy && r.spec.id == req; });
  PPSPEC_ASSERT(it != records_.end() && it->remote == RemoteKv::loading, "request {}'s pulls completed unasked", req);
  if (it->finished) {
    it->remote = RemoteKv::loaded;
    end_pull();
    const auto held = held_.find(req);
    PPSPEC_ASSERT(held != held_.end() || cfg_.faults.abort_frees_loading_blocks,
                  "request {} was aborted while loading and holds no blocks for its pulls", req);
    if (held == held_.end()) return;  // freed at the abort (abort_frees_loading_blocks)
    free_blocks(req, step, core::Release::aborted, std::move(held->second));
    held_.erase(held);
    return;
  }
  const auto prompt = static_cast<int32_t>(it->spec.prompt.size());
  it->num_computed = std::min(static_cast<int32_t>(it->blocks.size()) * cfg_.model.block_size, prompt);
  if (it->num_computed == prompt) --it->num_computed;
  it->remote = RemoteKv::loaded;
}

}  // namespace ppspec::engine
