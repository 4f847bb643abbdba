// The scheduler's prefix caching (vLLM kv_cache_manager.py get_computed_blocks / cache_blocks):
// what a waiting request finds in the cache when it is admitted, and which blocks of a step's
// rows become cached. Without `[serving] enable_prefix_caching` nothing here does anything.
//
// When blocks are cached: when the step that computes their last token is scheduled (vLLM
// allocate_slots caches min(num_computed + num_new_tokens, num_tokens)), counting only tokens the
// engine core knows: the prompt and the output so far, never the drafts a decode row verifies nor
// the lookahead slots past them. The running rows are cached once the step's preemptions are
// settled (a victim taken out of the step computes nothing), and before the waiting requests are
// admitted, so that one admitted in the same step may hit them: every stage stores a step's KV
// for all its rows before any row reads it (kernels/toy_model.h), and runs its steps in order.
#include <span>

#include "core/assert.h"
#include "engine/scheduler.h"

namespace ppspec::engine {

int32_t RequestRecord::token_at(int pos) const {
  const auto prompt_len = static_cast<int>(spec.prompt.size());
  PPSPEC_ASSERT(pos >= 0 && pos < known_tokens(), "request {}: token {} of {} known", spec.id, pos, known_tokens());
  return pos < prompt_len ? spec.prompt[static_cast<size_t>(pos)]
                          : static_cast<int32_t>(output[static_cast<size_t>(pos - prompt_len)]);
}

// The chained hashes of `r`'s first `n` full blocks (its known tokens must fill them).
void Scheduler::hash_blocks(RequestRecord& r, int n) {
  const int bs = cfg_.model.block_size;
  PPSPEC_ASSERT(n * bs <= r.known_tokens(), "request {}: {} full blocks of {} tokens asked, {} tokens known", r.spec.id,
                n, bs, r.known_tokens());
  std::vector<int32_t> tokens(static_cast<size_t>(bs));
  while (static_cast<int>(r.block_hashes.size()) < n) {
    const auto i = static_cast<int>(r.block_hashes.size());
    for (int o = 0; o < bs; ++o) tokens[static_cast<size_t>(o)] = r.token_at(i * bs + o);
    const uint64_t parent = i == 0 ? BlockPool::kNoHash : r.block_hashes.back();
    r.block_hashes.push_back(BlockPool::block_hash(parent, i, tokens));
  }
}

// The longest run of cached blocks the prefill begins with, at most num_tokens - 1 tokens (vLLM
// max_cache_hit_length): at least one token is computed, so that the request gets its logits, and
// its KV goes into a block of its own. Warmup's synthetic requests neither hit nor cache: vLLM's
// dummy runs never reach the cache, and their tokens here are not what every stage embedded.
Scheduler::PrefixHit Scheduler::prefix_hit(RequestRecord& r) {
  PrefixHit hit;
  // A waiting request has computed nothing, unless late_output_after_preempt adopted a stale
  // step's output into it: then it starts where that left it, as without the cache.
  if (!pool_.caching() || r.dummy || r.num_computed != 0 || !r.blocks.empty()) return hit;
  const int known = r.prefill_len();
  const int cap = cfg_.faults.full_prefix_hit ? known : known - 1;
  const int n = cap / cfg_.model.block_size;
  hash_blocks(r, n);
  hit.blocks = pool_.lookup(std::span<const uint64_t>(r.block_hashes).first(static_cast<size_t>(n)));
  // The fault: a prefill hit whole recomputes only its last token, into the last hit block.
  hit.computed = std::min(static_cast<int>(hit.blocks.size()) * cfg_.model.block_size, known - 1);
  return hit;
}

// Whether the blocks the admission needs are free: the fresh ones, and the hit blocks that are in
// the free queue now (taking them as a hit takes them out of it).
bool Scheduler::hit_fits(const RequestRecord& r, const PrefixHit& hit, int tokens) const {
  if (hit.blocks.empty()) return true;
  const int fresh = missing_blocks(r, hit.computed + tokens) - static_cast<int>(hit.blocks.size());
  return fresh + pool_.free_among(hit.blocks) <= pool_.free_count();
}

void Scheduler::take_hit(RequestRecord& r, const PrefixHit& hit, int64_t step) {
  if (hit.blocks.empty()) return;
  pool_.touch(hit.blocks);
  r.blocks = hit.blocks;
  r.num_computed = hit.computed;
  r.cached_blocks = static_cast<int32_t>(hit.blocks.size());
  r.prefix_hit_blocks += static_cast<int64_t>(hit.blocks.size());
  ledger_.push_back(LedgerEntry{LedgerEntry::What::shared, r.spec.id, step, core::Release::none, r.idx, 0, hit.blocks});
}

// The admitted request's row: the workers' block table gets the hit blocks too (the row's new
// blocks start at column 0); then what its first chunk computes is cached.
void Scheduler::admitted_with_hit(RequestRecord& r, const PrefixHit& hit, ScheduledRequest& row, int64_t step) {
  PPSPEC_ASSERT(row.id == r.spec.id && row.first_new_block == static_cast<int32_t>(hit.blocks.size()));
  if (!hit.blocks.empty()) {
    row.new_blocks.insert(row.new_blocks.begin(), hit.blocks.begin(), hit.blocks.end());
    row.first_new_block = 0;
  }
  cache_full_blocks(r, row.num_computed + row.num_tokens, step);
}

void Scheduler::cache_rows(const SchedulerOutput& so) {
  for (const ScheduledRequest& s : so.requests) {
    const size_t owner = slot_owner_[static_cast<size_t>(s.idx)];
    // A row whose request let go of its slot (preempt_keeps_spec_tokens) computes for nobody.
    if (owner == kNoOwner || records_[owner].spec.id != s.id || records_[owner].dummy) continue;
    cache_full_blocks(records_[owner], s.num_computed + s.num_tokens, so.step);
  }
}

// Caches `r`'s blocks that the tokens up to `upto_tokens` fill, of those the engine core knows.
// A block whose content another block already caches stays uncached (the later copy).
void Scheduler::cache_full_blocks(RequestRecord& r, int upto_tokens, int64_t step) {
  const int full = std::min(upto_tokens, r.known_tokens()) / cfg_.model.block_size;
  if (full <= r.cached_blocks) return;
  PPSPEC_ASSERT(full <= static_cast<int>(r.blocks.size()), "request {} caches {} blocks of its {}", r.spec.id, full,
                r.blocks.size());
  hash_blocks(r, full);
  LedgerEntry e{LedgerEntry::What::cached, r.spec.id, step, core::Release::none, r.idx, r.cached_blocks, {}};
  for (auto i = static_cast<size_t>(r.cached_blocks); i < static_cast<size_t>(full); ++i)
    if (pool_.cache(r.blocks[i], r.block_hashes[i])) e.blocks.push_back(r.blocks[i]);
  r.cached_blocks = full;
  if (!e.blocks.empty()) ledger_.push_back(std::move(e));
}

}  // namespace ppspec::engine
