// The single-payload feedback wire format (DESIGN §6.2): per batch row, [K+1] sampled tokens, [K]
// drafts, num_sampled, num_rejected, all i64 in one [N, 2K+3] tensor. The last stage packs it after
// propose(); earlier stages unpack it into the three-message buffers their deferred update reads.
#pragma once

#include <cstdint>

#include "kernels/row.h"
#include "kernels/span.h"

namespace ppspec::kernels {

PPSPEC_HD inline int64_t payload_width(int32_t k) { return 2 * static_cast<int64_t>(k) + 3; }

struct PackPayloadKernel {
  int32_t rows;  // N: counts holds num_sampled [N], then num_rejected [N]
  int32_t k;
  bool with_drafts;             // false: the step proposed nothing, the draft columns are 0
  Span<const int64_t> sampled;  // [N, K+1]
  Span<const int32_t> counts;   // [2N]
  Span<const int64_t> drafts;   // [N, K]
  Span<int64_t> payload;        // [N, 2K+3]
  PPSPEC_HD void row(int64_t r) const {
    const int64_t w = payload_width(k);
    for (int32_t j = 0; j <= k; ++j) payload[r * w + j] = sampled[r * (k + 1) + j];
    for (int32_t j = 0; j < k; ++j) payload[r * w + k + 1 + j] = with_drafts ? drafts[r * k + j] : 0;
    payload[r * w + 2 * k + 1] = counts[r];
    payload[r * w + 2 * k + 2] = counts[rows + r];
  }
};

struct UnpackPayloadKernel {
  int32_t rows;
  int32_t k;
  Span<const int64_t> payload;  // [N, 2K+3]
  Span<int64_t> sampled;        // [N, K+1]
  Span<int32_t> counts;         // [2N]
  Span<int64_t> drafts;         // [N, K]
  PPSPEC_HD void row(int64_t r) const {
    const int64_t w = payload_width(k);
    for (int32_t j = 0; j <= k; ++j) sampled[r * (k + 1) + j] = payload[r * w + j];
    for (int32_t j = 0; j < k; ++j) drafts[r * k + j] = payload[r * w + k + 1 + j];
    counts[r] = static_cast<int32_t>(payload[r * w + 2 * k + 1]);
    counts[rows + r] = static_cast<int32_t>(payload[r * w + 2 * k + 2]);
  }
};

}  // namespace ppspec::kernels
