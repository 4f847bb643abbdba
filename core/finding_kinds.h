// The kinds of finding ppspec reports (core/finding_kind.h), each under the one verdict it decides,
// so that a scenario pins one with `[expect] kind` and the loader checks it against this table: a
// misspelt kind is an input error, not a run that can never meet its expectation. Hazard kinds
// (core/hazard_kinds.h) are listed here under `hazard` too. Notes (verdict pass: what a reader could
// not judge or assumed) are kinds of no verdict and are not here.
#pragma once

#include <array>

#include "core/finding_kind.h"
#include "core/hazard_kinds.h"
#include "core/verdict.h"

namespace ppspec::core {

struct FindingKindName {
  Verdict verdict;
  FindingKind kind;
};

inline constexpr std::array<FindingKindName, 62> kFindingKinds{{
    {Verdict::fifo_misalignment, FindingKind::collective_mismatch},
    {Verdict::fifo_misalignment, FindingKind::p2p_mismatch},
    {Verdict::fifo_misalignment, FindingKind::gate_disagreement},
    {Verdict::fifo_misalignment, FindingKind::decision_disagreement},
    {Verdict::fifo_misalignment, FindingKind::unmatched},
    {Verdict::deadlock, FindingKind::cycle},
    {Verdict::deadlock, FindingKind::stuck},
    {Verdict::hazard, FindingKind::module_load_in_flight},
    {Verdict::hazard, FindingKind::malloc_in_flight},
    {Verdict::hazard, FindingKind::device_sync_in_flight},
    {Verdict::hazard, FindingKind::cross_communicator_order},
    {Verdict::hazard, FindingKind::feedback_during_warmup},
    {Verdict::hazard, FindingKind::module_load_after_warmup},
    {Verdict::stale_draft, FindingKind::draft_freshness},
    {Verdict::stale_draft, FindingKind::draft_relay},
    {Verdict::padding_violation, FindingKind::padding},
    {Verdict::embedding_violation, FindingKind::embedding},
    {Verdict::output_divergence, FindingKind::golden},
    {Verdict::output_divergence, FindingKind::pp_invariance},
    {Verdict::output_divergence, FindingKind::stage_output},
    {Verdict::output_divergence, FindingKind::greedy_sample},
    {Verdict::output_divergence, FindingKind::padding_invariance},
    {Verdict::output_divergence, FindingKind::disaggregation_invariance},
    {Verdict::output_divergence, FindingKind::sim_gpu},
    {Verdict::output_divergence, FindingKind::drafter_oracle},
    {Verdict::output_divergence, FindingKind::tap_placement},
    {Verdict::output_divergence, FindingKind::acceptance},
    {Verdict::output_divergence, FindingKind::finish_rule},
    {Verdict::race, FindingKind::stream_race},
    {Verdict::race, FindingKind::pinned_host_race},
    {Verdict::stage_divergence, FindingKind::stage_position},
    {Verdict::stage_divergence, FindingKind::stage_token},
    {Verdict::stage_divergence, FindingKind::stage_drafts},
    {Verdict::stage_divergence, FindingKind::stage_adoption},
    {Verdict::stage_divergence, FindingKind::sample_disagreement},
    {Verdict::stage_divergence, FindingKind::gate_rows_disagreement},
    {Verdict::stage_divergence, FindingKind::feedback_dropped},
    {Verdict::stage_divergence, FindingKind::scheduling_cadence},
    {Verdict::kv_violation, FindingKind::kv_ownership},
    {Verdict::kv_violation, FindingKind::kv_out_of_table},
    {Verdict::kv_violation, FindingKind::kv_transfer},
    {Verdict::kv_violation, FindingKind::attention_route},
    {Verdict::leak, FindingKind::blocks_leaked},
    {Verdict::leak, FindingKind::request_leaked},
    {Verdict::leak, FindingKind::abort_ignored},
    {Verdict::pipeline_bubble, FindingKind::pipeline_bubble},
    {Verdict::nondeterminism, FindingKind::replay_diverged},
    {Verdict::step_limit, FindingKind::step_limit},
    {Verdict::step_limit, FindingKind::time_limit},
    {Verdict::hang, FindingKind::watchdog},
    {Verdict::hang, FindingKind::starvation},
    {Verdict::hang, FindingKind::stalled},
    {Verdict::hang, FindingKind::missing_dump},
    {Verdict::hazard, FindingKind::unchecked_rank},
    {Verdict::hang, FindingKind::never_launched},
    {Verdict::hazard, FindingKind::incomplete_trace},
    {Verdict::invalid_usage, FindingKind::connect_in_capture},
    {Verdict::invalid_usage, FindingKind::unmatched_self_p2p},
    {Verdict::invalid_usage, FindingKind::nccl_invalid_usage},
    {Verdict::invalid_usage, FindingKind::capture_conflict},
    {Verdict::invalid_usage, FindingKind::capture_unsafe_call},
    {Verdict::device_fault, FindingKind::device_fault},
}};

}  // namespace ppspec::core
