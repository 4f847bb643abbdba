// What a finding is about, finer than its verdict: `gate-disagreement` and `collective-mismatch`
// are both `fifo-misalignment`. A closed set: every kind ppspec reports or notes is here, named in
// reports, traces and `[expect] kind` by its string (to_string); core/finding_kinds.h says which
// verdict each decides, and core/hazard_kinds.h which are hazards.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/named_formatter.h"

namespace ppspec::core {

enum class FindingKind : uint8_t {
  none,  // no finding (a default-constructed one: never reported)
  collective_mismatch,
  p2p_mismatch,
  gate_disagreement,
  gate_rows_disagreement,
  decision_disagreement,
  unmatched,
  cycle,
  stuck,
  module_load_in_flight,
  malloc_in_flight,
  device_sync_in_flight,
  cross_communicator_order,
  feedback_during_warmup,
  module_load_after_warmup,
  draft_freshness,
  draft_relay,
  padding,
  embedding,
  golden,
  pp_invariance,
  stage_output,
  greedy_sample,
  padding_invariance,
  disaggregation_invariance,
  sim_gpu,
  drafter_oracle,
  tap_placement,
  acceptance,
  finish_rule,
  stream_race,
  pinned_host_race,
  stage_position,
  stage_token,
  stage_drafts,
  stage_adoption,
  sample_disagreement,
  feedback_dropped,
  scheduling_cadence,
  kv_ownership,
  kv_out_of_table,
  kv_transfer,
  attention_route,
  blocks_leaked,
  request_leaked,
  abort_ignored,
  pipeline_bubble,
  replay_diverged,
  step_limit,
  time_limit,
  watchdog,
  starvation,
  stalled,
  missing_dump,
  unchecked_rank,
  never_launched,
  incomplete_trace,
  connect_in_capture,
  unmatched_self_p2p,
  nccl_invalid_usage,
  capture_conflict,
  capture_unsafe_call,
  device_fault,
  p2p_data_lost,
  ring_buffer_wrapped,
  p2p_not_aligned,
  p2p_aligned_by_pattern,
  no_progress_recorded,
  groups_from_entries,
  execution_model,
  in_flight,
  torn_line,
  calls_only,
  recorded_verdict,
};

std::string_view to_string(FindingKind k);
std::optional<FindingKind> parse_finding_kind(std::string_view s);

}  // namespace ppspec::core

// A kind formats as its name.
template <>
struct fmt::formatter<ppspec::core::FindingKind> : ppspec::core::NamedFormatter<ppspec::core::FindingKind> {};
