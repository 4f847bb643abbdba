// The engine cores' part in prefill/decode disaggregation (engine/disaggregation.h): the prefill
// core hands each computed prompt to the decode core and frees its blocks once every route's send
// completed; the decode core asks its ranks' connectors to pull what its scheduler allocated, and
// lets the scheduler admit a request once every rank reported.
#include <fmt/format.h>
#include <optional>
#include <set>
#include <stdexcept>

#include "core/assert.h"
#include "engine/communicators.h"
#include "engine/engine.h"
#include "engine/probe.h"

namespace ppspec::engine {

void Engine::install_disaggregation() {
  const std::vector<KvRoute> routes = kv_routes(decode_instance_config(cfg_));
  if (cfg_.instance() == Instance::decode) {
    std::set<core::RankId> consumers;
    for (const KvRoute& r : routes) {
      const std::vector<core::RankId> members{r.consumer, r.producer};
      rt_.declare_comm(r.comm, members);
      // Under kv_ready_one_stage only the first stage's ranks are counted.
      if (!cfg_.faults.kv_ready_one_stage || cfg_.topology.stage_of(r.consumer) == 0) consumers.insert(r.consumer);
    }
    kv_reports_expected_ = static_cast<int>(consumers.size());
    prefill_->install();
  } else {
    kv_reports_expected_ = static_cast<int>(routes.size());
  }
  for (KvConnector* c : connectors_)
    rt_.spawn(core::ActorSpec{fmt::format("rank{}.kv", c->rank()), c->rank()}, [c] { c->run(); });
}

ModelOutput Engine::next_output(Replica& r) {
  for (;;) {
    std::any m = rt_.channel(r.actor).recv();
    if (auto* out = std::any_cast<ModelOutput>(&m)) return std::move(*out);
    handle_kv_message(r, m);
  }
}

void Engine::handle_kv_message(Replica& rep, const std::any& m) {
  PPSPEC_ASSERT(cfg_.instance() != Instance::aggregated, "a KV connector's message to an aggregated engine");
  if (const auto* e = std::any_cast<KvExport>(&m)) {
    PPSPEC_ASSERT(cfg_.instance() == Instance::decode);
    if (serving_)
      rep.scheduler->arrive_remote(*e);
    else
      early_exports_.push_back(*e);
    return;
  }
  const auto* done = std::any_cast<KvDone>(&m);
  PPSPEC_ASSERT(done != nullptr, "the engine core of the {} instance got a message it does not serve",
                cfg_.instance() == Instance::prefill ? "prefill" : "decode");
  if (kv_counted_.contains(done->req)) return;  // a report after the count was reached (kv_ready_one_stage)
  const int reports = ++kv_reports_[done->req];
  if (reports < kv_reports_expected_) return;
  kv_reports_.erase(done->req);  // `reports` is a copy: the entry is gone
  kv_counted_.insert(done->req);
  if (cfg_.instance() == Instance::prefill) {
    rep.scheduler->release_export(done->req, next_step_);
    publish_ledger(rep);
    return;
  }
  if (rt_.events().active()) publish(rt_, Probe{-1, next_step_, done->req, rep.actor}, core::KvReadyProbe{reports});
  rep.scheduler->kv_loaded(done->req, next_step_);
  publish_ledger(rep);  // an aborted request's blocks, freed now
}

void Engine::start_serving() {
  serving_ = true;
  for (const KvExport& e : early_exports_) replicas_.front().scheduler->arrive_remote(e);
  early_exports_.clear();
}

bool Engine::wait_idle() {
  std::optional<core::Time> next;
  for (const Replica& rep : replicas_)
    if (const auto t = rep.scheduler->next_arrival()) next = next ? std::min(*next, *t) : *t;
  if (next) {
    rt_.sleep(std::max<core::Time>(*next - rt_.now(), 1));
    return true;
  }
  // A disaggregated instance waits for what its peer or its connectors send: an export, a report.
  const bool waits = cfg_.instance() == Instance::decode ||
                     (cfg_.instance() == Instance::prefill && replicas_.front().scheduler->holds_exports());
  if (!waits) return false;
  PPSPEC_ASSERT(replicas_.size() == 1, "a disaggregated instance of {} replicas", replicas_.size());
  Replica& rep = replicas_.front();
  handle_kv_message(rep, rt_.channel(rep.actor).recv());
  return true;
}

void Engine::stall() {
  // Without a monitor to name the waiting requests, the run must not end as if it completed.
  if (!rt_.events().active()) throw std::logic_error("the scheduler can schedule nothing and no request will arrive");
  for (const Replica& rep : replicas_) {
    if (rep.scheduler->done()) continue;
    const std::vector<int64_t> waiting = rep.scheduler->waiting_ids();
    const BlockPool& pool = rep.scheduler->pool();
    publish(rt_, Probe{-1, std::max<int64_t>(next_step_ - 1, 0), -1, rep.actor},
            core::EngineStalledProbe{pool.free_count(), pool.num_blocks() - 1, waiting});
  }
  broadcast(Command::shutdown);
  stop_connectors();
}

void Engine::send_loads(Replica& rep, bool stepped) {
  for (KvLoad& l : rep.scheduler->take_loads()) {
    // A schedule that made no step numbered none: its pulls are told at the engine's last step.
    if (!stepped) l.step = std::max<int64_t>(next_step_ - 1, 0);
    for (int i = 0; i < cfg_.topology.ranks(); ++i)
      rt_.channel(kv_connector_channel(cfg_.topology.first_rank + i)).send(l);
  }
}

void Engine::send_exports(Replica& rep) {
  for (KvExport& e : rep.scheduler->take_exports()) {
    if (rt_.events().active()) {
      const RequestRecord* r = nullptr;
      for (const RequestRecord& x : rep.scheduler->records())
        if (!x.dummy && x.spec.id == e.req) r = &x;
      PPSPEC_ASSERT(r != nullptr);
      const std::vector<int64_t> blocks(e.blocks.begin(), e.blocks.end());
      publish(rt_, Probe{-1, next_step_, e.req, rep.actor},
              core::KvExportedProbe{static_cast<int64_t>(r->spec.prompt.size()), blocks});
    }
    rt_.channel(replica_engine_actor(0, Instance::decode)).send(std::move(e));
  }
}

void Engine::stop_connectors() {
  for (KvConnector* c : connectors_) rt_.channel(kv_connector_channel(c->rank())).send(KvStop{});
}

}  // namespace ppspec::engine
