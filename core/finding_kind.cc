#include "core/finding_kind.h"

#include "core/enum_names.h"

namespace ppspec::core {

namespace {

constexpr EnumNames<FindingKind, 74> kFindingKindNames{
    {{{"", FindingKind::none},
      {"collective-mismatch", FindingKind::collective_mismatch},
      {"p2p-mismatch", FindingKind::p2p_mismatch},
      {"gate-disagreement", FindingKind::gate_disagreement},
      {"gate-rows-disagreement", FindingKind::gate_rows_disagreement},
      {"decision-disagreement", FindingKind::decision_disagreement},
      {"unmatched", FindingKind::unmatched},
      {"cycle", FindingKind::cycle},
      {"stuck", FindingKind::stuck},
      {"module-load-in-flight", FindingKind::module_load_in_flight},
      {"malloc-in-flight", FindingKind::malloc_in_flight},
      {"device-sync-in-flight", FindingKind::device_sync_in_flight},
      {"cross-communicator-order", FindingKind::cross_communicator_order},
      {"feedback-during-warmup", FindingKind::feedback_during_warmup},
      {"module-load-after-warmup", FindingKind::module_load_after_warmup},
      {"draft-freshness", FindingKind::draft_freshness},
      {"draft-relay", FindingKind::draft_relay},
      {"padding", FindingKind::padding},
      {"embedding", FindingKind::embedding},
      {"golden", FindingKind::golden},
      {"pp-invariance", FindingKind::pp_invariance},
      {"stage-output", FindingKind::stage_output},
      {"greedy-sample", FindingKind::greedy_sample},
      {"padding-invariance", FindingKind::padding_invariance},
      {"disaggregation-invariance", FindingKind::disaggregation_invariance},
      {"sim-gpu", FindingKind::sim_gpu},
      {"drafter-oracle", FindingKind::drafter_oracle},
      {"tap-placement", FindingKind::tap_placement},
      {"acceptance", FindingKind::acceptance},
      {"finish-rule", FindingKind::finish_rule},
      {"stream-race", FindingKind::stream_race},
      {"pinned-host-race", FindingKind::pinned_host_race},
      {"stage-position", FindingKind::stage_position},
      {"stage-token", FindingKind::stage_token},
      {"stage-drafts", FindingKind::stage_drafts},
      {"stage-adoption", FindingKind::stage_adoption},
      {"sample-disagreement", FindingKind::sample_disagreement},
      {"feedback-dropped", FindingKind::feedback_dropped},
      {"scheduling-cadence", FindingKind::scheduling_cadence},
      {"kv-ownership", FindingKind::kv_ownership},
      {"kv-out-of-table", FindingKind::kv_out_of_table},
      {"kv-transfer", FindingKind::kv_transfer},
      {"attention-route", FindingKind::attention_route},
      {"blocks-leaked", FindingKind::blocks_leaked},
      {"request-leaked", FindingKind::request_leaked},
      {"abort-ignored", FindingKind::abort_ignored},
      {"pipeline-bubble", FindingKind::pipeline_bubble},
      {"replay-diverged", FindingKind::replay_diverged},
      {"step-limit", FindingKind::step_limit},
      {"time-limit", FindingKind::time_limit},
      {"watchdog", FindingKind::watchdog},
      {"starvation", FindingKind::starvation},
      {"stalled", FindingKind::stalled},
      {"missing-dump", FindingKind::missing_dump},
      {"unchecked-rank", FindingKind::unchecked_rank},
      {"never-launched", FindingKind::never_launched},
      {"incomplete-trace", FindingKind::incomplete_trace},
      {"connect-in-capture", FindingKind::connect_in_capture},
      {"unmatched-self-p2p", FindingKind::unmatched_self_p2p},
      {"nccl-invalid-usage", FindingKind::nccl_invalid_usage},
      {"capture-conflict", FindingKind::capture_conflict},
      {"capture-unsafe-call", FindingKind::capture_unsafe_call},
      {"device-fault", FindingKind::device_fault},
      {"p2p-data-lost", FindingKind::p2p_data_lost},
      {"ring-buffer-wrapped", FindingKind::ring_buffer_wrapped},
      {"p2p-not-aligned", FindingKind::p2p_not_aligned},
      {"p2p-aligned-by-pattern", FindingKind::p2p_aligned_by_pattern},
      {"no-progress-recorded", FindingKind::no_progress_recorded},
      {"groups-from-entries", FindingKind::groups_from_entries},
      {"execution-model", FindingKind::execution_model},
      {"in-flight", FindingKind::in_flight},
      {"torn-line", FindingKind::torn_line},
      {"calls-only", FindingKind::calls_only},
      {"recorded-verdict", FindingKind::recorded_verdict}}}};

}  // namespace

std::string_view to_string(FindingKind k) { return kFindingKindNames.name(k); }

std::optional<FindingKind> parse_finding_kind(std::string_view s) {
  if (s.empty()) return std::nullopt;  // `none` is no kind to ask for
  return kFindingKindNames.parse(s);
}

}  // namespace ppspec::core
