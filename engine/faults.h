// Historical bugs put back (DESIGN §6.6); all off by default. Each restores the code path the bug
// lived in (scenarios/regressions/<fault>.toml shows the verdict it earns). kFaultSwitches is the
// one list of them: the scenario loader and `ppspec fuzz --faults` use it, and the scripts
// (scripts/dev/fuzz_table.py, libfuzzer/make_seed_corpus.sh) read the names from this file.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace ppspec::engine {

struct Faults {
  bool stale_drafts = false;
  bool double_post_drafts = false;
  bool lazy_post_update = false;
  bool warmup_feedback = false;
  bool narrow_sampled_width = false;
  bool uncleared_padding = false;
  bool router_ignores_padding = false;
  bool alias_target_embed = false;
  // vLLM #55745: the batch's drafts are gathered for the relay on the side stream, after it waits
  // for the main stream, but nothing makes the next step's main-stream writes wait for the gather.
  bool unordered_draft_gather = false;
  // SGLang #33758: the length cap is tested before stop tokens, for the step's whole accepted run
  // (engine/finish_rules.h).
  bool cap_before_stop = false;
  // vLLM #28558: under the priority policy a victim already scheduled this step is preempted, and
  // its row (its scheduled draft tokens) stays in the step.
  bool preempt_keeps_spec_tokens = false;
  // vLLM #49620: a request preempted while a step of it is in flight gives its blocks back at once,
  // and the step's late output is adopted by request id.
  bool late_output_after_preempt = false;
  // vLLM #16370: blocks are reserved for a step's tokens but not for the drafter's K lookahead
  // positions past them.
  bool no_draft_lookahead_slots = false;
  // SGLang #29405: an abort is looked for only in the current micro-batch slot and the previous
  // step's batch, not in the other batches in flight.
  bool abort_scan_current_batch = false;
  // vLLM #53402 (its second defect): pp + 1 batches in flight with the earlier stages' ring of pending
  // receives sized for pp; a receiver's sample_tokens(T) runs once it holds the lookahead batch T + 1
  // and posts from that batch, so its feedback receives run one step behind the last stage's sends.
  bool lookahead_past_ring = false;
  // vLLM #38726: the feedback gate posts the sampled-token broadcast (and its receives) for a step
  // whose requests are all non-final prefill chunks, whose samples are discarded: the earlier stages
  // wait for a collective no row needs (an all-false mask), and chunks stop flowing through them.
  bool feedback_for_nonfinal_chunks = false;
  // vLLM #11186: a prefill wholly in the prefix cache is hit whole and only its last token is
  // recomputed, so that token's KV is stored into the last hit block, a block shared through the
  // cache (vLLM now caps the hit at num_tokens - 1 and recomputes that whole block, #17999).
  bool full_prefix_hit = false;
  // vLLM #56831: the adaptive DSpark budget is derived from each rank's own confidence state; the
  // TP ranks of the last stage pick budgets apart, draft blocks of different sizes, and lay out
  // their confidence all-reduce differently (the fix: rank 0 decides and broadcasts).
  bool local_adaptive_budget = false;
  // SGLang #40001 (its first defect; vLLM #44697 is the same for num_accepted_tokens): only the last
  // PP stage rolls a recurrent layer's state back to the accepted length; earlier stages keep the
  // state after every row of the verification block (K + 1), rejected drafts included.
  bool rollback_last_stage_only = false;
  // vLLM #36013: the step's accepted counts are copied to pinned host memory with a non-blocking
  // copy, and the next step's execute_model reads them without synchronising on the copy's event.
  bool pinned_read_without_sync = false;
  // vLLM #50514 (the defect its final design avoids): the EAGLE taps of the stage right before the
  // last go straight to the last stage as their own transfer, like the farther stages' taps, on the
  // pair that already carries the hidden-state hand-off; posted in a different order on the two
  // sides, the untagged transfers cross-match (engine/eagle_taps.h).
  bool untagged_aux_relay = false;
  // vLLM #26217 (and #26086): the drafter's dummy run on an idle data-parallel replica does one
  // forward where propose() does one per draft token (EAGLE: K), so the collectives the replicas
  // share (each forward's DP token-count all-reduce and its MoE's expert-parallel all-to-alls) drift
  // between the busy replicas and the idle one (engine/data_parallel.h).
  bool dummy_run_one_forward = false;
  // vLLM #35294: an idle replica's dummy batch runs only the target model, not the speculator, so
  // the busy replicas' drafter collectives have no counterpart.
  bool dummy_run_skips_drafter = false;
  // vLLM #44151 (fixed by #46694's get_block_ids_for_computed_tokens): a disaggregated prefill
  // instance exports every block its finished request holds, the drafter's lookahead reservation
  // included; the decode instance pairs its prompt blocks with the list's tail, shifted by one.
  bool prefill_exports_lookahead = false;
  // vllm-ascend #15900: a decode rank pairs a prefill stage's per-stage cache tensors with its own
  // by position, so the stage's first layer goes into the rank's first layer.
  bool stage_caches_paired_whole = false;
  // vLLM #21570: the prefill instance frees a finished request's blocks before the decode instance
  // read them (its timeout expired while the decode side queued the request); the pull reads
  // whatever the blocks hold by then.
  bool prefill_frees_before_read = false;
  // vLLM #45880 (the count its push mode multiplies by the producer's pp): the decode instance
  // admits a request once the ranks of its first stage reported their pulls, not every stage's.
  bool kv_ready_one_stage = false;
  // vLLM #43366 / the RBLN fork's PP-aware NIXL PR (before them): a decode rank connects to every
  // prefill stage, also those that hold none of its layers, and asks each for its own layers: a
  // stage that does not hold them sends what its staging buffer holds, written over the right KV.
  bool connect_all_stages = false;
  // vLLM #56952 (the K3 DSpark draft's spec without its model_version): the drafter's non-causal
  // MLA layers merge into the target's KV-cache group, raising its TRITON_MLA reorder threshold to
  // 1 + K; the target's causal verification blocks go to the one-row-per-request decode path
  // (vLLM #51848).
  bool draft_shares_target_kv_group = false;
  // vLLM before #32255 (SGLang #35049 likewise): an abort of a decode-side request whose KV is still
  // being pulled (WAITING_FOR_REMOTE_KVS) frees its blocks at once, while the transfer still
  // writes into them; the next request given those blocks gets the aborted request's KV.
  bool abort_frees_loading_blocks = false;
  // SGLang before #3060's token-id sync (vLLM #31154 for n-gram drafts): every TP rank of the last
  // stage samples on its own and keeps its own tokens, trusting that the same logits give the same
  // sample; a sampling stream that is the rank's own (here: seeded with its TP rank folded in) gives
  // the ranks of a temperature request different tokens and different accepted counts.
  bool rank_local_sampling = false;
  // tt-xla's AscendScheduler (tenstorrent, the vLLM plugin's chunked prefill, fixed in tt-xla
  // #5664): a step's in-flight mark is cleared at its return only for requests past their prefill;
  // a request whose step was a non-final prefill chunk keeps the mark, so the schedule passes it
  // over as in flight for ever while the engine goes on issuing steps (empty once nothing else runs).
  bool partial_prefill_stays_in_flight = false;
  // vLLM #36151 (fixed by PR #36731): a model's layer loop enumerates its stage's layers from 0 and
  // compares that index with the global EAGLE-3 aux layers, so a later stage fills its taps from the
  // layers whose index within it is a tapped layer's (engine/eagle_taps.cc).
  bool tap_local_layer_index = false;
  // vLLM #47616: a stop string completed inside an accepted run cuts the text, not the token ids:
  // the tokens sampled after it in the same step are returned (engine/stop_strings.h).
  bool stop_string_keeps_tokens = false;
  // vLLM #49391: of the stop strings found in one update's new text, the first listed wins, not
  // the one that completes earliest.
  bool stop_string_first_listed = false;
  // SGLang #23802: stop strings are looked for only in the text of the last (longest stop string
  // + 1) tokens, so one completed early in a longer accepted run is missed.
  bool stop_string_tail_window = false;
  // vLLM #24527 (tokenspeed #376 the same): with pin_memory, a step's inputs are written into the
  // reused pinned buffers with no synchronisation on the previous step's copies from them.
  bool input_prep_without_sync = false;
  // vLLM #25279: the synchronisation on the previous step's copies comes after the request tables'
  // update (_update_states), which already rewrote the pinned block table and request rows.
  bool input_prep_sync_after_states = false;
};

