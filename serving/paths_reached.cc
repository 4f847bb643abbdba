#include "serving/paths_reached.h"

#include <fmt/format.h>

#include "core/probes.h"
#include "engine/checkpoint.h"

namespace ppspec::serving {

const std::vector<PathField>& path_fields() {
  static const std::vector<PathField> fields = {{"chunked_prompts", &PathsReached::chunked_prompts},
                                                {"preemptions", &PathsReached::preemptions},
                                                {"preempted_in_step", &PathsReached::preempted_in_step},
                                                {"aborts", &PathsReached::aborts},
                                                {"aborts_in_flight", &PathsReached::aborts_in_flight},
                                                {"stop_token_ends", &PathsReached::stop_token_ends},
                                                {"stop_string_ends", &PathsReached::stop_string_ends},
                                                {"stop_string_trims", &PathsReached::stop_string_trims},
                                                {"length_cap_ends", &PathsReached::length_cap_ends},
                                                {"greedy_requests", &PathsReached::greedy_requests},
                                                {"drafts_verified", &PathsReached::drafts_verified},
                                                {"steps_ahead", &PathsReached::steps_ahead},
                                                {"prefix_hit_blocks", &PathsReached::prefix_hit_blocks},
                                                {"padding_writes", &PathsReached::padding_writes},
                                                {"slot_reuse", &PathsReached::slot_reuse},
                                                {"dummy_batches", &PathsReached::dummy_batches},
                                                {"taps_relayed", &PathsReached::taps_relayed},
                                                {"recurrent_rollbacks", &PathsReached::recurrent_rollbacks},
                                                {"module_loads_after_warmup", &PathsReached::module_loads_after_warmup},
                                                {"kv_pulls", &PathsReached::kv_pulls},
                                                {"mla_decode_requests", &PathsReached::mla_decode_requests}};
  return fields;
}

void PathsSink::on_event(const core::Event& e) {
  switch (e.kind) {
    case core::EventKind::request_scheduled: {
      if (e.req < 0) return;
      const auto p = core::RequestScheduledProbe::decode(e);
      auto core = cores_.find(e.actor);
      if (core == cores_.end()) core = cores_.emplace(std::string(e.actor), static_cast<int>(cores_.size())).first;
      const auto row = std::pair{core->second, p.state_index};
      const auto [it, fresh] = owner_.try_emplace(row, e.req);
      if (!fresh && it->second != e.req) ++reached_.slot_reuse;
      it->second = e.req;
      // A prefill chunk that leaves tokens of the prompt for a later step (a prefix hit's tokens,
      // computed before the first chunk, make no chunk of their own).
      if (p.num_computed + p.num_scheduled < p.prefill_len && chunked_.emplace(core->second, e.req).second)
        ++reached_.chunked_prompts;
      return;
    }
    case core::EventKind::padding_rows: ++reached_.padding_writes; return;
    case core::EventKind::kv_ready: ++reached_.kv_pulls; return;
    case core::EventKind::attention_split:
      if (e.rank == 0) reached_.mla_decode_requests += core::AttentionSplitProbe::decode(e).table_rows;
      return;
    case core::EventKind::warmup_phase: phase_[e.rank] = e.subject.phase; return;
    case core::EventKind::module_load:
      if (phase_[e.rank] == core::WarmupPhase::serving) ++reached_.module_loads_after_warmup;
      return;
    case core::EventKind::op_posted:
      if (e.has_op && e.op.kind == core::OpKind::send &&
          (e.op.label.name == "act.aux" || e.op.label.name == "aux.direct"))
        ++reached_.taps_relayed;
      return;
    default: return;
  }
}

PathsReached paths_reached(const PathsReached& from_events, const engine::EngineConfig& cfg,
                           const engine::ServingStats& stats, const std::vector<engine::RequestRecord>& requests) {
  PathsReached p = from_events;
  p.preemptions = stats.preemptions;
  p.preempted_in_step = stats.preempted_in_step;
  p.steps_ahead = stats.steps_ahead;
  p.prefix_hit_blocks = stats.prefix_hit_blocks;
  p.dummy_batches = stats.dummy_batches;
  p.drafts_verified = stats.drafts_verified;
  for (const engine::RequestRecord& r : requests) {
    if (r.dummy) continue;
    // An abort in flight reaches the core while the request's step is in flight, by construction
    // (WorkloadConfig::abort_in_flight); it counts once it reached the core, applied or not.
    // The front end's abort of a request its stop string ended is counted as that.
    const bool client_abort = r.abort_arrived && r.stop_string < 0;
    if (client_abort) ++p.aborts;
    if (client_abort && cfg.workload.abort_in_flight) ++p.aborts_in_flight;
    if (r.stop_string >= 0) ++p.stop_string_ends;
    if (r.stop_string >= 0 && static_cast<size_t>(r.returned_tokens) < r.output.size()) ++p.stop_string_trims;
    if (r.spec.spread == 0) ++p.greedy_requests;
    const bool stopped = !r.output.empty() && r.output.back() == cfg.model.stop_token;
    if (r.finished && !r.aborted && stopped) ++p.stop_token_ends;
    const int64_t length = static_cast<int64_t>(r.spec.prompt.size() + r.output.size());
    if (r.finished && !r.aborted && !stopped && static_cast<int>(r.output.size()) < r.spec.max_tokens &&
        length >= cfg.model.max_model_len)
      ++p.length_cap_ends;
    if (!cfg.model.recurrent_layers.empty() && r.proposed_drafts > r.accepted_drafts) ++p.recurrent_rollbacks;
  }
  return p;
}

namespace {

// Whether an EAGLE drafter taps a layer an earlier stage holds: only those taps are relayed (the
// last stage's own, an MTP drafter's last hidden state, need no transfer).
bool taps_before_last_stage(const engine::EngineConfig& cfg) {
  if (!cfg.eagle() || cfg.topology.pp < 2) return false;
  const engine::LayerRange last = engine::stage_layers(cfg.model, cfg.topology.pp, cfg.topology.pp - 1);
  for (int layer : engine::eagle_taps(cfg))
    if (layer < last.first) return true;
  return false;
}

}  // namespace

std::vector<std::string> unexercised(const engine::EngineConfig& cfg, const PathsReached& p) {
  std::vector<std::string> out;
  auto need = [&out](bool enabled, int64_t reached, const char* what) {
    if (enabled && reached == 0) out.push_back(what);
  };
  const bool drafts = cfg.spec.k > 0;
  const bool overlapping = cfg.batches_in_flight() > 1;
  need(cfg.serving.chunked_prefill, p.chunked_prompts,
       "chunked prefill is on, and no prompt was chunked (no step's prompts overran the token budget)");
  need(cfg.may_preempt(), p.preemptions,
       "the KV cache is smaller than the workload needs, and no request was preempted");
  need(cfg.workload.abort_every > 0, p.aborts, "the workload aborts requests, and no abort reached the engine core");
  need(cfg.workload.abort_every > 0 && cfg.workload.abort_in_flight && overlapping, p.aborts_in_flight,
       "aborts in flight are on, and none reached a request with a step in flight");
  need(cfg.model.stop_token >= 0, p.stop_token_ends, "a stop token is set, and no request ended on it");
  need(!cfg.workload.stop_strings.empty(), p.stop_string_ends, "stop strings are set, and no request ended on one");
  need(drafts, p.drafts_verified, "speculative decoding is on, and no draft was verified");
  need(cfg.schedules_ahead(), p.steps_ahead,
       "async scheduling is on, and no step was scheduled while the request's previous one was in flight");
  need(cfg.serving.enable_prefix_caching && cfg.workload.shared_prefix > 0, p.prefix_hit_blocks,
       "prefix caching is on with shared prompts, and no block was reused");
  need(!cfg.serving.capture_sizes.empty(), p.padding_writes, "CUDA graphs are on, and no graph ran with padding rows");
  need(cfg.topology.dp > 1, p.dummy_batches, "data parallelism is on, and no replica ran a dummy batch");
  need(taps_before_last_stage(cfg), p.taps_relayed,
       "EAGLE taps a layer on a stage before the last, and no tap was relayed");
  need(!cfg.model.recurrent_layers.empty() && drafts, p.recurrent_rollbacks,
       "recurrent layers under speculative decoding, and no state was rolled back past a rejected draft");
  need(cfg.disagg.enabled, p.kv_pulls,
       "disaggregation is on, and no request's KV was pulled from the prefill instance");
  need(cfg.workload.temperature > 0 && cfg.workload.greedy_every > 0, p.greedy_requests,
       "a greedy share is asked for, and no request sampled greedily");
  return out;
}

}  // namespace ppspec::serving
