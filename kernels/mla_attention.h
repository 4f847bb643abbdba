// TRITON_MLA's two attention paths over a layer's paged KV (vLLM's triton_mla backend): the
// metadata builder splits the batch, ordered decode rows first, at its KV-cache group's reorder
// threshold (engine/attention_groups.h); the decode path runs decode_attention_fwd, one program per
// query row, and the prefill path the causal varlen kernel (LayerOutKernel) over the rest.
//
// The split lives in a device buffer that every step's metadata rewrites, as vLLM's persistent
// attention-metadata buffers do: a captured graph's kernels read the step's split, not the one of
// the capture. Each path's kernel runs over every row and serves the rows of its own range.
#pragma once

#include <cstdint>

#include "kernels/row.h"
#include "kernels/span.h"
#include "kernels/toy_model.h"

namespace ppspec::kernels {

// The step's split: [num_decodes, num_decode_tokens].
inline constexpr int64_t kSplitDecodes = 0;
inline constexpr int64_t kSplitDecodeTokens = 1;

// The builder's seq_lens of the batch's requests: a request's last query row's position + 1 (the
// positions are the workers' own, exact where the engine core's count is optimistic).
struct DecodeSeqLensKernel {
  Span<const int32_t> query_start;  // [requests + 1]
  Span<const int64_t> positions;    // [rows]
  Span<int32_t> seq_lens;           // [max_reqs]
  PPSPEC_HD void row(int64_t b) const { seq_lens[b] = static_cast<int32_t>(positions[query_start[b + 1] - 1] + 1); }
};

// decode_attention_fwd on a causal layer: program `i` is batch request `i` (one query row per
// request, the SINGLE_ONLY contract), reading its block-table row (`idx_mapping[i]`) and its
// context up to seq_lens[i] - 1. forward_mqa flattens a multi-row block into one row per query
// token only for a non-causal layer: a causal block of L > 1 rows on this path reads, for its rows
// past the first, the tables of the requests after it (vLLM #51848).
// The layer's operands (its y, KV, lanes, x and block table) are the varlen kernel's: `out`.
struct MlaDecodeAttentionKernel {
  Span<const int32_t> split;        // [2]
  Span<const int32_t> idx_mapping;  // [max_reqs] the batch's block-table rows, in batch order
  Span<const int32_t> seq_lens;     // [max_reqs]
  LayerOutKernel out;
  PPSPEC_HD void row(int64_t i) const {
    if (i >= split[kSplitDecodeTokens]) return;  // a prefill-path row
    out.x.check_range(i * out.lane_count, out.lane_count);
    const BlockRow blocks(out.in.block_table, idx_mapping[i], out.in.max_blocks);
    out.attend(i, blocks, seq_lens[i] - 1);
  }
};

// The prefill path: the causal varlen kernel over the rows past the decode path's.
struct MlaPrefillAttentionKernel {
  Span<const int32_t> split;  // [2]
  LayerOutKernel out;
  PPSPEC_HD void row(int64_t i) const {
    if (i < split[kSplitDecodeTokens]) return;  // a decode-path row
    out.row(i);
  }
};

}  // namespace ppspec::kernels
