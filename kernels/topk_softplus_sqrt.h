// The DeepSeek-V4 top-k router (vLLM `topk_softplus_sqrt`, "sqrtsoftplus" scoring):
// scores = sqrt(softplus(gating)); choose the top k of scores + correction bias; weights are the
// chosen scores, renormalised and scaled. Padded rows route to no expert: ids -1, weights 0, and
// their gating values are not read at all (NaN or stale padding must not matter, #56598).
// softplus needs exp and log1p, the one place where CPU and GPU may differ in the last ulp; the
// toy model's tokens never depend on it.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/row.h"
#include "kernels/span.h"

namespace ppspec::kernels {

inline constexpr int kMaxExperts = 64;

PPSPEC_HD inline float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

struct TopkSoftplusSqrtKernel {
  Span<const float> gating;     // [rows, experts]
  Span<const float> bias;       // [experts] (e_score_correction_bias), or absent
  Span<const bool> is_padding;  // [rows], or absent
  int32_t experts;
  int32_t k;
  bool renormalize = true;
  float scale = 1.0f;         // routed_scaling_factor
  bool honor_padding = true;  // the fault `router_ignores_padding` turns this off
  Span<int32_t> topk_ids;     // [rows, k]
  Span<float> topk_weights;   // [rows, k]

  PPSPEC_HD void row(int64_t i) const {
    const Span<int32_t> ids = topk_ids.sub(i * k, k);
    const Span<float> w = topk_weights.sub(i * k, k);
    if (honor_padding && is_padding.present() && is_padding[i]) {
      for (int32_t j = 0; j < k; ++j) {
        ids[j] = -1;
        w[j] = 0.0f;
      }
      return;
    }
    float scores[kMaxExperts];
    bool taken[kMaxExperts];
    for (int32_t e = 0; e < experts; ++e) {
      scores[e] = sqrtf(softplus(gating[i * experts + e]));
      taken[e] = false;
    }
    float sum = 0.0f;
    for (int32_t j = 0; j < k; ++j) {
      int32_t best = -1;
      float best_choice = 0.0f;
      for (int32_t e = 0; e < experts; ++e) {
        if (taken[e]) continue;
        const float choice = scores[e] + (bias.present() ? bias[e] : 0.0f);
        if (best < 0 || choice > best_choice) {  // ties: the lower expert wins
          best = e;
          best_choice = choice;
        }
      }
      taken[best] = true;
      ids[j] = best;
      w[j] = scores[best];
      sum += w[j];
    }
    for (int32_t j = 0; j < k; ++j) w[j] = (renormalize && sum > 0.0f ? w[j] / sum : w[j]) * scale;
  }
};

}  // namespace ppspec::kernels
