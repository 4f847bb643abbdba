// The EAGLE drafter (toy; vLLM's EagleProposer with EAGLE-3's tapped hidden states). The target
// exposes the outputs of a few of its layers ("taps", aux hidden states); the drafter fuses them at
// each drafted request's anchor row (its last accepted token) into its own hidden state, then runs K
// autoregressive forwards, each drafting one token from the token before it.
//
// A tap of layer l at a row is two words: the row's context lane (written by TP rank 0 only, so
// that the TP all-reduce of the taps leaves it whole) and a digest of the layer's output lanes
// (each TP rank digests its own lanes; the all-reduce sums them). Fused:
//   h = c_0 + M * sum_{l>0} (c_l - c_0)  (every tap carries the same context lane: h is it, and a tap
//                                          that carries another is seen in every draft)
//   d = sum_l mix(digest_l + l * G)      (the fused deep state)
// and each forward: h += E_draft[tok] * R^pos; d = mix(d ^ E_draft[tok]); the draft is the context
// lane's token of h, except when d steers it (one forward in 16), so a wrong or misplaced tap
// changes the drafts while a right one keeps the acceptance near the DSpark drafter's alpha.
// Simplification: the toy drafter has no layers of its own beyond this recurrence and the MoE
// layer each forward runs (engine/drafter.cc); its KV cache is the DSpark drafter's context lane.
#pragma once

#include <cstdint>

#include "kernels/row.h"
#include "kernels/span.h"
#include "kernels/toy_model.h"

namespace ppspec::kernels {

inline constexpr int32_t kMaxEagleTaps = 4;
inline constexpr int32_t kTapWords = 2;  // per row: the context lane, the lanes' digest

struct EagleState {
  uint32_t h;
  uint32_t d;
};

// The fused state from one row's taps (`words[t]`: tap t's two words).
PPSPEC_HD inline EagleState eagle_fuse(int32_t num_taps, const uint32_t (*words)[kTapWords]) {
  const uint32_t c0 = words[0][0];
  EagleState s{c0, 0U};
  for (int32_t t = 0; t < num_taps; ++t) {
    if (t > 0) s.h += (words[t][0] - c0) * 0x2545F491U;
    s.d += mix32(words[t][1] + static_cast<uint32_t>(t) * 0x9E3779B9U);
  }
  return s;
}

// One autoregressive forward: the draft after `tok` at `pos`.
PPSPEC_HD inline int64_t eagle_step(EagleState& s, int64_t tok, int64_t pos, Span<const uint32_t> draft_embed,
                                    uint32_t r, int32_t vocab) {
  const uint32_t e = draft_embed[tok];
  s.h += e * pow32(r, static_cast<uint64_t>(pos));
  s.d = mix32(s.d ^ e);
  const bool steered = (mix32(s.d + static_cast<uint32_t>(pos)) & 15U) == 0U;
  return ctx_token(steered ? s.h ^ s.d : s.h, vocab);
}

// After a tapped layer: this rank's part of the tap of every row (summed over TP afterwards).
struct TapKernel {
  Span<const int32_t> row_req;   // [rows]
  Span<const uint32_t> c;        // [rows] the context lane
  Span<const uint32_t> x;        // [rows, lane_count] the layer's output lanes
  Span<const uint32_t> weights;  // [D] the layer's tap weights
  int32_t lane_begin;
  int32_t lane_count;
  bool with_context;   // TP rank 0: the context lane is added once
  Span<uint32_t> tap;  // [rows, kTapWords]
  PPSPEC_HD void row(int64_t i) const {
    uint32_t digest = 0;
    const bool valid = row_req[i] >= 0;
    if (valid)
      for (int32_t jl = 0; jl < lane_count; ++jl) digest += x[i * lane_count + jl] * weights[lane_begin + jl];
    tap[i * kTapWords] = valid && with_context ? c[i] : 0U;
    tap[i * kTapWords + 1] = digest;
  }
};

// One forward of the drafter, one program per drafted request: the first fuses the taps at the
// anchor row and starts from the bonus token; every forward drafts column `pass`.
struct EagleStepKernel {
  int32_t pass;
  int32_t k;  // query rows per request: the bonus at r * k
  int32_t num_taps;
  Span<const uint32_t> taps[kMaxEagleTaps];  // each [target rows, kTapWords]
  Span<const int32_t> anchor_row;            // [num_reqs]
  Span<const int32_t> input_ids;             // [query rows]
  Span<const int64_t> positions;             // [query rows]
  Span<const uint32_t> draft_embed;          // [V]
  uint32_t r_pow;
  int32_t vocab;
  Span<uint32_t> state;  // [num_reqs, 2]: h, d
  Span<int64_t> cursor;  // [num_reqs, 2]: the token drafted from next, its position
  Span<int64_t> drafts;  // [num_reqs, k]
  PPSPEC_HD void row(int64_t r) const {
    EagleState s{};
    int64_t tok = 0;
    int64_t pos = 0;
    if (pass == 0) {
      const int64_t a = anchor_row[r];
      uint32_t words[kMaxEagleTaps][kTapWords] = {};
      for (int32_t t = 0; t < num_taps; ++t)
        for (int32_t w = 0; w < kTapWords; ++w) words[t][w] = taps[t][a * kTapWords + w];
      s = eagle_fuse(num_taps, words);
      tok = input_ids[r * k];
      pos = positions[r * k];
    } else {
      s = EagleState{state[r * 2], state[r * 2 + 1]};
      tok = cursor[r * 2];
      pos = cursor[r * 2 + 1];
    }
    tok = eagle_step(s, tok, pos, draft_embed, r_pow, vocab);
    drafts[r * k + pass] = tok;
    state[r * 2] = s.h;
    state[r * 2 + 1] = s.d;
    cursor[r * 2] = tok;
    cursor[r * 2 + 1] = pos + 1;
  }
};

}  // namespace ppspec::kernels
