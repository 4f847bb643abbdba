// prepare_dflash_inputs (vLLM `_prepare_dflash_inputs_kernel`): the drafter's query block and
// context rows. Per request r: the context rows are the target rows of the step, the rejected
// suffix invalid (position 0, slot PAD); the query block is [bonus, MASK x (K-1)] at the positions
// after the last valid context row; with sample_from_anchor (DSpark) every query position is
// sampled at pos+1. Rows past the requests, up to the graph size, are padding: the #56956 fix clears
// their input ids and positions and sets is_padding (`clear_padding`); slots are PAD regardless.
#pragma once

#include <cstdint>

#include "kernels/row.h"
#include "kernels/span.h"
#include "kernels/toy_model.h"

namespace ppspec::kernels {

struct PrepareDflashInputsKernel {
  int32_t num_reqs;
  int32_t num_query_per_req;  // K
  int32_t max_num_reqs;
  int32_t max_num_tokens;           // query rows of the drafter's graph
  Span<const int32_t> idx_mapping;  // [num_reqs] req-state index
  Span<const int32_t> ctx_start;    // [num_reqs] first target row of the request
  Span<const int32_t> ctx_end;      // [num_reqs] one past its last target row
  Span<const int64_t> target_positions;
  Span<const int32_t> num_sampled;          // [num_reqs]
  Span<const int32_t> num_rejected;         // [num_reqs]
  Span<const int64_t> last_sampled;         // [max_reqs]
  Span<const int64_t> next_prefill_tokens;  // [max_reqs]
  Span<const int32_t> block_table;          // [num_reqs, max_blocks]: gathered per batch row
  int32_t max_blocks;
  int32_t block_size;
  int32_t mask_id;
  int64_t max_model_len;
  bool sample_from_anchor;
  Span<const float> req_temperature;  // [max_reqs]
  Span<const int64_t> req_seeds;      // [max_reqs]
  bool clear_padding = true;
  // outputs
  Span<int64_t> context_positions;     // [target rows]
  Span<int64_t> context_slot_mapping;  // [target rows]
  Span<int32_t> input_ids;             // [max_num_tokens]
  Span<int64_t> positions;
  Span<bool> is_padding;
  Span<int64_t> query_slot_mapping;
  Span<int32_t> sample_indices;
  Span<int64_t> sample_pos;
  Span<int32_t> sample_idx_mapping;
  Span<int32_t> query_start_loc;  // [max_num_reqs + 1]
  Span<int32_t> seq_lens;         // [max_num_reqs]
  Span<float> temperature;        // [max_reqs]
  Span<int64_t> seeds;            // [max_reqs]

  PPSPEC_HD void row(int64_t r) const {
    const int32_t k = num_query_per_req;
    const int32_t req = idx_mapping[r];
    const Span<const int32_t> blocks = block_table.sub(r * max_blocks, max_blocks);
    const int32_t cs = ctx_start[r];
    const int32_t ce = ctx_end[r];
    const int32_t valid_end = ce - num_rejected[r];
    for (int32_t t = cs; t < ce; ++t) {
      if (t < valid_end) {
        context_positions[t] = target_positions[t];
        context_slot_mapping[t] = slot_of(blocks, max_blocks, block_size, target_positions[t]);
      } else {
        context_positions[t] = 0;
        context_slot_mapping[t] = kPadSlot;
      }
    }
    const int64_t last_valid_pos = valid_end > cs ? target_positions[valid_end - 1] : -1;
    const int64_t bonus = num_sampled[r] > 0 ? last_sampled[req] : next_prefill_tokens[req];
    for (int32_t off = 0; off < k; ++off) {
      const int64_t q = r * k + off;
      int64_t pos = last_valid_pos + 1 + off;
      if (pos > max_model_len - 1) pos = max_model_len - 1;
      input_ids[q] = off == 0 ? static_cast<int32_t>(bonus) : mask_id;
      positions[q] = pos;
      is_padding[q] = false;
      query_slot_mapping[q] = slot_of(blocks, max_blocks, block_size, pos);
      if (sample_from_anchor || off > 0) {
        sample_indices[q] = static_cast<int32_t>(q);
        sample_pos[q] = sample_from_anchor ? pos + 1 : pos;
        sample_idx_mapping[q] = req;
      } else {
        sample_indices[q] = 0;
        sample_pos[q] = 0;
        sample_idx_mapping[q] = -1;
      }
    }
    query_start_loc[r] = static_cast<int32_t>(r * k);
    seq_lens[r] = static_cast<int32_t>(last_valid_pos + 1 + k);
    temperature[req] = req_temperature[req];
    seeds[req] = req_seeds[req];
    if (r != num_reqs - 1) return;
    // The last program pads, so that a graph replayed at max_num_tokens rows reads nothing stale.
    const int32_t used = num_reqs * k;
    for (int32_t i = num_reqs; i <= max_num_reqs; ++i) query_start_loc[i] = used;
    for (int32_t i = num_reqs; i < max_num_reqs; ++i) seq_lens[i] = 0;
    for (int32_t q = used; q < max_num_tokens; ++q) {
      if (clear_padding) {
        input_ids[q] = 0;
        positions[q] = 0;
        is_padding[q] = true;
      }
      query_slot_mapping[q] = kPadSlot;
      sample_indices[q] = 0;
      sample_pos[q] = 0;
      sample_idx_mapping[q] = -1;
    }
  }
};

}  // namespace ppspec::kernels
