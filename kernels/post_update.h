// post_update (vLLM `_post_update_kernel`): adopts a step's sampling results into a rank's
// per-request tables. On the last stage it runs at the step itself; on earlier stages it is the
// deferred update of step T, run at T+pp from the feedback broadcast, which also carries the drafts.
// Rows whose idx_mapping is negative (freed since, or no sample) are skipped; the warmup launches it
// with idx -1 so that it is loaded with the serving specialization but writes nothing.
#pragma once

#include <cstdint>

#include "kernels/row.h"
#include "kernels/span.h"

namespace ppspec::kernels {

struct PostUpdateKernel {
  Span<const int32_t> idx_mapping;   // [rows] req-state index, or -1 to skip
  Span<const int64_t> sampled;       // [rows, K+1]
  Span<const int32_t> num_sampled;   // [rows]
  Span<const int32_t> num_rejected;  // [rows]
  Span<const int32_t> query_len;     // [rows] tokens the step scheduled (last stage: advance by it)
  Span<const int64_t> drafts;        // [rows, K] adopted drafts, or absent
  int32_t k;
  bool deferred;               // earlier stage: num_computed was advanced optimistically
  Span<int64_t> last_sampled;  // [max_reqs]
  Span<int32_t> num_computed;  // [max_reqs]
  Span<int32_t> total_len;     // [max_reqs]
  Span<int64_t> draft_tokens;  // [max_reqs, K]
  PPSPEC_HD void row(int64_t r) const {
    const int32_t req = idx_mapping[r];
    if (req < 0) return;
    const int32_t n = num_sampled[r];
    if (n > 0) last_sampled[req] = sampled[r * (k + 1) + n - 1];
    total_len[req] += n;
    num_computed[req] += deferred ? -num_rejected[r] : query_len[r] - num_rejected[r];
    if (drafts.present() && k > 0)
      for (int32_t j = 0; j < k; ++j) draft_tokens[static_cast<int64_t>(req) * k + j] = drafts[r * k + j];
  }
};

// The deferred specialization (earlier stages, at T+pp) as a kernel of its own: vLLM's Triton
// post_update compiles one module per specialization, so a stage that never launched this one still
// has a module to load at its first launch (what warmup_pp_decode_update is for). A distinct type is
// a distinct CUDA function, in a module of its own (kernels/CMakeLists.txt: one module per kernel).
struct DeferredPostUpdateKernel : PostUpdateKernel {};

}  // namespace ppspec::kernels
