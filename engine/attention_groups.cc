#include "engine/attention_groups.h"

#include "core/assert.h"

namespace ppspec::engine {

TargetKvGroup target_kv_group(const EngineConfig& cfg) {
  TargetKvGroup g;
  if (cfg.model.attention != AttentionBackend::triton_mla) return g;
  // Only DSpark's layers are non-causal; EAGLE's drafter is causal like the target, so merging it
  // changes no flag. Without the model_version split the two specs are the same shape and merge.
  const bool non_causal_draft = cfg.spec.k > 0 && cfg.spec.method == DraftMethod::dspark;
  g.shares_draft = non_causal_draft && cfg.faults.draft_shares_target_kv_group;
  g.non_causal_multi_token_decode = g.shares_draft;
  g.reorder_threshold = g.non_causal_multi_token_decode ? 1 + cfg.spec.k : 1;
  return g;
}

AttentionSplit split_decodes_and_prefills(const SchedulerOutput& so, int reorder_threshold) {
  AttentionSplit s;
  for (const ScheduledRequest& r : so.requests) {
    PPSPEC_ASSERT(r.num_tokens >= 1, "request {} scheduled with {} tokens", r.id, r.num_tokens);
    if (r.num_tokens > reorder_threshold) break;
    ++s.num_decodes;
    s.num_decode_tokens += r.num_tokens;
  }
  return s;
}

}  // namespace ppspec::engine
