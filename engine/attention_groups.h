// The KV-cache group of the target's attention layers and the reorder threshold TRITON_MLA's
// metadata builder splits a batch at (vLLM's KV-cache grouping, MLAAttentionSpec.merge, and the
// builder's reorder_batch_threshold).
//
// vLLM puts layers whose KV-cache specs have the same shape into one group and merges their specs;
// MLAAttentionSpec.merge ORs `non_causal_multi_token_decode`. The target's layers are causal, and
// TRITON_MLA serves them one query row per request on its decode path (query_len_support
// SINGLE_ONLY: threshold 1), so a verification block of 1 + K rows goes to the prefill path. The
// DSpark drafter's layers (Kimi-K3's native draft) attend non-causally over a block of 1 + K query
// rows, which the decode path serves flattened: its group's threshold is 1 + K. vLLM #56952 gives
// the draft's spec a model_version of its own, so the two specs never merge; before it, the draft
// joined the target's group and raised its threshold, and the target's causal verification blocks
// went to a decode path that reads one block-table row and one sequence length per query row
// (vLLM #51848: an illegal memory access, or another request's KV).
#pragma once

#include <cstdint>

#include "engine/config.h"
#include "engine/messages.h"

namespace ppspec::engine {

// The target's KV-cache group as its metadata builder sees it.
struct TargetKvGroup {
  bool shares_draft = false;                   // the drafter's layers merged into it
  bool non_causal_multi_token_decode = false;  // the merged spec's flag
  // Query length up to which a request goes to the decode path; 0: the backend does not split.
  int reorder_threshold = 0;
};

TargetKvGroup target_kv_group(const EngineConfig& cfg);

// Where a batch splits (vLLM's split_decodes_and_prefills over a batch ordered decode rows first):
// the leading requests whose query length is at most the threshold go to the decode path.
struct AttentionSplit {
  int32_t num_decodes = 0;
  int32_t num_decode_tokens = 0;
};

AttentionSplit split_decodes_and_prefills(const SchedulerOutput& so, int reorder_threshold);

}  // namespace ppspec::engine
