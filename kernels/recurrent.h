// A recurrent layer of the toy model (Mamba / GatedDeltaNet-like, DESIGN §6.7): in place of a KV
// cache it keeps, per request (by req-state index), a state over this TP shard's lanes, updated
// token by token in position order with exact wrap-around arithmetic:
//   s_j' = s_j * a_j + mix32(y_j ^ v_j) * b_j,   x_j = mix32(y_j + s_j')   (a, b odd),
// so each output depends on the whole history through the state (an attention layer's KV sum is
// the same recurrence with a = b = 1 over the paged cache, which needs no rollback: a rejected
// draft's KV is simply never summed; a state has no positions to skip).
//
// Speculative verification (vLLM's GDN / Mamba spec-decode path, SGLang's hybrid cache): a step
// runs a request's 1 + K rows from its committed state, keeps the state after each of its last
// K + 1 rows in a per-request scratch indexed by position mod (K + 1), and the state at the
// accepted length is committed once the accepted count is known (RecurrentCommitKernel).
// Simplification: a row recomputes the recurrence from its request's first row in the step instead
// of a chunked scan across threads: O(rows^2) per request, exact, and independent per row, so
// a CUDA graph's padded rows and its row-to-thread mapping need nothing else.
#pragma once

#include <cstdint>

#include "kernels/row.h"
#include "kernels/span.h"

namespace ppspec::kernels {

// One recurrent step of lane j: the state after the token whose layer input is `y`.
PPSPEC_HD inline uint32_t recurrent_step(uint32_t s, uint32_t y, uint32_t v, uint32_t a, uint32_t b) {
  return s * a + mix32(y ^ v) * b;
}

// The layer's output rows. Reads the committed state (never writes it) and writes the scratch of
// the rows in the last `window` positions of each request's block: distinct slots, so no two rows
// write one word.
struct RecurrentLayerKernel {
  Span<const int32_t> row_req;    // [rows] req-state index or -1
  Span<const int64_t> positions;  // [rows]
  Span<const uint32_t> y;         // [rows, D]: the layer's mixed input (after the TP all-reduce)
  Span<const uint32_t> v;         // [D]
  Span<const uint32_t> a;         // [D]
  Span<const uint32_t> b;         // [D]
  Span<const uint32_t> state;     // [max_reqs, lane_count]: committed
  int32_t lanes;                  // D
  int32_t lane_begin;
  int32_t lane_count;
  int32_t window;          // K + 1
  int64_t rows;            // rows of the launch (padded)
  Span<uint32_t> scratch;  // [max_reqs * window, lane_count]: the state after position p at p % window
  Span<uint32_t> x;        // [rows, lane_count]
  PPSPEC_HD void row(int64_t i) const {
    const Span<uint32_t> xr = x.sub(i * lane_count, lane_count);
    const int32_t req = row_req[i];
    if (req < 0) {
      for (int32_t jl = 0; jl < lane_count; ++jl) xr[jl] = 0;
      return;
    }
    // A request's rows are contiguous and in position order (the batch layout of prepare_inputs).
    int64_t first = i;
    while (first > 0 && row_req[first - 1] == req) --first;
    int64_t end = i + 1;
    while (end < rows && row_req[end] == req) ++end;
    const bool keep = i >= end - window;
    const int64_t slot = (static_cast<int64_t>(req) * window + positions[i] % window) * lane_count;
    for (int32_t jl = 0; jl < lane_count; ++jl) {
      const int32_t j = lane_begin + jl;
      uint32_t s = state[static_cast<int64_t>(req) * lane_count + jl];
      for (int64_t t = first; t <= i; ++t) s = recurrent_step(s, y[t * lanes + j], v[j], a[j], b[j]);
      xr[jl] = mix32(y[i * lanes + j] + s);
      if (keep) scratch[slot + jl] = s;
    }
  }
};

// Commits, per batch entry, the state after the request's `num_computed` tokens: the position
// num_computed - 1 must be one of the last `window` the request's step ran (the accepted length
// lies between its first row and its last). Entries with idx -1 are skipped (freed since, or no
// feedback to adopt).
struct RecurrentCommitKernel {
  Span<const int32_t> idx_mapping;   // [entries]
  Span<const int32_t> num_computed;  // [max_reqs]: the tokens whose state is committed
  Span<const uint32_t> scratch;      // [max_reqs * window, lane_count]
  int32_t window;
  int32_t lane_count;
  Span<uint32_t> state;  // [max_reqs, lane_count]
  PPSPEC_HD void row(int64_t r) const {
    const int32_t req = idx_mapping[r];
    if (req < 0) return;
    const int32_t n = num_computed[req];
    if (n <= 0) return;
    const int64_t from = (static_cast<int64_t>(req) * window + (n - 1) % window) * lane_count;
    for (int32_t jl = 0; jl < lane_count; ++jl) state[static_cast<int64_t>(req) * lane_count + jl] = scratch[from + jl];
  }
};

// A request admitted (new, or resumed after a preemption: recomputed) starts from a zero state.
struct RecurrentResetKernel {
  Span<const int32_t> idx;  // [admitted]
  int32_t lane_count;
  Span<uint32_t> state;  // [max_reqs, lane_count]
  PPSPEC_HD void row(int64_t r) const {
    for (int32_t jl = 0; jl < lane_count; ++jl) state[static_cast<int64_t>(idx[r]) * lane_count + jl] = 0;
  }
};

}  // namespace ppspec::kernels
