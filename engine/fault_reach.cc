#include "engine/fault_reach.h"

#include <algorithm>
#include <array>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <vector>

#include "core/assert.h"
#include "engine/checkpoint.h"

namespace ppspec::engine {
namespace {

// ---------------------------------------------------------------------------------------------
// The deployment conditions the faults' branches share. Each returns "" when it holds, else the
// clause that says why the path does not exist.

// The PP feedback path (PPHandler: the sampled tokens, counts and drafts broadcast from the last
// stage, the deferred update of the earlier stages, AcceptedReadback) is built only at pp > 1
// (Worker::run, Worker::Worker).
std::string reach_needs_pp(const EngineConfig& c, std::string_view why) {
  if (c.topology.pp >= 2) return "";
  return fmt::format("it needs pp >= 2: {}", why);
}

// The drafter exists only with K > 0 (Worker::Worker makes it on the last stage when k > 0).
std::string reach_needs_drafts(const EngineConfig& c, std::string_view why) {
  if (c.spec.k >= 1) return "";
  return fmt::format("it needs k >= 1: {}", why);
}

// The first unmet condition of `conditions`, or "" when all hold.
std::string reach_first(std::initializer_list<std::string> conditions) {
  for (const std::string& why : conditions)
    if (!why.empty()) return why;
  return "";
}

// Whether some step can run with padding rows (rows a graph or the DP group reads past the step's
// own): Worker::graph_size pads a step to the smallest capture size that holds it, and under DP
// Worker::rows_across_replicas / Drafter::forward_rows pad every replica to the group's largest.
// Every step has at least one row, so only a capture size of 2 or more ever pads (at K > 0 the
// sizes are multiples of K + 1, and one request's K draft queries always pad).
bool reach_pads(const EngineConfig& c) {
  const std::vector<int>& sizes = c.serving.capture_sizes;
  return c.topology.dp >= 2 || (!sizes.empty() && sizes.back() >= 2);
}

// ---------------------------------------------------------------------------------------------
// The PP feedback path (engine/pp_handler.cc, engine/model_runner.cc)

// PPHandler::relays_drafts: the drafts message, and the payload's drafts adopted in
// Worker::deferred_update, exist only under PP and with drafts.
std::string reach_stale_drafts(const EngineConfig& c, core::ModuleLoading) {
  return reach_first({reach_needs_pp(c, "the drafts are relayed to earlier stages only under pipeline parallelism"),
                      reach_needs_drafts(c, "without speculative decoding there are no drafts to relay")});
}

// Worker::relay_drafts posts broadcast_drafts a second time after a step whose speculator ran
// (drafted > 0), and returns at once without a PPHandler.
std::string reach_double_post_drafts(const EngineConfig& c, core::ModuleLoading) {
  return reach_first(
      {reach_needs_pp(c, "the drafts broadcast that is posted twice exists only under pipeline parallelism"),
       reach_needs_drafts(c, "the second post follows a step whose speculator proposed drafts")});
}

// Worker::warmup_decode_update loads post_update[deferred] on the stages before the last; the
// fault skips it, and Worker::deferred_update loads it while serving. SimDevice::ensure_loaded
// loads nothing after init under eager loading, so the late load exists only lazily or by JIT.
std::string reach_lazy_post_update(const EngineConfig& c, core::ModuleLoading loading) {
  if (std::string why = reach_needs_pp(c,
                                       "post_update's deferred specialization runs only on the stages before "
                                       "the last (Worker::deferred_update)");
      !why.empty())
    return why;
  if (loading != core::ModuleLoading::eager) return "";
  return "it needs lazy or jit module loading: eager loading loads every module at init, so no module is "
         "loaded while serving";
}

// Engine::warmup disables the feedback for its synthetic steps; Worker::run applies it only to a
// PPHandler (pp > 1), and with no synthetic step nothing runs between the disable and the enable.
std::string reach_warmup_feedback(const EngineConfig& c, core::ModuleLoading) {
  if (std::string why = reach_needs_pp(c,
                                       "the feedback that warmup leaves enabled exists only under pipeline "
                                       "parallelism");
      !why.empty())
    return why;
  if (c.serving.warmup_steps >= 1) return "";
  return "it needs warmup_steps >= 1: no synthetic warmup step runs while the feedback would be disabled";
}

// PPHandler::broadcast sends a plain-sampler step's sampled tokens [N, 1] instead of [N, K + 1]:
// the same width at K = 0, and the single payload returns before that message (its width is fixed).
std::string reach_narrow_sampled_width(const EngineConfig& c, core::ModuleLoading) {
  if (std::string why = reach_first(
          {reach_needs_pp(c, "the sampled tokens are broadcast to earlier stages only under pipeline parallelism"),
           reach_needs_drafts(c, "at K = 0 the padded width K + 1 is 1, the narrow width itself")});
      !why.empty())
    return why;
  if (c.spec.feedback == Feedback::three_message) return "";
  return "it needs the three-message feedback: the single payload has one width, [N, 2K + 3], whatever the step "
         "sampled (PPHandler::broadcast returns before the sampled message)";
}

// PPHandler::posted_mask posts an all-false mask for a step whose rows are all non-final prefill
// chunks. Without chunked prefill the scheduler schedules a prefill whole (Scheduler::schedule,
// admit_waiting). With it, a step without decode rows gives its first prefill row the whole budget,
// so a step of non-final chunks only needs a prefill longer than the budget; a prefill (a prompt,
// or a resumed request's prompt and output) is at most max_model_len - K - 1 tokens: prompts leave
// room for a verification block, and a request ends before one no longer fits.
std::string reach_feedback_for_nonfinal_chunks(const EngineConfig& c, core::ModuleLoading) {
  if (std::string why = reach_needs_pp(c, "the feedback gate posts collectives only under pipeline parallelism");
      !why.empty())
    return why;
  if (!c.serving.chunked_prefill)
    return "it needs chunked prefill: without it every prefill row is its prompt's final chunk and samples, so no "
           "step is all non-final chunks";
  const int longest_prefill = c.model.max_model_len - c.spec.k - 1;
  if (c.serving.max_num_batched_tokens < longest_prefill) return "";
  return fmt::format(
      "it needs max_num_batched_tokens below max_model_len - K - 1 = {}, the longest prefill (a resumed "
      "request's prompt and output): a step's first prefill row gets the whole budget, and every prefill fits it",
      longest_prefill);
}

// PPHandler::falls_behind: the receivers' ring is one step behind only with the lookahead batch
// (the handler arms the fault only when schedules_ahead(): pp + 1 batches in flight), where a
// receiver's sample_tokens(T) runs after execute_model(T + 1).
std::string reach_lookahead_past_ring(const EngineConfig& c, core::ModuleLoading) {
  if (std::string why = reach_needs_pp(c,
                                       "the ring of pending feedback receives exists only under pipeline "
                                       "parallelism");
      !why.empty())
    return why;
  if (c.schedules_ahead()) return "";
  return fmt::format(
      "it needs max_concurrent_batches = pp + 1 = {}: only async scheduling's lookahead batch runs "
      "a receiver's execute_model(T + 1) before its sample_tokens(T) (PPHandler::falls_behind)",
      c.topology.pp + 1);
}

// AcceptedReadback::wanted: the pinned copy of the accepted counts is made on the last stage's tp
// rank 0 with K > 0 and pp > 1 only (the simulator leaves pp = 1 out).
std::string reach_pinned_read_without_sync(const EngineConfig& c, core::ModuleLoading) {
  return reach_first({reach_needs_pp(c,
                                     "the accepted counts are copied to pinned host memory only under pipeline "
                                     "parallelism (AcceptedReadback::wanted leaves pp = 1 out)"),
                      reach_needs_drafts(c, "without drafts there are no accepted counts to copy")});
}

// Worker::deferred_update commits the recurrent state at the accepted length on the stages before
// the last; the fault skips it. It differs only where such a stage holds a recurrent layer
// (RecurrentState::commit walks the stage's own layers), and only with drafts to reject: at K = 0
// the state after the whole block is the accepted one.
std::string reach_rollback_last_stage_only(const EngineConfig& c, core::ModuleLoading) {
  if (std::string why =
          reach_first({reach_needs_pp(c, "only the stages before the last adopt the accepted length late"),
                       reach_needs_drafts(c, "a step's block is its one sampled token, so no draft is rolled back")});
      !why.empty())
    return why;
  const int last_first = stage_layers(c.model, c.topology.pp, c.topology.pp - 1).first;
  for (int l : c.model.recurrent_layers)
    if (l < last_first) return "";
  return fmt::format(
      "it needs a recurrent layer on a stage before the last (layers 0 to {}): only those stages "
      "roll their state back late, and the recurrent layers are [{}]",
      last_first - 1, fmt::join(c.model.recurrent_layers, ", "));
}

// ---------------------------------------------------------------------------------------------
// The drafter (engine/drafter.cc, engine/draft_budget.cc, engine/eagle_taps.cc)

// Drafter::embedding: under PP the drafter reads its own table; the fault reads the target's
// embed_tokens, loaded only on stage 0 (TargetModel::load_checkpoint). At pp = 1 the one stage
// holds the target's table loaded, and the drafter shares it by design.
std::string reach_alias_target_embed(const EngineConfig& c, core::ModuleLoading) {
  return reach_first({reach_needs_pp(c,
                                     "at pp = 1 the drafter shares the target's embedding by design, and the "
                                     "one stage holds it loaded"),
                      reach_needs_drafts(c, "the aliased table is the drafter's")});
}

// Drafter::propose gathers the batch's drafts on the side stream after every proposal, whatever pp.
std::string reach_unordered_draft_gather(const EngineConfig& c, core::ModuleLoading) {
  return reach_needs_drafts(c, "the gather is of the drafter's proposals");
}

// kernels::PrepareInputsKernel (StepInputs::prepare) and PrepareDflashInputsKernel
// (Drafter::prepare_inputs) leave the padding rows as they were.
std::string reach_uncleared_padding(const EngineConfig& c, core::ModuleLoading) {
  if (reach_pads(c)) return "";
  return "it needs padding rows: a capture size of 2 or more (a graph padded past a step's rows) or dp >= 2 (steps "
         "padded to the replicas' largest)";
}

// Drafter::route's router (TopkSoftplusSqrtKernel) routes the padding rows of the draft queries.
std::string reach_router_ignores_padding(const EngineConfig& c, core::ModuleLoading) {
  if (std::string why = reach_needs_drafts(c, "the router is the drafter's MoE layer"); !why.empty()) return why;
  if (reach_pads(c)) return "";
  return "it needs padded draft queries: CUDA graphs (capture_sizes) or dp >= 2";
}

// DraftBudget::decide skips tp rank 0's broadcast of the budget. The budget exists only with an
// adaptive budget (Worker::Worker), which picks among 1..K only at K >= 2, and the broadcast only
// at tp > 1 (Worker::tp is null at tp = 1).
std::string reach_local_adaptive_budget(const EngineConfig& c, core::ModuleLoading) {
  if (!c.spec.adaptive_budget) return "it needs adaptive_budget: a fixed K has no budget to decide";
  if (c.spec.k < 2) return "it needs k >= 2: an adaptive budget of 1 to K leaves no choice at K = 1";
  if (c.topology.tp >= 2) return "";
  return "it needs tp >= 2: a budget is decided apart only by the last stage's TP ranks, and with one there is "
         "nothing to broadcast (DraftBudget::decide)";
}

// EagleTaps::rides_activations: only the taps of stage pp - 2 ride the activation hand-off to the
// last stage; the fault sends them as a transfer of their own on that pair, posted before the
// hand-off by the sender and after it by the receiver (EagleTaps::exchange_far), so they
// cross-match. Farther stages' taps go their own way with or without the fault, and the last
// stage's need no transfer: the fault bites only if stage pp - 2 holds a tapped layer.
std::string reach_untagged_aux_relay(const EngineConfig& c, core::ModuleLoading) {
  if (!c.eagle()) return "it needs the EAGLE drafter (method = \"eagle\", k >= 1): only EAGLE taps target layers";
  if (std::string why = reach_needs_pp(c, "the taps are relayed between stages only under pipeline parallelism");
      !why.empty())
    return why;
  const LayerRange held = stage_layers(c.model, c.topology.pp, c.topology.pp - 2);
  const std::vector<int> taps = eagle_taps(c);
  for (int l : taps)
    if (l >= held.first && l < held.last) return "";
  return fmt::format(
      "it needs a tapped layer on stage pp - 2 = {} (layers {} to {}), the one whose taps ride the "
      "activation hand-off; the taps are layers [{}]",
      c.topology.pp - 2, held.first, held.last - 1, fmt::join(taps, ", "));
}

// ---------------------------------------------------------------------------------------------
// The front end's stop strings (engine/stop_strings.cc)

std::string reach_needs_stop_strings(const EngineConfig& c, size_t at_least) {
  if (c.workload.stop_strings.size() >= at_least) return "";
  return at_least == 1 ? "it needs stop strings ([workload] stop_strings)"
                       : fmt::format("it needs {} stop strings or more, and the workload has {}", at_least,
                                     c.workload.stop_strings.size());
}

// stop_string_update drops the tokens after the stop string among the update's new tokens: one
// token per step (K = 0, or a prefill's first sample) is the one that completes it.
std::string reach_stop_string_keeps_tokens(const EngineConfig& c, core::ModuleLoading) {
  return reach_first(
      {reach_needs_stop_strings(c, 1),
       reach_needs_drafts(c, "a step appends one token at K = 0, so no token follows the stop string in it")});
}

// find_stop chooses among the stop strings it found: with one there is nothing to choose.
std::string reach_stop_string_first_listed(const EngineConfig& c, core::ModuleLoading) {
  return reach_needs_stop_strings(c, 2);
}

// The tail window of the longest stop string + 1 tokens covers any stop string that one new token
// completes: only a step appending several tokens (K >= 1) can complete one before it.
std::string reach_stop_string_tail_window(const EngineConfig& c, core::ModuleLoading) {
  return reach_first({reach_needs_stop_strings(c, 1),
                      reach_needs_drafts(c, "one new token per step always lies within the tail window")});
}

// ---------------------------------------------------------------------------------------------
// The scheduler (engine/scheduler.cc, engine/scheduler_release.cc, engine/scheduler_prefix.cc)

// keep_sampled (engine/finish_rules.cc) cuts a run that reaches the cap without looking for a stop
// inside it: the kept tokens differ only when a stop sits before the cap's last token, in a run of
// two or more tokens, which only a verification step samples.
std::string reach_cap_before_stop(const EngineConfig& c, core::ModuleLoading) {
  return reach_needs_drafts(c,
                            "a step samples one token at K = 0, so no stop token sits inside a run before the "
                            "cap");
}

// Scheduler::lookahead: the blocks reserved past a step's tokens for the drafter's K lookahead slots.
std::string reach_no_draft_lookahead_slots(const EngineConfig& c, core::ModuleLoading) {
  return reach_needs_drafts(c, "the drafter's lookahead slots are K, none at K = 0");
}

// Scheduler::prefix_hit caps a hit at num_tokens - 1; the fault lets it cover the whole prefill.
std::string reach_full_prefix_hit(const EngineConfig& c, core::ModuleLoading) {
  if (c.serving.enable_prefix_caching) return "";
  return "it needs enable_prefix_caching: without the prefix cache no prefill hits";
}

// A replica preempts only with two request slots or more: the KV cache holds one request at its
// longest (the Scheduler's constructor asserts blocks_minimum), so a lone running request that
// lacks blocks waits for the fenced ones (Scheduler::add_running) and is never preempted.
std::string reach_needs_preemption(const EngineConfig& c) {
  if (c.replica_slots() >= 2) return "";
  return "it needs 2 or more request slots per replica: the KV cache holds one request at its longest, so a lone "
         "running request is never preempted";
}

// StepBuilder::unschedule: a preemption's victim comes out of the step when it is already in it;
// the fault leaves its row. The schedule walks the running requests in admission order, so the
// victim is in the step only if it precedes the request that needs blocks. FCFS takes the last
// admitted, which the walk has not reached. The priority policy takes the greatest (priority,
// arrival, id) and admits the least waiting one; while no request arrives that is less than one
// running, the running list stays sorted (an admission appends a request no less than any running,
// a preemption takes the greatest) and the victim is again the last. A request less than a running
// one arrives only with arrivals over time and two priority levels or more: a higher priority
// arriving after a lower one was admitted.
std::string reach_preempt_keeps_spec_tokens(const EngineConfig& c, core::ModuleLoading) {
  if (std::string why = reach_needs_preemption(c); !why.empty()) return why;
  if (c.serving.scheduling_policy != SchedulingPolicy::priority)
    return "it needs scheduling_policy = \"priority\": the FCFS victim is the last running request, which the "
           "schedule's walk in running order has not scheduled yet (vLLM #28558 is the priority policy's)";
  if (c.workload.priority_levels < 2 || c.workload.arrival != Arrival::poisson)
    return "it needs requests of 2 or more priority levels arriving over time (priority_levels >= 2, arrival = "
           "\"poisson\"): otherwise the running requests stay in priority order and the victim is the last";
  return "";
}

// Scheduler::release frees a preempted request's blocks at once instead of fencing them until its
// step in flight returns, and Scheduler::owner_of_row adopts that step's late output by request id.
// Both differ only for a victim with a step in flight when a schedule preempts it: the engine core
// schedules step T while steps T - bif + 1 to T - 1 are in flight (Engine::engine_core), none with
// one batch in flight.
std::string reach_late_output_after_preempt(const EngineConfig& c, core::ModuleLoading) {
  if (std::string why = reach_needs_preemption(c); !why.empty()) return why;
  if (c.batches_in_flight() >= 2) return "";
  return "it needs 2 or more batches in flight (pp >= 2, or max_concurrent_batches = 2 at pp = 1): with one, every "
         "step has returned before the next schedule preempts";
}

// Scheduler::abort_in_flight delivers an abort when the request's step in flight is the oldest
// batch in flight, T - max(bif - 1, 1) at schedule T; the fault's Scheduler::abort_scan_reaches
// then finds it only if its last step is T - 1 or T - pp. A request runs at most every pp steps
// (Scheduler::eligible), so its step in flight is its last: at bif = pp it is T - pp + 1, which is
// T - 1 at pp = 2 and outside the scan at pp >= 3; at bif = pp + 1 it is T - pp, always inside it.
std::string reach_abort_scan_current_batch(const EngineConfig& c, core::ModuleLoading) {
  if (c.topology.pp < 3)
    return "it needs pp >= 3: the request an abort in flight reaches is in the oldest batch in flight, at pp <= 2 "
           "the previous step's or the current micro-batch slot's, both of which the narrow scan covers";
  if (!c.schedules_ahead()) return "";
  return fmt::format(
      "it needs max_concurrent_batches = pp = {}: with the lookahead batch the oldest batch in "
      "flight is the current micro-batch slot's (scheduled pp steps before), which the narrow scan "
      "covers",
      c.topology.pp);
}

// ---------------------------------------------------------------------------------------------
// Data parallelism (engine/model_runner.cc Worker::dummy_batch)

std::string reach_needs_dp(const EngineConfig& c) {
  if (c.topology.dp >= 2) return "";
  return "it needs dp >= 2: only an idle data-parallel replica runs a dummy batch";
}

// Worker::dummy_batch runs one drafter forward where propose() runs draft_forwards(): DSpark one,
// EAGLE K. Dummy batches exist only under DP (Engine::schedule).
std::string reach_dummy_run_one_forward(const EngineConfig& c, core::ModuleLoading) {
  if (std::string why = reach_needs_dp(c); !why.empty()) return why;
  if (c.draft_forwards() >= 2) return "";
  return "it needs the EAGLE drafter with k >= 2: propose() runs one forward for DSpark and K for EAGLE, so a "
         "dummy run of one forward matches it otherwise";
}

// Worker::dummy_batch skips Drafter::dummy_propose, whose collectives (the DP row count, the MoE
// all-to-alls) match the busy replicas' propose(); there is a drafter only with K > 0.
std::string reach_dummy_run_skips_drafter(const EngineConfig& c, core::ModuleLoading) {
  return reach_first({reach_needs_dp(c), reach_needs_drafts(c, "without a drafter there is nothing to skip")});
}

// ---------------------------------------------------------------------------------------------
// Disaggregation (engine/disaggregation.h)

std::string reach_needs_disaggregation(const EngineConfig& c) {
  if (c.disagg.enabled) return "";
  return "it needs [disaggregation]: only a disaggregated decode instance pulls a prompt's KV from a prefill instance";
}

// Scheduler::hold_for_export exports every block the request holds; they differ from its prompt
// blocks when the K lookahead slots reserved with its prompt reach a block of their own, which some
// prompt length does (a multiple of the block size) when K >= 1.
std::string reach_prefill_exports_lookahead(const EngineConfig& c, core::ModuleLoading) {
  return reach_first({reach_needs_disaggregation(c),
                      reach_needs_drafts(c, "without drafts no lookahead slots are reserved past the prompt")});
}

// Whether some (prefill stage, decode stage) pair's layer bands satisfy `holds`.
bool some_stage_pair(const EngineConfig& c, bool (*holds)(LayerRange prefill, LayerRange decode)) {
  for (int sp = 0; sp < c.disagg.prefill.pp; ++sp)
    for (int sd = 0; sd < c.topology.pp; ++sd)
      if (holds(stage_layers(c.model, c.disagg.prefill.pp, sp), stage_layers(c.model, c.topology.pp, sd))) return true;
  return false;
}

bool bands_meet(LayerRange p, LayerRange d) { return std::max(p.first, d.first) < std::min(p.last, d.last); }

// KvConnector::segments_as_paired pairs a prefill stage's i-th layer with the decode stage's i-th:
// the same layer only where both stages begin at the same layer.
std::string reach_stage_caches_paired_whole(const EngineConfig& c, core::ModuleLoading) {
  if (std::string why = reach_needs_disaggregation(c); !why.empty()) return why;
  if (some_stage_pair(c, [](LayerRange p, LayerRange d) { return bands_meet(p, d) && p.first != d.first; })) return "";
  return "it needs the instances to split the layers differently (prefill_pp != pp): where every prefill stage "
         "begins where the decode stage it feeds begins, pairing by position pairs the same layers";
}

// Scheduler::hold_for_export frees the blocks at the release; whether another request's KV lands
// in them before the pull is the workload's.
std::string reach_prefill_frees_before_read(const EngineConfig& c, core::ModuleLoading) {
  return reach_needs_disaggregation(c);
}

// Engine::install_disaggregation counts the first stage's consumer ranks only: fewer than every
// consumer rank with pp >= 2.
std::string reach_kv_ready_one_stage(const EngineConfig& c, core::ModuleLoading) {
  if (std::string why = reach_needs_disaggregation(c); !why.empty()) return why;
  if (c.topology.pp >= 2) return "";
  return "it needs pp >= 2 on the decode instance: with one stage, its ranks are every rank that pulls";
}

// kv_routes adds a route from each prefill stage whose layers a decode stage does not share (over
// the lanes both hold): there is one only where some stage pair's bands are disjoint.
std::string reach_connect_all_stages(const EngineConfig& c, core::ModuleLoading) {
  if (std::string why = reach_needs_disaggregation(c); !why.empty()) return why;
  if (some_stage_pair(c, [](LayerRange p, LayerRange d) { return !bands_meet(p, d); })) return "";
  return "it needs a prefill stage and a decode stage that share no layer (prefill_pp >= 2 or pp >= 2): where "
         "every decode stage shares layers with every prefill stage, every stage is one it must read from";
}

// Scheduler::abort_remote frees an aborted loading request's blocks at once; aborts reach loading
// requests only under [workload] abort_while_loading (the loader asks it of aborted requests and a
// KV transfer). Whether the pull is still in flight at the abort is the schedule's.
std::string reach_abort_frees_loading_blocks(const EngineConfig& c, core::ModuleLoading) {
  if (std::string why = reach_needs_disaggregation(c); !why.empty()) return why;
  if (c.workload.abort_while_loading) return "";
  return "it needs [workload] abort_while_loading: only then does an abort reach a request whose KV is still "
         "being pulled";
}

// ---------------------------------------------------------------------------------------------
// KV-cache groups (engine/attention_groups.cc)

// target_kv_group merges the drafter into the target's group only under TRITON_MLA with DSpark's
// non-causal layers; the raised threshold (1 + K) then takes every decode row (1 + drafts tokens)
// to the decode path, and a request that decodes at all has one.
std::string reach_draft_shares_target_kv_group(const EngineConfig& c, core::ModuleLoading) {
  if (c.model.attention != AttentionBackend::triton_mla)
    return "it needs [model] attention = \"triton_mla\": only TRITON_MLA splits the batch at its group's reorder "
           "threshold";
  if (std::string why = reach_needs_drafts(c, "without a drafter no draft layers join the target's group");
      !why.empty())
    return why;
  if (c.spec.method != DraftMethod::dspark)
    return "it needs the DSpark drafter: EAGLE's layers are causal like the target's, so merging them raises no "
           "threshold";
  if (c.instance() == Instance::prefill || c.workload.output_max < 2)
    return "it needs requests that decode (output_max >= 2): the raised threshold takes verification blocks, "
           "which only decode steps have";
  return "";
}

// ---------------------------------------------------------------------------------------------
// Sampling (engine/sampler.cc)

// Sampler::rank_salt folds the TP rank into each row's seed: it changes what a rank samples only
// where a uniform is drawn (a temperature request) and only on a TP rank other than 0.
std::string reach_rank_local_sampling(const EngineConfig& c, core::ModuleLoading) {
  if (c.topology.tp < 2)
    return "it needs tp >= 2: with one TP rank in the last stage there is no other rank to sample apart from";
  if (c.workload.temperature <= 0)
    return "it needs temperature sampling ([workload] temperature > 0): a greedy sample draws no random number";
  if (c.workload.greedy_every == 1) return "it needs a request that samples with temperature: greedy_every = 1";
  return "";
}

// Scheduler::update keeps the in-flight mark of a non-final prefill chunk: a prefill split into
// chunks is needed (chunked prefill, and a budget smaller than some prefill or shared with another
// request).
std::string reach_partial_prefill_stays_in_flight(const EngineConfig& c, core::ModuleLoading) {
  if (!c.serving.chunked_prefill) return "it needs chunked prefill: without it no step holds a non-final prefill chunk";
  if (c.workload.num_requests < 2 && c.max_prefill() <= c.serving.max_num_batched_tokens)
    return "it needs a prefill split into chunks: one request whose longest prefill fits the token budget";
  return "";
}

// EagleTaps::sources: stage 0 counts from layer 0, so only a tap on a later stage is filled from
// another layer (or from none).
std::string reach_tap_local_layer_index(const EngineConfig& c, core::ModuleLoading) {
  if (!c.eagle()) return "it needs the EAGLE drafter: only EAGLE taps target layers";
  for (int t : eagle_taps(c))
    if (t >= stage_layers(c.model, c.topology.pp, 0).last) return "";
  return "it needs a tapped layer past the first stage's: the first stage's index within it is the layer's own";
}

// InputStaging: the pinned twins exist with pin_memory only. A rank's host rewrites them before its
// stream copied them only where nothing synchronises the host with its main stream between two
// steps: the last stage reads each step's output back (Worker::send_output synchronises main on
// every TP rank of it), so at pp = 1 no rank runs ahead; the earlier stages of a pp >= 2 instance
// (the decode instance's or a disaggregated prefill instance's) do.
std::string reach_input_staging(const EngineConfig& c, core::ModuleLoading) {
  if (!c.serving.pin_memory) return "it needs pin_memory: without it every input is a pageable copy";
  if (c.topology.pp >= 2 || (c.disagg.enabled && c.disagg.prefill.pp >= 2)) return "";
  return "it needs pp >= 2 (in either instance): the last stage synchronises its main stream at each step's "
         "output, and only earlier stages run ahead of their copies";
}

// ---------------------------------------------------------------------------------------------
// The table, in kFaultSwitches' order.

using ReachFn = std::string (*)(const EngineConfig&, core::ModuleLoading);

struct FaultReach {
  std::string_view name;
  ReachFn reach;
};

constexpr std::array kFaultReach{
    FaultReach{"stale_drafts", reach_stale_drafts},
    FaultReach{"double_post_drafts", reach_double_post_drafts},
    FaultReach{"lazy_post_update", reach_lazy_post_update},
    FaultReach{"warmup_feedback", reach_warmup_feedback},
    FaultReach{"narrow_sampled_width", reach_narrow_sampled_width},
    FaultReach{"uncleared_padding", reach_uncleared_padding},
    FaultReach{"router_ignores_padding", reach_router_ignores_padding},
    FaultReach{"alias_target_embed", reach_alias_target_embed},
    FaultReach{"unordered_draft_gather", reach_unordered_draft_gather},
    FaultReach{"cap_before_stop", reach_cap_before_stop},
    FaultReach{"preempt_keeps_spec_tokens", reach_preempt_keeps_spec_tokens},
    FaultReach{"late_output_after_preempt", reach_late_output_after_preempt},
    FaultReach{"no_draft_lookahead_slots", reach_no_draft_lookahead_slots},
    FaultReach{"abort_scan_current_batch", reach_abort_scan_current_batch},
    FaultReach{"lookahead_past_ring", reach_lookahead_past_ring},
    FaultReach{"feedback_for_nonfinal_chunks", reach_feedback_for_nonfinal_chunks},
    FaultReach{"full_prefix_hit", reach_full_prefix_hit},
    FaultReach{"local_adaptive_budget", reach_local_adaptive_budget},
    FaultReach{"rollback_last_stage_only", reach_rollback_last_stage_only},
    FaultReach{"pinned_read_without_sync", reach_pinned_read_without_sync},
    FaultReach{"untagged_aux_relay", reach_untagged_aux_relay},
    FaultReach{"dummy_run_one_forward", reach_dummy_run_one_forward},
    FaultReach{"dummy_run_skips_drafter", reach_dummy_run_skips_drafter},
    FaultReach{"prefill_exports_lookahead", reach_prefill_exports_lookahead},
    FaultReach{"stage_caches_paired_whole", reach_stage_caches_paired_whole},
    FaultReach{"prefill_frees_before_read", reach_prefill_frees_before_read},
    FaultReach{"kv_ready_one_stage", reach_kv_ready_one_stage},
    FaultReach{"connect_all_stages", reach_connect_all_stages},
    FaultReach{"draft_shares_target_kv_group", reach_draft_shares_target_kv_group},
    FaultReach{"abort_frees_loading_blocks", reach_abort_frees_loading_blocks},
    FaultReach{"rank_local_sampling", reach_rank_local_sampling},
    FaultReach{"partial_prefill_stays_in_flight", reach_partial_prefill_stays_in_flight},
    FaultReach{"tap_local_layer_index", reach_tap_local_layer_index},
    FaultReach{"stop_string_keeps_tokens", reach_stop_string_keeps_tokens},
    FaultReach{"stop_string_first_listed", reach_stop_string_first_listed},
    FaultReach{"stop_string_tail_window", reach_stop_string_tail_window},
    FaultReach{"input_prep_without_sync", reach_input_staging},
    FaultReach{"input_prep_sync_after_states", reach_input_staging},
};

constexpr bool reach_table_follows_switches() {
  if (kFaultReach.size() != kFaultSwitches.size()) return false;
  for (size_t i = 0; i < kFaultReach.size(); ++i)
    if (kFaultReach[i].name != kFaultSwitches[i].name) return false;
  return true;
}
// A fault added to kFaultSwitches needs its reachability here too.
static_assert(reach_table_follows_switches(), "kFaultReach lists every fault of kFaultSwitches, in its order");

}  // namespace

std::string fault_unreachable(const EngineConfig& c, core::ModuleLoading loading, std::string_view fault) {
  const auto it =
      std::find_if(kFaultReach.begin(), kFaultReach.end(), [fault](const FaultReach& f) { return f.name == fault; });
  PPSPEC_ASSERT(it != kFaultReach.end(), "'{}' is no fault; the faults: {}", fault, fault_names());
  return it->reach(c, loading);
}

}  // namespace ppspec::engine