// A fault's name in a scenario's [faults] table, and its switch.
struct FaultSwitch {
  std::string_view name;
  bool Faults::*field;
};

inline constexpr std::array kFaultSwitches{
    FaultSwitch{"stale_drafts", &Faults::stale_drafts},
    FaultSwitch{"double_post_drafts", &Faults::double_post_drafts},
    FaultSwitch{"lazy_post_update", &Faults::lazy_post_update},
    FaultSwitch{"warmup_feedback", &Faults::warmup_feedback},
    FaultSwitch{"narrow_sampled_width", &Faults::narrow_sampled_width},
    FaultSwitch{"uncleared_padding", &Faults::uncleared_padding},
    FaultSwitch{"router_ignores_padding", &Faults::router_ignores_padding},
    FaultSwitch{"alias_target_embed", &Faults::alias_target_embed},
    FaultSwitch{"unordered_draft_gather", &Faults::unordered_draft_gather},
    FaultSwitch{"cap_before_stop", &Faults::cap_before_stop},
    FaultSwitch{"preempt_keeps_spec_tokens", &Faults::preempt_keeps_spec_tokens},
    FaultSwitch{"late_output_after_preempt", &Faults::late_output_after_preempt},
    FaultSwitch{"no_draft_lookahead_slots", &Faults::no_draft_lookahead_slots},
    FaultSwitch{"abort_scan_current_batch", &Faults::abort_scan_current_batch},
    FaultSwitch{"lookahead_past_ring", &Faults::lookahead_past_ring},
    FaultSwitch{"feedback_for_nonfinal_chunks", &Faults::feedback_for_nonfinal_chunks},
    FaultSwitch{"full_prefix_hit", &Faults::full_prefix_hit},
    FaultSwitch{"local_adaptive_budget", &Faults::local_adaptive_budget},
    FaultSwitch{"rollback_last_stage_only", &Faults::rollback_last_stage_only},
    FaultSwitch{"pinned_read_without_sync", &Faults::pinned_read_without_sync},
    FaultSwitch{"untagged_aux_relay", &Faults::untagged_aux_relay},
    FaultSwitch{"dummy_run_one_forward", &Faults::dummy_run_one_forward},
    FaultSwitch{"dummy_run_skips_drafter", &Faults::dummy_run_skips_drafter},
    FaultSwitch{"prefill_exports_lookahead", &Faults::prefill_exports_lookahead},
    FaultSwitch{"stage_caches_paired_whole", &Faults::stage_caches_paired_whole},
    FaultSwitch{"prefill_frees_before_read", &Faults::prefill_frees_before_read},
    FaultSwitch{"kv_ready_one_stage", &Faults::kv_ready_one_stage},
    FaultSwitch{"connect_all_stages", &Faults::connect_all_stages},
    FaultSwitch{"draft_shares_target_kv_group", &Faults::draft_shares_target_kv_group},
    FaultSwitch{"abort_frees_loading_blocks", &Faults::abort_frees_loading_blocks},
    FaultSwitch{"rank_local_sampling", &Faults::rank_local_sampling},
    FaultSwitch{"partial_prefill_stays_in_flight", &Faults::partial_prefill_stays_in_flight},
    FaultSwitch{"tap_local_layer_index", &Faults::tap_local_layer_index},
    FaultSwitch{"stop_string_keeps_tokens", &Faults::stop_string_keeps_tokens},
    FaultSwitch{"stop_string_first_listed", &Faults::stop_string_first_listed},
    FaultSwitch{"stop_string_tail_window", &Faults::stop_string_tail_window},
    FaultSwitch{"input_prep_without_sync", &Faults::input_prep_without_sync},
    FaultSwitch{"input_prep_sync_after_states", &Faults::input_prep_sync_after_states},
};
// A switch added to Faults but not to the table could be set by no scenario.
static_assert(sizeof(Faults) == kFaultSwitches.size() * sizeof(bool),
              "every field of Faults needs its row in kFaultSwitches");

// The names, in the table's order, joined by ", ".
inline std::string fault_names() {
  std::string out;
  for (const FaultSwitch& f : kFaultSwitches) {
    if (!out.empty()) out += ", ";
    out += f.name;
  }
  return out;
}

inline bool is_fault(std::string_view name) {
  for (const FaultSwitch& f : kFaultSwitches)
    if (f.name == name) return true;
  return false;
}

}  // namespace ppspec::engine
