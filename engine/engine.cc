#include "engine/engine.h"

#include <deque>
#include <fmt/format.h>
#include <stdexcept>

#include "engine/probe.h"
#include "engine/workload.h"

namespace ppspec::engine {

Engine::Engine(const EngineConfig& cfg, core::Runtime& rt)
    : cfg_(cfg), rt_(rt), ckpt_(make_checkpoint(cfg.model)), scheduler_(std::make_unique<Scheduler>(cfg, make_workload(cfg))) {}

Engine::~Engine() = default;

void Engine::install() {
  for (const CommunicatorSpec& c : communicators(cfg_.topology)) rt_.declare_comm(c.name, c.members);
  for (core::RankId r = 0; r < cfg_.topology.ranks(); ++r) workers_.push_back(std::make_unique<Worker>(rt_, r, cfg_, ckpt_));
  rt_.spawn(core::ActorSpec{"engine", -1}, [this] { engine_core(); });
  for (core::RankId r = 0; r < cfg_.topology.ranks(); ++r)
    rt_.spawn(core::ActorSpec{fmt::format("rank{}.host", r), r}, [this, r] { workers_[static_cast<size_t>(r)]->run(); });
}

void Engine::broadcast(Command c, std::shared_ptr<const SchedulerOutput> so) {
  for (core::RankId r = 0; r < cfg_.topology.ranks(); ++r) rt_.channel(fmt::format("worker{}", r)).send(WorkerCommand{c, so});
}

void Engine::publish_batch(const SchedulerOutput& so, bool warmup) {
  if (!rt_.events().active()) return;
  std::vector<int64_t> ids;
  for (const auto& r : so.requests) ids.push_back(r.id);
  publish(rt_, Probe{-1, so.step, -1, "engine"},
          core::BatchScheduledProbe{warmup ? core::StepKind::warmup : core::StepKind::serving, so.num_tokens, ids});
  // What the engine core computed for each request: the positions every stage must embed; and a
  // new request's prompt, the context of the reference drafter (verify/monitors/drafter_reference.h).
  for (const auto& r : so.requests) {
    std::vector<int64_t> prompt;  // the trace's integers are 64-bit; the prompt's tokens are not
    for (const NewRequest& n : so.new_requests)
      if (n.id == r.id) prompt.assign(n.prompt.begin(), n.prompt.end());
    publish(rt_, Probe{-1, so.step, r.id, "engine"},
            core::RequestScheduledProbe{r.num_computed, r.num_tokens, r.prefill_len, r.idx, prompt});
  }
}

// What the scheduler did with blocks and request state since the last call, as probes.
void Engine::publish_ledger() {
  std::vector<LedgerEntry> ledger = scheduler_->take_ledger();
  if (!rt_.events().active()) return;
  for (const LedgerEntry& e : ledger) {
    const Probe at{-1, e.step, e.req, "engine"};
    const std::vector<int64_t> blocks(e.blocks.begin(), e.blocks.end());
    switch (e.what) {
      case LedgerEntry::What::allocated: publish(rt_, at, core::BlocksAllocatedProbe{e.first_index, blocks}); break;
      case LedgerEntry::What::freed: publish(rt_, at, core::BlocksFreedProbe{e.reason, blocks}); break;
      case LedgerEntry::What::released: publish(rt_, at, core::RequestReleasedProbe{e.reason, e.state_index, blocks}); break;
      case LedgerEntry::What::abort_arrived: publish(rt_, at, core::AbortArrivedProbe{}); break;
      case LedgerEntry::What::shared: publish(rt_, at, core::BlocksSharedProbe{e.first_index, blocks}); break;
      case LedgerEntry::What::cached: publish(rt_, at, core::BlocksCachedProbe{blocks}); break;
    }
  }
}

std::shared_ptr<SchedulerOutput> Engine::schedule(bool warmup) {
  auto so = scheduler_->schedule(next_step_);
  publish_ledger();
  if (!so) return nullptr;
  ++next_step_;
  publish_batch(*so, warmup);
  return so;
}

void Engine::update(const SchedulerOutput& so, const ModelOutput& out) {
  if (out.step != so.step) throw std::logic_error(fmt::format("output of step {} while step {} was expected", out.step, so.step));
  scheduler_->update(so, out);
  if (rt_.events().active()) publish(rt_, Probe{-1, so.step, -1, "engine"}, core::StepReturnedProbe{});
  publish_ledger();
}

void Engine::run_step_synchronously(std::shared_ptr<SchedulerOutput> so) {
  if (!so) return;
  broadcast(Command::step, so);
  update(*so, std::any_cast<ModelOutput>(rt_.channel("engine").recv()));
}

void Engine::engine_core() {
  Scheduler& sched = *scheduler_;
  const Faults& f = cfg_.faults;
  // ---- warmup (DESIGN §6.3), every rank in lock-step ----
  if (!f.warmup_feedback) broadcast(Command::disable_feedback);
  broadcast(Command::preload);
  broadcast(Command::warmup_decode_update);
  auto keep_dummies = [&] {
    if (!sched.dummies_live())
      sched.add_dummies(std::min(2, cfg_.serving.max_num_seqs), cfg_.warmup_prompt_len(), cfg_.warmup_max_tokens());
  };
  for (int i = 0; i < cfg_.serving.warmup_steps; ++i) {
    keep_dummies();
    auto so = schedule(true);
    if (!so) break;
    so->dummy = true;  // synthetic: sampled outputs discarded, the drafter does not run
    run_step_synchronously(so);
  }
  if (cfg_.topology.pp > 1) {
    // One step with the real feedback path on every rank, so that its pairing is exercised.
    broadcast(Command::enable_feedback);
    keep_dummies();
    run_step_synchronously(schedule(true));
    broadcast(Command::reset_feedback);
  }
  broadcast(Command::capture);
  sched.finish_dummies();
  publish_ledger();
  broadcast(Command::serve);

  // ---- serving: async scheduling, batch queue of depth pp (or pp + 1: the lookahead batch) ----
  core::HostChannel& outputs = rt_.channel("engine");
  std::deque<std::shared_ptr<SchedulerOutput>> in_flight;
  while (!sched.done()) {
    sched.admit_until(rt_.now());
    while (static_cast<int>(in_flight.size()) < cfg_.batches_in_flight()) {
      auto so = schedule(false);
      if (!so) break;
      if (!so->requests.empty()) ++serving_steps_;
      broadcast(Command::step, so);
      in_flight.push_back(std::move(so));
    }
    if (in_flight.empty()) {
      const auto next = sched.next_arrival();
      if (!next) throw std::logic_error("the scheduler can schedule nothing and no request will arrive");
      rt_.sleep(std::max<core::Time>(*next - rt_.now(), 1));
      continue;
    }
    const auto out = std::any_cast<ModelOutput>(outputs.recv());
    update(*in_flight.front(), out);
    in_flight.pop_front();
  }
  // The steps still in flight hold requests that ended meanwhile (an abort in flight): their
  // outputs return, and the blocks they fenced with them.
  for (; !in_flight.empty(); in_flight.pop_front()) update(*in_flight.front(), std::any_cast<ModelOutput>(outputs.recv()));
  if (rt_.events().active()) publish(rt_, Probe{-1, next_step_, -1, "engine"}, core::ServingEndedProbe{});
  broadcast(Command::shutdown);
  completed_ = true;
}

ServingStats Engine::stats() const {
  ServingStats s;
  s.steps = serving_steps_;
  for (const RequestRecord& r : scheduler_->records()) {
    if (r.dummy) continue;
    s.output_tokens += static_cast<int64_t>(r.output.size());
    for (const auto& d : r.verified_drafts) s.drafts_verified += static_cast<int64_t>(d.size());
    s.drafts_accepted += r.accepted_drafts;
    s.preemptions += r.preemptions;
    s.steps_ahead += r.steps_ahead;
    s.prefix_hit_blocks += r.prefix_hit_blocks;
  }
  s.prefix_evictions = scheduler_->pool().evictions();
  s.budget_below_k = scheduler_->steps_budget_below_k();
  return s;
}

}  // namespace ppspec::engine
