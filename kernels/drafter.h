// The DSpark drafter's forward (toy): one block-parallel pass over the query block of each
// request. It extends the target's context lane of the last valid context row with the bonus and
// its own drafts, through its own embedding table, so its drafts are right wherever the target
// takes the context lane. A small MoE layer (gate, router, experts) adds a confidence per query
// row; padded rows must route to no expert.
#pragma once

#include <cstdint>

#include "kernels/row.h"
#include "kernels/span.h"
#include "kernels/toy_model.h"

namespace ppspec::kernels {

// Writes the context lane of every valid context row into the drafter's KV (never through PAD).
struct DraftContextKvKernel {
  Span<const int64_t> context_slot_mapping;  // [target rows]
  Span<const uint32_t> c;                    // [target rows] the target's context lane
  Span<uint32_t> draft_kv;                   // [slots]
  PPSPEC_HD void row(int64_t t) const {
    if (context_slot_mapping[t] != kPadSlot) draft_kv[context_slot_mapping[t]] = c[t];
  }
};

// The drafter's per-request sampling counts, from the sampler's [2, N] counts of the batch rows
// that sampled, and its anchor: the last valid context row (rejected drafts are not context).
struct DflashGatherKernel {
  int32_t batch_rows;             // N
  Span<const int32_t> counts;     // [2N]: num_sampled, then num_rejected, by batch row
  Span<const int32_t> batch_row;  // [draft rows]
  Span<const int32_t> ctx_end;    // [draft rows]
  Span<int32_t> num_sampled;      // [draft rows]
  Span<int32_t> num_rejected;
  Span<int32_t> anchor_row;
  PPSPEC_HD void row(int64_t d) const {
    num_sampled[d] = counts[batch_row[d]];
    num_rejected[d] = counts[batch_rows + batch_row[d]];
    anchor_row[d] = ctx_end[d] - 1 - num_rejected[d];
  }
};

// DraftContextKvKernel over each drafted request's own context rows (one program per request):
// rows of requests that did not sample this step are not the drafter's context.
struct DraftContextKvRangesKernel {
  DraftContextKvKernel kv;
  Span<const int32_t> ctx_start;  // [draft rows]
  Span<const int32_t> ctx_end;
  PPSPEC_HD void row(int64_t d) const {
    for (int32_t t = ctx_start[d]; t < ctx_end[d]; ++t) kv.row(t);
  }
};

// One program per request: drafts [num_reqs, K].
struct DraftForwardKernel {
  int32_t k;
  Span<const int32_t> anchor_row;    // [num_reqs] the last valid context row
  Span<const uint32_t> c;            // [target rows]
  Span<const int32_t> input_ids;     // [query rows] bonus at r*K
  Span<const int64_t> positions;     // [query rows]
  Span<const uint32_t> draft_embed;  // [V] the drafter's own table
  uint32_t r_pow;                    // R
  int32_t vocab;
  Span<int64_t> drafts;  // [num_reqs, width]
  // Columns of `drafts` (0: k). An adaptive draft budget drafts k < width tokens per request; the
  // columns past it hold the MASK id (vocab - 1), which no step verifies (the engine core schedules
  // 1 + k tokens for the request's next step).
  int32_t width = 0;
  PPSPEC_HD void row(int64_t r) const {
    const int64_t q = r * k;
    const int32_t w = width > 0 ? width : k;
    uint32_t h = c[anchor_row[r]];
    int64_t tok = input_ids[q];
    int64_t pos = positions[q];
    for (int32_t off = 0; off < k; ++off) {
      h += draft_embed[tok] * pow32(r_pow, static_cast<uint64_t>(pos));
      tok = ctx_token(h, vocab);
      drafts[r * w + off] = tok;
      ++pos;
    }
    for (int32_t off = k; off < w; ++off) drafts[r * w + off] = vocab - 1;
  }
};

// The MoE gate: logits per query row and expert, from the row's input id and position. A padded
// row that was not cleared still carries the previous batch's values here.
struct DraftGateKernel {
  Span<const int32_t> input_ids;
  Span<const int64_t> positions;
  int32_t experts;
  Span<float> gating;  // [rows, experts]
  PPSPEC_HD void row(int64_t i) const {
    for (int32_t e = 0; e < experts; ++e) {
      const uint32_t z = mix32(static_cast<uint32_t>(input_ids[i]) * 31U + static_cast<uint32_t>(positions[i]) * 7U +
                               static_cast<uint32_t>(e) * 0x9E3779B9U);
      gating[i * experts + e] = static_cast<float>(z % 2000U) / 200.0f - 5.0f;
    }
  }
};

// The experts: each adds its scale to the confidence of the rows routed to it.
struct DraftExpertsKernel {
  Span<const int32_t> topk_ids;
  Span<const float> topk_weights;
  int32_t k;
  Span<const float> expert_scale;  // [experts]
  Span<float> confidence;          // [rows]
  PPSPEC_HD void row(int64_t i) const {
    float s = 0.0f;
    for (int32_t j = 0; j < k; ++j) {
      const int32_t e = topk_ids[i * k + j];
      if (e >= 0) s += topk_weights[i * k + j] * expert_scale[e];
    }
    confidence[i] = s;
  }
};

// A dummy proposal's query rows (data parallelism: an idle replica's drafter forwards): every row
// padding, token 0 at position 0, as vLLM's dummy run feeds zeros; the router sends them nowhere.
struct DummyQueryRowsKernel {
  Span<int32_t> input_ids;
  Span<int64_t> positions;
  Span<bool> is_padding;
  PPSPEC_HD void row(int64_t q) const {
    input_ids[q] = 0;
    positions[q] = 0;
    is_padding[q] = true;
  }
};

// The confidence head's output as exact fixed point (1/65536ths), so that the TP ranks' partial
// confidences (each over its shard of the experts) sum to the same word on every rank and backend
// whatever the all-reduce's order (an adaptive draft budget is decided from them).
inline constexpr float kConfidenceOne = 65536.0f;
struct ConfidenceToFixedKernel {
  Span<const float> confidence;  // [rows]
  Span<int32_t> fixed;           // [rows]
  PPSPEC_HD void row(int64_t i) const { fixed[i] = static_cast<int32_t>(confidence[i] * kConfidenceOne); }
};

}  // namespace ppspec::kernels
