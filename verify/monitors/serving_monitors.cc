#include "verify/monitors/serving_monitors.h"

#include <fmt/format.h>

#include "core/assert.h"
#include "core/hash.h"
#include "engine/communicators.h"
#include "engine/workload.h"
#include "verify/monitors/attention_route.h"
#include "verify/monitors/decision_agreement.h"
#include "verify/monitors/draft_freshness.h"
#include "verify/monitors/embedding_checker.h"
#include "verify/monitors/gate_agreement.h"
#include "verify/monitors/kv_ownership.h"
#include "verify/monitors/kv_transfer.h"
#include "verify/monitors/leak_checker.h"
#include "verify/monitors/scheduling_cadence.h"
#include "verify/monitors/scheduling_progress.h"
#include "verify/monitors/padding_checker.h"
#include "verify/monitors/pipeline_bubble.h"
#include "verify/monitors/stage_agreement.h"
#include "verify/monitors/tap_placement.h"
#include "verify/monitors/drafter_reference.h"
#include "verify/monitors/model_reference.h"
#include "verify/monitors/warmup_discipline.h"

namespace ppspec::verify {

ServingFacts serving_facts(const engine::EngineConfig& cfg, const engine::Checkpoint& ckpt) {
  ServingFacts f;
  f.dp = cfg.topology.dp;
  f.pp = cfg.topology.pp;
  f.tp = cfg.topology.tp;
  f.k = cfg.spec.k;
  f.topk = cfg.model.topk;
  f.block_size = cfg.model.block_size;
  f.draft_table_hash = static_cast<int64_t>(core::fnv1a_words(ckpt.draft_embed.data(), ckpt.draft_embed.size()));
  f.draft_table_entries = static_cast<int64_t>(ckpt.draft_embed.size());
  f.vocab = cfg.model.vocab;
  f.checkpoint = std::make_shared<const engine::Checkpoint>(ckpt);
  f.model = std::make_shared<const engine::ModelConfig>(cfg.model);
  if (cfg.eagle()) f.eagle_taps = engine::eagle_taps(cfg);
  for (const engine::CommunicatorSpec& c : engine::communicators(cfg.topology, cfg.instance()))
    f.comm_roles.emplace(c.name, c.role);
  for (const engine::RequestSpec& r : engine::make_workload(cfg))
    if (r.spread != 0) f.temperature_requests.insert(r.id);
  if (cfg.instance() == engine::Instance::decode) {
    // What the layer bands and lanes give, not what a fault made the engine connect.
    engine::EngineConfig bands = cfg;
    bands.faults = {};
    f.kv_routes = engine::kv_routes(bands);
    const engine::EngineConfig prefill = engine::prefill_instance_config(cfg);
    f.prefill_instance = std::make_shared<const ServingFacts>(serving_facts(prefill, ckpt));
    f.prefill_first_rank = prefill.topology.first_rank;
  }
  return f;
}

ServingMonitors::Replica ServingMonitors::make_replica(const ServingFacts& facts, Monitor::Sink sink) {
  Replica r;
  std::vector<std::unique_ptr<Monitor>>& m = r.monitors;
  m.push_back(std::make_unique<WarmupDiscipline>(facts, sink));
  m.push_back(std::make_unique<GateAgreement>(facts, sink));
  m.push_back(std::make_unique<DecisionAgreement>(facts, sink));
  // Stage agreement before draft freshness: where one row's position or bonus token is wrong, its
  // drafts usually are too, and the cause is the former.
  m.push_back(std::make_unique<StageAgreement>(facts, sink));
  m.push_back(std::make_unique<DraftFreshness>(facts, sink));
  m.push_back(std::make_unique<TapPlacement>(facts, sink));
  m.push_back(std::make_unique<DrafterReference>(facts, sink));
  auto model = std::make_unique<ModelReference>(facts, sink);
  r.model_reference = model.get();
  m.push_back(std::move(model));
  m.push_back(std::make_unique<PaddingChecker>(facts, sink));
  m.push_back(std::make_unique<EmbeddingChecker>(facts, sink));
  m.push_back(std::make_unique<KvOwnership>(facts, sink));
  m.push_back(std::make_unique<AttentionRoute>(facts, sink));
  m.push_back(std::make_unique<LeakChecker>(facts, sink));
  m.push_back(std::make_unique<SchedulingCadence>(facts, sink));
  m.push_back(std::make_unique<PipelineBubble>(facts, sink));
  m.push_back(std::make_unique<SchedulingProgress>(facts, sink));
  PPSPEC_ASSERT(r.model_reference != nullptr && m.size() == 16);
  for (const auto& monitor : m) {
    const Monitor::KindSet kinds = monitor->kinds();
    for (size_t k = 0; k < core::kEventKinds; ++k)
      if (kinds.test(k)) r.by_kind[k].push_back(monitor.get());
  }
  return r;
}

ServingMonitors::ServingMonitors(const ServingFacts& facts, Monitor::Sink sink) : replica_ranks_(facts.pp * facts.tp) {
  if (facts.prefill_instance) {
    // The prefill instance's monitors see its events with its ranks numbered within it; its
    // findings get their global ranks back and say which instance.
    Monitor::Sink prefill_sink = [sink, base = facts.prefill_first_rank](core::Finding f) {
      for (core::Site& s : f.sites)
        if (s.rank >= 0) s.rank += base;
      // Its steps are its own: the finding's engine step is the decode instance's numbering.
      f.summary = f.engine_step < 0 ? fmt::format("prefill instance: {}", f.summary)
                                    : fmt::format("prefill instance, its step {}: {}", f.engine_step, f.summary);
      f.engine_step = -1;
      f.details.push_back(fmt::format(
          "ranks in this finding's text are numbered within the prefill instance: its rank n is global rank {} + n",
          base));
      sink(std::move(f));
    };
    prefill_ = std::make_unique<Replica>(make_replica(*facts.prefill_instance, prefill_sink));
    prefill_first_rank_ = facts.prefill_first_rank;
    kv_transfer_ = std::make_unique<KvTransferMonitor>(facts, sink);
  }
  PPSPEC_ASSERT(facts.dp >= 1 && replica_ranks_ >= 1, "monitors of dp = {}, pp x tp = {}", facts.dp, replica_ranks_);
  for (int r = 0; r < facts.dp; ++r) {
    Monitor::Sink replica_sink = sink;
    if (facts.dp > 1)
      // A replica's findings name its ranks as its monitors saw them, numbered within the replica:
      // the sites get their global ranks back, and the summary says which replica.
      replica_sink = [sink, r, base = r * replica_ranks_](core::Finding f) {
        for (core::Site& s : f.sites)
          if (s.rank >= 0) s.rank += base;
        f.summary = fmt::format("data-parallel replica {}: {}", r, f.summary);
        f.details.push_back(fmt::format(
            "ranks in this finding's text are numbered within replica {}: its rank n is global rank {} + n", r, base));
        sink(std::move(f));
      };
    replicas_.push_back(make_replica(facts, replica_sink));
    replicas_.back().engine_actor = engine::replica_engine_actor(r);
  }
}

ServingMonitors::~ServingMonitors() = default;

OnlineCoverage ServingMonitors::coverage() const {
  OnlineCoverage c;
  for (const Replica& r : replicas_) {
    PPSPEC_ASSERT(r.model_reference != nullptr);
    const ModelReference& m = *r.model_reference;
    c.rows_checked += m.rows_checked();
    c.samples_checked += m.samples_checked();
    c.requests_followed += m.requests_followed();
    c.requests_unfollowable += m.requests_unfollowable();
    c.requests_forgotten_idle += m.requests_forgotten_idle();
    c.requests_forgotten_for_room += m.requests_forgotten_for_room();
    for (const auto& monitor : r.monitors)
      for (const auto& [what, n] : monitor->skipped()) c.monitor_skips[std::string(what)] += n;
  }
  return c;
}

int ServingMonitors::replica_of(const core::Event& e) const {
  if (e.rank >= 0) return e.rank / replica_ranks_;
  for (size_t r = 0; r < replicas_.size(); ++r)
    if (e.actor == replicas_[r].engine_actor) return static_cast<int>(r);
  return -1;
}

void ServingMonitors::deliver(Replica& r, const core::Event& e) {
  for (Monitor* m : r.by_kind[static_cast<size_t>(e.kind)]) m->on_event(e);
}

void ServingMonitors::on_event(const core::Event& e) {
  if (kv_transfer_) verify::deliver(*kv_transfer_, e);
  if (prefill_ && (e.rank >= prefill_first_rank_ || e.actor == engine::kPrefillEngineActor)) {
    core::Event mine = e;
    if (mine.rank >= 0) mine.rank -= prefill_first_rank_;
    deliver(*prefill_, mine);
    return;
  }
  if (replicas_.size() == 1) {
    deliver(replicas_.front(), e);
    return;
  }
  const int r = replica_of(e);
  if (r < 0) {
    for (Replica& each : replicas_) deliver(each, e);
    return;
  }
  PPSPEC_ASSERT(static_cast<size_t>(r) < replicas_.size(), "an event of rank {} beyond {} replicas", e.rank,
                replicas_.size());
  core::Event mine = e;
  if (mine.rank >= 0) mine.rank -= r * replica_ranks_;
  deliver(replicas_[static_cast<size_t>(r)], mine);
}

}  // namespace ppspec::verify
