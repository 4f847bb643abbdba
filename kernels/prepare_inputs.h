// prepare_inputs (vLLM `_combine_sampled_and_draft_tokens_kernel` + positions + slot mapping):
// builds a step's input rows from this rank's own tables. Decode rows: the last sampled token,
// then the request's drafts. Prefill rows: the prompt. Rows past the batch, up to the graph size,
// are padding: id 0, position 0, slot PAD, is_padding, row_req -1 (a graph reads every row, R10).
#pragma once

#include <cstdint>

#include "kernels/row.h"
#include "kernels/span.h"
#include "kernels/toy_model.h"

namespace ppspec::kernels {

struct PrepareInputsKernel {
  int32_t num_reqs;
  int32_t num_rows;                  // real rows (sum of query lengths)
  Span<const int32_t> query_start;   // [reqs + 1]
  Span<const int32_t> idx_mapping;   // [reqs] batch row -> req-state index
  Span<const int32_t> num_computed;  // [max_reqs]
  Span<const int32_t> prefill_len;   // [max_reqs] prompt length
  Span<const int32_t> prompt;        // [max_reqs, max_prompt]
  int32_t max_prompt;
  Span<const int64_t> last_sampled;  // [max_reqs]
  Span<const int64_t> draft_tokens;  // [max_reqs, K]
  int32_t k;
  Span<const int32_t> block_table;  // [max_reqs, max_blocks]
  int32_t max_blocks;
  int32_t block_size;
  bool clear_padding = true;  // the fault `uncleared_padding` turns this off
  Span<int32_t> input_ids;    // [max_rows]
  Span<int64_t> positions;
  Span<int64_t> slots;
  Span<bool> is_padding;
  Span<int32_t> row_req;
  // One program per batch row; row r == num_reqs clears the padding rows up to `padded_rows`.
  int32_t padded_rows;
  PPSPEC_HD void row(int64_t r) const {
    if (r == num_reqs) {
      for (int32_t i = num_rows; i < padded_rows; ++i) {
        if (clear_padding) {
          input_ids[i] = 0;
          positions[i] = 0;
          is_padding[i] = true;
        }
        slots[i] = kPadSlot;  // the slot is always padded: a write through it would corrupt the KV
        row_req[i] = -1;
      }
      return;
    }
    const int32_t req = idx_mapping[r];
    const int32_t qs = query_start[r];
    const int32_t qe = query_start[r + 1];
    const int32_t start = num_computed[req];
    const bool decode = start >= prefill_len[req];
    const Span<const int32_t> blocks = block_table.sub(static_cast<int64_t>(req) * max_blocks, max_blocks);
    const Span<const int32_t> prompt_row = prompt.sub(static_cast<int64_t>(req) * max_prompt, max_prompt);
    for (int32_t i = qs; i < qe; ++i) {
      const int32_t off = i - qs;
      const int64_t pos = start + off;
      int32_t tok;
      if (!decode)
        tok = prompt_row[pos];
      else if (off == 0)
        tok = static_cast<int32_t>(last_sampled[req]);
      else
        tok = static_cast<int32_t>(draft_tokens.sub(static_cast<int64_t>(req) * k, k)[off - 1]);
      input_ids[i] = tok;
      positions[i] = pos;
      slots[i] = slot_of(blocks, max_blocks, block_size, pos);
      is_padding[i] = false;
      row_req[i] = req;
    }
  }
};

}  // namespace ppspec::kernels
