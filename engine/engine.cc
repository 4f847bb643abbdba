#include "engine/engine.h"

#include <algorithm>
#include <deque>
#include <optional>
#include <fmt/format.h>
#include <stdexcept>

#include "core/assert.h"
#include "engine/communicators.h"
#include "engine/probe.h"
#include "engine/workload.h"

namespace ppspec::engine {

Engine::Engine(const EngineConfig& cfg, core::Runtime& rt) : cfg_(cfg), rt_(rt), ckpt_(make_checkpoint(cfg.model)) {
  const int dp = cfg.topology.dp;
  PPSPEC_ASSERT(dp >= 1 && cfg.serving.max_num_seqs % dp == 0, "dp = {} over {} request slots", dp,
                cfg.serving.max_num_seqs);
  for (int r = 0; r < dp; ++r) {
    Replica& rep = replicas_.emplace_back();
    rep.cfg = std::make_unique<EngineConfig>(replica_config(cfg));
    std::vector<RequestSpec> workload = dp == 1 ? make_workload(cfg) : make_replica_workload(cfg, r);
    if (cfg.instance() == Instance::prefill) workload = prefill_workload(std::move(workload));
    rep.scheduler = std::make_unique<Scheduler>(*rep.cfg, std::move(workload));
    // Replica 0 keeps the names of a dp = 1 engine, so that its traces do not change.
    rep.actor = replica_engine_actor(r, cfg.instance());
  }
  if (cfg.instance() == Instance::decode) {
    prefill_cfg_ = std::make_unique<EngineConfig>(prefill_instance_config(cfg));
    prefill_ = std::make_unique<Engine>(*prefill_cfg_, rt);
  }
}

Engine::~Engine() = default;

void Engine::install() {
  const Topology& t = cfg_.topology;
  for (const CommunicatorSpec& c : communicators(t, cfg_.instance())) rt_.declare_comm(c.name, c.members);
  for (int i = 0; i < t.ranks(); ++i) {
    const core::RankId r = t.first_rank + i;
    const Replica& rep = replicas_[static_cast<size_t>(t.replica_of(r))];
    workers_.push_back(std::make_unique<Worker>(rt_, r, *rep.cfg, ckpt_, rep.actor));
    if (KvConnector* c = workers_.back()->attach_connector()) connectors_.push_back(c);
  }
  const std::string core_actor = cfg_.instance() == Instance::prefill ? std::string(kPrefillEngineActor) : "engine";
  rt_.spawn(core::ActorSpec{core_actor, -1}, [this] { engine_core(); });
  for (int i = 0; i < t.ranks(); ++i)
    rt_.spawn(core::ActorSpec{fmt::format("rank{}.host", t.first_rank + i), t.first_rank + i},
              [this, i] { workers_[static_cast<size_t>(i)]->run(); });
  if (cfg_.instance() != Instance::aggregated) install_disaggregation();
}

void Engine::broadcast(Command c) {
  for (int i = 0; i < cfg_.topology.ranks(); ++i)
    rt_.channel(fmt::format("worker{}", cfg_.topology.first_rank + i)).send(WorkerCommand{c, nullptr});
}

void Engine::broadcast_wave(const Wave& wave) {
  PPSPEC_ASSERT(wave.size() == replicas_.size());
  const Topology& t = cfg_.topology;
  for (int i = 0; i < t.ranks(); ++i)
    rt_.channel(fmt::format("worker{}", t.first_rank + i))
        .send(WorkerCommand{Command::step, wave[static_cast<size_t>(t.replica_of(t.first_rank + i))]});
}

void Engine::publish_batch(const Replica& rep, const SchedulerOutput& so, bool warmup) {
  if (!rt_.events().active()) return;
  std::vector<int64_t> ids;
  for (const auto& r : so.requests) ids.push_back(r.id);
  publish(rt_, Probe{-1, so.step, -1, rep.actor},
          core::BatchScheduledProbe{warmup ? core::StepKind::warmup : core::StepKind::serving, so.num_tokens, ids});
  // What the engine core computed for each request: the positions every stage must embed; and a
  // new request's prompt, the context of the reference drafter (verify/monitors/drafter_reference.h).
  for (const auto& r : so.requests) {
    std::vector<int64_t> prompt;  // the trace's integers are 64-bit; the prompt's tokens are not
    for (const NewRequest& n : so.new_requests)
      if (n.id == r.id) prompt.assign(n.prompt.begin(), n.prompt.end());
    publish(rt_, Probe{-1, so.step, r.id, rep.actor},
            core::RequestScheduledProbe{r.num_computed, r.num_tokens, r.prefill_len, r.idx, prompt});
  }
}

// What the scheduler did with blocks and request state since the last call, as probes.
void Engine::publish_ledger(Replica& rep, int64_t at_step) {
  std::vector<LedgerEntry> ledger = rep.scheduler->take_ledger();
  if (!rt_.events().active()) return;
  for (const LedgerEntry& e : ledger) {
    const Probe at{-1, at_step >= 0 ? at_step : e.step, e.req, rep.actor};
    const std::vector<int64_t> blocks(e.blocks.begin(), e.blocks.end());
    switch (e.what) {
      case LedgerEntry::What::allocated: publish(rt_, at, core::BlocksAllocatedProbe{e.first_index, blocks}); break;
      case LedgerEntry::What::freed: publish(rt_, at, core::BlocksFreedProbe{e.reason, blocks}); break;
      case LedgerEntry::What::released:
        publish(rt_, at, core::RequestReleasedProbe{e.reason, e.state_index, blocks});
        break;
      case LedgerEntry::What::abort_arrived: publish(rt_, at, core::AbortArrivedProbe{}); break;
      case LedgerEntry::What::shared: publish(rt_, at, core::BlocksSharedProbe{e.first_index, blocks}); break;
      case LedgerEntry::What::cached: publish(rt_, at, core::BlocksCachedProbe{blocks}); break;
    }
  }
}

// One step of every replica (vLLM: each DP engine core steps in the same wave, the DP coordinator
// keeping them in step; here one core drives them all, a simplification that keeps the run a
// function of the seed). A replica whose scheduler has nothing gets an empty step; it is a dummy
// batch when another replica runs rows (the shared collectives need every replica), else idle.
Engine::Wave Engine::schedule(bool warmup) {
  Wave wave;
  bool any = false, rows = false;
  for (Replica& rep : replicas_) {
    auto so = rep.scheduler->schedule(next_step_);
    // A schedule that made no step numbered none: what it did is told at the engine's last step
    // (as its pulls are, send_loads).
    publish_ledger(rep, so != nullptr ? -1 : std::max<int64_t>(next_step_ - 1, 0));
    if (cfg_.instance() == Instance::decode) send_loads(rep, so != nullptr);
    any = any || so != nullptr;
    rows = rows || (so && so->num_tokens > 0);
    wave.push_back(std::move(so));
  }
  if (!any) return {};
  for (size_t r = 0; r < wave.size(); ++r) {
    if (!wave[r]) {
      wave[r] = std::make_shared<SchedulerOutput>();
      wave[r]->step = next_step_;
      wave[r]->synthesized = true;
    }
    wave[r]->dp_dummy = cfg_.topology.dp > 1 && rows && wave[r]->num_tokens == 0;
    if (wave[r]->dp_dummy && !warmup) ++dummy_batches_;
    if (!wave[r]->synthesized) publish_batch(replicas_[r], *wave[r], warmup);
  }
  ++next_step_;
  if (warmup) warmup_steps_ = next_step_;  // counted as they are numbered: a run can end inside warmup
  return wave;
}

void Engine::update(Replica& rep, const SchedulerOutput& so, const ModelOutput& out) {
  if (out.step != so.step)
    throw std::logic_error(fmt::format("output of step {} while step {} was expected", out.step, so.step));
  if (so.synthesized) return;
  rep.scheduler->update(so, out);
  if (rt_.events().active()) publish(rt_, Probe{-1, so.step, -1, rep.actor}, core::StepReturnedProbe{});
  publish_ledger(rep);
  if (cfg_.instance() == Instance::prefill) send_exports(rep);
}

// Each replica's output of the wave, replica by replica.
void Engine::receive(const Wave& wave) {
  for (size_t r = 0; r < replicas_.size(); ++r) update(replicas_[r], *wave[r], next_output(replicas_[r]));
}

void Engine::run_wave_synchronously(const Wave& wave) {
  if (wave.empty()) return;
  broadcast_wave(wave);
  receive(wave);
}

bool Engine::all_done() const {
  for (const Replica& rep : replicas_)
    if (!rep.scheduler->done()) return false;
  return true;
}

// Warmup (DESIGN §6.3), every rank in lock-step.
void Engine::warmup() {
  const Faults& f = cfg_.faults;
  if (!f.warmup_feedback) broadcast(Command::disable_feedback);
  broadcast(Command::preload);
  broadcast(Command::warmup_decode_update);
  auto keep_dummies = [&] {
    for (Replica& rep : replicas_)
      if (!rep.scheduler->dummies_live())
        rep.scheduler->add_dummies(std::min(2, rep.cfg->serving.max_num_seqs), cfg_.warmup_prompt_len(),
                                   cfg_.warmup_max_tokens());
  };
  for (int i = 0; i < cfg_.serving.warmup_steps; ++i) {
    keep_dummies();
    Wave wave = schedule(true);
    if (wave.empty()) break;
    for (auto& so : wave) so->dummy = true;  // synthetic: sampled outputs discarded, the drafter does not run
    run_wave_synchronously(wave);
  }
  if (cfg_.topology.pp > 1) {
    // One step with the real feedback path on every rank, so that its pairing is exercised.
    broadcast(Command::enable_feedback);
    keep_dummies();
    run_wave_synchronously(schedule(true));
    broadcast(Command::reset_feedback);
  }
  broadcast(Command::capture);
  for (Replica& rep : replicas_) {
    rep.scheduler->finish_dummies();
    publish_ledger(rep);
  }
  broadcast(Command::serve);
}

void Engine::engine_core() {
  warmup();
  start_serving();
  // ---- serving: async scheduling, batch queue of depth pp (or pp + 1: the lookahead batch) ----
  std::deque<Wave> in_flight;
  while (!all_done()) {
    for (Replica& rep : replicas_) rep.scheduler->admit_until(rt_.now());
    while (static_cast<int>(in_flight.size()) < cfg_.batches_in_flight()) {
      Wave wave = schedule(false);
      if (wave.empty()) break;
      for (const auto& so : wave)
        if (!so->requests.empty()) {
          ++serving_steps_;
          break;
        }
      broadcast_wave(wave);
      in_flight.push_back(std::move(wave));
    }
    if (in_flight.empty()) {
      if (all_done()) break;  // the schedule itself ended the last requests (an abort while their KV loaded)
      if (wait_idle()) continue;
      stall();
      return;
    }
    receive(in_flight.front());
    in_flight.pop_front();
  }
  // The steps still in flight hold requests that ended meanwhile (an abort in flight): their
  // outputs return, and the blocks they fenced with them.
  for (; !in_flight.empty(); in_flight.pop_front()) receive(in_flight.front());
  if (rt_.events().active())
    for (const Replica& rep : replicas_) publish(rt_, Probe{-1, next_step_, -1, rep.actor}, core::ServingEndedProbe{});
  broadcast(Command::shutdown);
  stop_connectors();
  completed_ = true;
}

std::vector<RequestRecord> Engine::records() const {
  std::vector<RequestRecord> out;
  for (const Replica& rep : replicas_)
    for (const RequestRecord& r : rep.scheduler->records()) out.push_back(r);
  return out;
}

ServingStats Engine::stats() const {
  ServingStats s;
  s.steps = serving_steps_;
  s.numbered_steps = next_step_;
  s.warmup_steps = warmup_steps_;
  s.dummy_batches = dummy_batches_;
  for (const RequestRecord& r : records()) {
    if (r.dummy) continue;
    s.output_tokens += static_cast<int64_t>(r.output.size());
    for (const auto& d : r.verified_drafts) s.drafts_verified += static_cast<int64_t>(d.size());
    s.drafts_accepted += r.accepted_drafts;
    s.preemptions += r.preemptions;
    s.preempted_in_step += r.preempted_in_step;
    s.steps_ahead += r.steps_ahead;
    s.prefix_hit_blocks += r.prefix_hit_blocks;
  }
  for (const Replica& rep : replicas_) {
    s.prefix_evictions += rep.scheduler->pool().evictions();
    s.budget_below_k += rep.scheduler->steps_budget_below_k();
  }
  return s;
}

}  // namespace ppspec::engine
