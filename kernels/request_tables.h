// Small kernels between a batch (rows in schedule order) and the per-request tables (rows by
// req-state index): the gathers and scatters vLLM does with index tensors on the device.
#pragma once

#include <cstdint>

#include "kernels/row.h"
#include "kernels/span.h"

namespace ppspec::kernels {

// postprocess_num_computed_tokens on earlier stages: advance optimistically by the whole query; the
// deferred update subtracts the rejected drafts. Each batch row owns a distinct request.
struct AdvanceNumComputedKernel {
  Span<const int32_t> idx_mapping;  // [rows]
  Span<const int32_t> query_len;    // [rows]
  Span<int32_t> num_computed;       // [max_reqs]
  PPSPEC_HD void row(int64_t r) const { num_computed[idx_mapping[r]] += query_len[r]; }
};

// The sampler's per-row seeds, spreads and output indices, gathered from the request tables. The
// output index (what keys a token's uniforms) comes from the rank's own counts, not the engine
// core's: a step scheduled while the request's previous step is in flight (async scheduling's
// lookahead) is scheduled before the core knows how many tokens that step kept.
struct GatherSamplingParamsKernel {
  Span<const int32_t> idx_mapping;  // [rows]
  Span<const int64_t> req_seeds;    // [max_reqs]
  Span<const uint32_t> req_spread;  // [max_reqs]
  Span<const int32_t> output_base;  // [max_reqs] output tokens the request had when it was admitted
  Span<const int32_t> total_len;    // [max_reqs] its prefill and every token sampled since
  Span<const int32_t> prefill_len;  // [max_reqs]
  Span<int64_t> seeds;              // [rows]
  Span<uint32_t> spread;            // [rows]
  Span<int64_t> out_index;          // [rows]
  // Folded into every seed: 0 on a correct engine, whose TP ranks share one sampling stream
  // (a rank-local stream is the fault rank_local_sampling).
  int64_t rank_salt;
  PPSPEC_HD void row(int64_t r) const {
    const int32_t req = idx_mapping[r];
    seeds[r] = req_seeds[req] ^ rank_salt;
    spread[r] = req_spread[req];
    out_index[r] = static_cast<int64_t>(output_base[req]) + total_len[req] - prefill_len[req];
  }
};

// A copy of each listed request's block-table row, in list order ([rows, max_blocks]).
struct GatherBlockRowsKernel {
  Span<const int32_t> idx_mapping;  // [rows]
  Span<const int32_t> block_table;  // [max_reqs, max_blocks]
  int32_t max_blocks;
  Span<int32_t> out;  // [rows, max_blocks]
  PPSPEC_HD void row(int64_t r) const {
    const Span<const int32_t> src = block_table.sub(static_cast<int64_t>(idx_mapping[r]) * max_blocks, max_blocks);
    for (int32_t j = 0; j < max_blocks; ++j) out[r * max_blocks + j] = src[j];
  }
};

// req_states.draft_tokens[idx_mapping] = draft_tokens (the drafter's rows, by request).
struct SetDraftTokensKernel {
  int32_t k;
  Span<const int32_t> idx_mapping;  // [draft rows]
  Span<const int64_t> drafts;       // [draft rows, K]
  Span<int64_t> draft_tokens;       // [max_reqs, K]
  PPSPEC_HD void row(int64_t d) const {
    for (int32_t j = 0; j < k; ++j) draft_tokens[static_cast<int64_t>(idx_mapping[d]) * k + j] = drafts[d * k + j];
  }
};

// The batch's rows of the draft table, for the feedback relay (#55745: on the main stream).
struct GatherDraftsKernel {
  int32_t k;
  Span<const int32_t> idx_mapping;   // [rows]
  Span<const int64_t> draft_tokens;  // [max_reqs, K]
  Span<int64_t> out;                 // [rows, K]
  PPSPEC_HD void row(int64_t r) const {
    for (int32_t j = 0; j < k; ++j) out[r * k + j] = draft_tokens[static_cast<int64_t>(idx_mapping[r]) * k + j];
  }
};

}  // namespace ppspec::kernels
