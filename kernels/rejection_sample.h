// Rejection sampling of draft tokens against the target (vLLM RejectionSampler semantics):
// greedy: accept the longest prefix of drafts equal to the target's argmax, then emit the target's
// token; with temperature: accept draft d with probability p(d) (the drafter is greedy: q = δ_d),
// on rejection sample the residual (p without d), after all K accept sample a bonus from p.
// Distributions are integer weights and uniforms are seeded integers keyed by (request seed,
// output index), so results are exact and the same whatever the batch, step or topology.
#pragma once

#include <cstdint>

#include "kernels/row.h"
#include "kernels/span.h"
#include "kernels/toy_model.h"

namespace ppspec::kernels {

inline constexpr uint32_t kGreedyWeight = 4096;
inline constexpr uint32_t kUniformBits = 20;

// The target's weight of token v at a row with head hash h and greedy token `greedy`.
PPSPEC_HD inline uint32_t target_weight(uint32_t h, int64_t greedy, int64_t v, uint32_t spread) {
  if (v == greedy) return kGreedyWeight;
  return 1U + mix32(h ^ (static_cast<uint32_t>(v) * 0x9E3779B9U)) % spread;
}

PPSPEC_HD inline uint64_t uniform(int64_t seed, int64_t out_index, uint32_t purpose) {
  return mix64(static_cast<uint64_t>(seed) * 0x100000001B3ULL ^
               static_cast<uint64_t>(out_index) * 0x9E3779B97F4A7C15ULL ^ purpose);
}

// Samples from the target weights, excluding `skip` (or none with skip = -1).
PPSPEC_HD inline int64_t sample_target(uint32_t h, int64_t greedy, uint32_t spread, int32_t vocab, int64_t skip,
                                       uint64_t u) {
  uint64_t total = 0;
  for (int64_t v = 0; v < vocab; ++v)
    if (v != skip) total += target_weight(h, greedy, v, spread);
  uint64_t pick = u % total;
  for (int64_t v = 0; v < vocab; ++v) {
    if (v == skip) continue;
    const uint32_t w = target_weight(h, greedy, v, spread);
    if (pick < w) return v;
    pick -= w;
  }
  return vocab - 1;
}

struct RejectionSampleKernel {
  Span<const int32_t> logit_start;  // [reqs] first row with logits
  Span<const int32_t> num_logits;   // [reqs] 0: no sample (non-final prefill chunk); 1 + drafts otherwise
  Span<const int32_t> input_ids;    // [rows] the drafts follow the row of the bonus token
  Span<const int64_t> greedy;       // [rows]
  Span<const uint32_t> h;           // [rows] head hash (target distribution seed)
  Span<const int64_t> seeds;        // [reqs] request seed
  Span<const int64_t> out_index;    // [reqs] tokens the request has produced so far
  Span<const uint32_t> spread;      // [reqs] 0: greedy; else temperature spread
  int32_t vocab;
  int32_t width;               // K + 1
  Span<int64_t> sampled;       // [reqs, width] padded with -1
  Span<int32_t> num_sampled;   // [reqs]
  Span<int32_t> num_rejected;  // [reqs]
  PPSPEC_HD void row(int64_t r) const {
    const Span<int64_t> out = sampled.sub(r * width, width);
    for (int32_t k = 0; k < width; ++k) out[k] = -1;
    const int32_t n = num_logits[r];
    if (n <= 0) {
      num_sampled[r] = 0;
      num_rejected[r] = 0;
      return;
    }
    const int32_t first = logit_start[r];
    int32_t emitted = 0;
    for (int32_t i = 0; i < n; ++i) {
      const int64_t row = first + i;
      const int64_t j = out_index[r] + i;  // output index of this token
      const bool has_draft = i + 1 < n;
      const int64_t draft = has_draft ? input_ids[row + 1] : -1;
      int64_t tok;
      bool accepted;
      if (spread[r] == 0) {
        tok = greedy[row];
        accepted = has_draft && draft == tok;
      } else {
        // Read once, not once per token of the vocabulary: each view access is bounds-checked
        // (and, under race detection, checked against what the item has recorded).
        const uint32_t row_h = h[row];
        const int64_t row_greedy = greedy[row];
        const uint32_t row_spread = spread[r];
        if (has_draft) {
          uint64_t total = 0;
          for (int64_t v = 0; v < vocab; ++v) total += target_weight(row_h, row_greedy, v, row_spread);
          const uint64_t u = uniform(seeds[r], j, 0) & ((1ULL << kUniformBits) - 1);
          accepted = u * total < static_cast<uint64_t>(target_weight(row_h, row_greedy, draft, row_spread))
                                     << kUniformBits;
          tok = accepted ? draft : sample_target(row_h, row_greedy, row_spread, vocab, draft, uniform(seeds[r], j, 1));
        } else {
          accepted = false;
          tok = sample_target(row_h, row_greedy, row_spread, vocab, -1, uniform(seeds[r], j, 2));
        }
      }
      out[emitted++] = tok;
      if (!accepted) break;
    }
    num_sampled[r] = emitted;
    num_rejected[r] = n - emitted;
  }
};

}  // namespace ppspec::kernels
