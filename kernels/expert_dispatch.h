// The drafter's MoE layer made expert-parallel across data-parallel replicas (vLLM's EP MoE with
// all-to-all dispatch and combine, as DeepEP's low-latency mode or pplx run it): expert e lives on
// replica e % dp. Each replica dispatches, to every replica, its rows' routing entries for the
// experts that replica owns (a fixed-size chunk per peer: every replica pads to the DP group's row
// count first), the owners compute their experts' outputs and send them back, and each replica sums
// what came back for its rows.
//
// Simplifications: what is dispatched is the routing (expert id and weight per top-k entry), not a
// hidden row, because the toy's experts are a scale per expert (kernels/drafter.h); partial outputs
// travel as exact fixed point (kernels/drafter.h kConfidenceOne), so that their sum is the same
// whatever the order the combine adds them in.
#pragma once

#include <cstdint>

#include "kernels/drafter.h"
#include "kernels/span.h"

namespace ppspec::kernels {

// One row per local row: its top-k entries into the chunk of every replica, each entry kept in the
// chunk of its expert's owner and -1 (no expert) in the others. send_* is [dp][rows][top].
struct EpDispatchPackKernel {
  int32_t rows;
  int32_t top;
  int32_t dp;
  Span<const int32_t> topk_ids;    // [rows, top]
  Span<const float> topk_weights;  // [rows, top]
  Span<int32_t> send_ids;
  Span<float> send_weights;
  PPSPEC_HD void row(int64_t i) const {
    for (int32_t p = 0; p < dp; ++p)
      for (int32_t j = 0; j < top; ++j) {
        const int32_t e = topk_ids[i * top + j];
        const bool owned = e >= 0 && e % dp == p;
        const int64_t at = (static_cast<int64_t>(p) * rows + i) * top + j;
        send_ids[at] = owned ? e : -1;
        send_weights[at] = owned ? topk_weights[i * top + j] : 0.0f;
      }
  }
};

// One row per received row (every replica's chunk, [dp][rows]): this replica's experts' output for
// it, as fixed point, into the chunk that goes back to the row's replica.
struct EpExpertsKernel {
  int32_t top;
  Span<const int32_t> recv_ids;    // [dp * rows, top]
  Span<const float> recv_weights;  // [dp * rows, top]
  Span<const float> expert_scale;  // [experts]; this replica's experts only are read
  Span<int32_t> partial;           // [dp * rows]
  PPSPEC_HD void row(int64_t i) const {
    float s = 0.0f;
    for (int32_t j = 0; j < top; ++j) {
      const int32_t e = recv_ids[i * top + j];
      if (e >= 0) s += recv_weights[i * top + j] * expert_scale[e];
    }
    partial[i] = static_cast<int32_t>(s * kConfidenceOne);
  }
};

// One row per local row: the sum of the owners' outputs that came back ([dp][rows]).
struct EpCombineKernel {
  int32_t rows;
  int32_t dp;
  Span<const int32_t> returned;  // [dp * rows]
  Span<float> confidence;        // [rows]
  PPSPEC_HD void row(int64_t i) const {
    int64_t sum = 0;
    for (int32_t p = 0; p < dp; ++p) sum += returned[static_cast<int64_t>(p) * rows + i];
    confidence[i] = static_cast<float>(sum) / kConfidenceOne;
  }
};

}  // namespace ppspec::kernels
