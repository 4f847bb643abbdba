#include "verify/monitors/attention_route.h"

#include <fmt/format.h>

#include "core/finding_kinds.h"
#include "core/plural.h"
#include "core/probes.h"

namespace ppspec::verify {

namespace {

// The first decode-path request whose query has more than one row; -1: none.
int64_t first_multi_row(const core::AttentionSplitProbe& split) {
  for (size_t i = 0; i < split.request_count(); ++i)
    if (split.requests[i * core::AttentionSplitProbe::kRequestFields + 1] > 1) return static_cast<int64_t>(i);
  return -1;
}

// The programs that read entries past the batch's requests, in words ("" when none).
std::string past_the_batch(const core::AttentionSplitProbe& split) {
  const int64_t first = split.table_rows;
  const int64_t last = split.decode_rows - 1;
  if (last < first) return "";
  if (last == first) return fmt::format(", and program {} reads past the batch", first);
  return fmt::format(", and programs {} to {} read past the batch", first, last);
}

}  // namespace

void AttentionRoute::on_event(const core::Event& e) {
  if (reported(core::FindingKind::attention_route) || e.kind != core::EventKind::attention_split) return;
  const auto split = core::AttentionSplitProbe::decode(e);
  const int64_t at = first_multi_row(split);
  if (at < 0 && split.decode_rows == split.table_rows) return;
  const size_t f0 = static_cast<size_t>(at < 0 ? 0 : at) * core::AttentionSplitProbe::kRequestFields;
  const int64_t id = split.requests[f0];
  const int64_t len = split.requests[f0 + 1];
  core::Finding f = finding_at(
      e, core::Verdict::kv_violation, core::FindingKind::attention_route,
      fmt::format("rank{} (stage {}) sent request {}'s {} query rows to TRITON_MLA's decode path, which reads one "
                  "block-table row and one sequence length per request: its causal kernel launches {} for {}, "
                  "program i reading request i's table row and length, so rows past a request's first read another "
                  "request's KV{}",
                  e.rank, facts_.stage_of(e.rank), id, len, core::count_of(split.decode_rows, "program"),
                  core::count_of(split.table_rows, "request"), past_the_batch(split)));
  f.sites.push_back(core::Site{e.rank, fmt::format("rank{}.main", e.rank), "", -1,
                               fmt::format("mla_decode at engine step {}: {} query rows for {} requests", e.step,
                                           split.decode_rows, split.table_rows),
                               ""});
  f.details.push_back(fmt::format(
      "the metadata builder split the batch at a reorder threshold of {}: every leading request of at most {} query "
      "rows went to the decode path; a causal KV-cache group's TRITON_MLA threshold is 1 (query_len_support "
      "SINGLE_ONLY), and forward_mqa flattens a multi-row block only for a non-causal layer",
      split.reorder_threshold, split.reorder_threshold));
  const bool dspark = facts_.k > 0 && facts_.eagle_taps.empty();
  if (dspark && split.reorder_threshold == 1 + facts_.k)
    f.details.push_back(fmt::format(
        "a threshold of 1 + K = {} is the DSpark draft's: its non-causal layers' spec merged into the target's "
        "KV-cache group (MLAAttentionSpec.merge ORs non_causal_multi_token_decode); vLLM #56952 keeps the draft's "
        "spec apart by its model_version, and vLLM #51848 is this read's illegal memory access",
        split.reorder_threshold));
  if (dspark && split.reorder_threshold == 1 + facts_.k)
    f.details.push_back(
        "fix: keep the draft's KV-cache spec out of the target's group (vLLM #56952: the draft's MLA spec carries "
        "its own model_version, and MLAAttentionSpec.merge refuses specs of different versions)");
  report(std::move(f));
}

}  // namespace ppspec::verify
