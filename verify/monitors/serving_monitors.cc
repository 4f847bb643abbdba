#include "verify/monitors/serving_monitors.h"

#include "core/assert.h"
#include "core/hash.h"
#include "engine/workload.h"
#include "verify/monitors/decision_agreement.h"
#include "verify/monitors/draft_freshness.h"
#include "verify/monitors/embedding_checker.h"
#include "verify/monitors/gate_agreement.h"
#include "verify/monitors/kv_ownership.h"
#include "verify/monitors/leak_checker.h"
#include "verify/monitors/scheduling_cadence.h"
#include "verify/monitors/padding_checker.h"
#include "verify/monitors/pipeline_bubble.h"
#include "verify/monitors/stage_agreement.h"
#include "verify/monitors/drafter_reference.h"
#include "verify/monitors/model_reference.h"
#include "verify/monitors/warmup_discipline.h"

namespace ppspec::verify {

ServingFacts serving_facts(const engine::EngineConfig& cfg, const engine::Checkpoint& ckpt) {
  ServingFacts f;
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
  for (const engine::CommunicatorSpec& c : engine::communicators(cfg.topology)) f.comm_roles.emplace(c.name, c.role);
  for (const engine::RequestSpec& r : engine::make_workload(cfg))
    if (r.spread != 0) f.temperature_requests.insert(r.id);
  return f;
}

ServingMonitors::ServingMonitors(const ServingFacts& facts, Monitor::Sink sink) {
  monitors_.push_back(std::make_unique<WarmupDiscipline>(facts, sink));
  monitors_.push_back(std::make_unique<GateAgreement>(facts, sink));
  monitors_.push_back(std::make_unique<DecisionAgreement>(facts, sink));
  // Stage agreement before draft freshness: where one row's position or bonus token is wrong, its
  // drafts usually are too, and the cause is the former.
  monitors_.push_back(std::make_unique<StageAgreement>(facts, sink));
  monitors_.push_back(std::make_unique<DraftFreshness>(facts, sink));
  monitors_.push_back(std::make_unique<DrafterReference>(facts, sink));
  auto model = std::make_unique<ModelReference>(facts, sink);
  model_reference_ = model.get();
  monitors_.push_back(std::move(model));
  monitors_.push_back(std::make_unique<PaddingChecker>(facts, sink));
  monitors_.push_back(std::make_unique<EmbeddingChecker>(facts, sink));
  monitors_.push_back(std::make_unique<KvOwnership>(facts, sink));
  monitors_.push_back(std::make_unique<LeakChecker>(facts, sink));
  monitors_.push_back(std::make_unique<SchedulingCadence>(facts, sink));
  monitors_.push_back(std::make_unique<PipelineBubble>(facts, sink));
  PPSPEC_ASSERT(model_reference_ != nullptr && monitors_.size() == 13);
}

ServingMonitors::~ServingMonitors() = default;

OnlineCoverage ServingMonitors::coverage() const {
  PPSPEC_ASSERT(model_reference_ != nullptr);
  const ModelReference& m = *model_reference_;
  return OnlineCoverage{m.rows_checked(),          m.samples_checked(),        m.requests_followed(),
                        m.requests_unfollowable(), m.requests_forgotten_idle(), m.requests_forgotten_for_room()};
}

void ServingMonitors::on_event(const core::Event& e) {
  for (const auto& m : monitors_) m->on_event(e);
}

}  // namespace ppspec::verify
