// The serving system on a runtime: the engine core (scheduler, batch queue of depth pp, warmup
// protocol) and one worker per rank, all as actors; communicators per topology. With dp > 1 the
// core drives dp replicas, each with its own scheduler, requests and workers, in waves: every
// replica takes every step, one with nothing to run a dummy batch (engine/data_parallel.h).
#pragma once

#include <any>
#include <cstdint>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "core/runtime.h"
#include "engine/checkpoint.h"
#include "engine/config.h"
#include "engine/kv_connector.h"
#include "engine/scheduler.h"
#include "engine/worker.h"

namespace ppspec::engine {

struct ServingStats {
  int64_t steps = 0;  // serving steps (batches) that scheduled requests
  // Every step the engine numbered, warmup included: a finding's "engine step N" counts these
  // from 0, and the first warmup_steps of them were warmup.
  int64_t numbered_steps = 0;
  int64_t warmup_steps = 0;
  int64_t output_tokens = 0;
  int64_t drafts_verified = 0;
  int64_t drafts_accepted = 0;
  int64_t preemptions = 0;
  int64_t preempted_in_step = 0;  // of them, of a request whose row the step had already scheduled
  int64_t steps_ahead = 0;        // request steps scheduled while the request's previous step was in flight
  int64_t prefix_hit_blocks = 0;  // blocks requests reused from the prefix cache
  int64_t prefix_evictions = 0;   // cached blocks given for new content
  int64_t budget_below_k = 0;     // steps whose adaptive draft budget was below K
  int64_t dummy_batches = 0;      // dp > 1: serving steps a replica ran as a dummy batch
  double acceptance_rate() const {
    return drafts_verified == 0 ? 0 : static_cast<double>(drafts_accepted) / static_cast<double>(drafts_verified);
  }
  double tokens_per_step() const {
    return steps == 0 ? 0 : static_cast<double>(output_tokens) / static_cast<double>(steps);
  }
};

class Engine {
 public:
  Engine(const EngineConfig& cfg, core::Runtime& rt);
  ~Engine();
  // Declares the communicators and spawns the actors; the caller runs the runtime.
  void install();

  const Checkpoint& checkpoint() const { return ckpt_; }
  // Every replica's requests and warmup dummies, replica by replica.
  std::vector<RequestRecord> records() const;
  ServingStats stats() const;
  bool completed() const { return completed_ && (!prefill_ || prefill_->completed()); }
  // A disaggregated decode instance's prefill instance (null otherwise).
  const Engine* prefill_instance() const { return prefill_.get(); }

 private:
  // One data-parallel replica: its configuration (its share of the slots), scheduler, and the name
  // its engine probes carry, which is also the channel its last stage returns outputs on.
  struct Replica {
    std::unique_ptr<EngineConfig> cfg;
    std::unique_ptr<Scheduler> scheduler;
    std::string actor;
  };
  // One step of every replica; empty when no replica's scheduler had a step.
  using Wave = std::vector<std::shared_ptr<SchedulerOutput>>;

  void engine_core();
  // ---- disaggregation (engine/disaggregation.h; engine/engine_remote.cc) ----
  // The next message on the replica's channel that is its step output; a connector's report or
  // the prefill instance's export that comes first is handled on the way.
  ModelOutput next_output(Replica& r);
  void handle_kv_message(Replica& r, const std::any& m);
  // Idle with nothing to schedule: wait for the next arrival, or for a message that may bring one.
  // Waits for what comes next (an arrival, a peer's message); false when nothing will come.
  bool wait_idle();
  // Nothing in flight, nothing to arrive, and waiting requests no schedule admits: each replica's
  // engine_stalled probe says what they wait for; the run ends there, not completed.
  void stall();
  void start_serving();  // warmup is over: the exports that arrived meanwhile are queued
  // `stepped`: the schedule that started them made a step (else the pulls belong to the last one).
  void send_loads(Replica& r, bool stepped);
  void send_exports(Replica& r);
  void stop_connectors();
  void install_disaggregation();
  void warmup();
  void broadcast(Command c);
  void broadcast_wave(const Wave& wave);
  void run_wave_synchronously(const Wave& wave);
  Wave schedule(bool warmup);
  void receive(const Wave& wave);
  void update(Replica& r, const SchedulerOutput& so, const ModelOutput& out);
  // `at_step` >= 0: every entry told at that step (a schedule that made no step of its own).
  void publish_ledger(Replica& r, int64_t at_step = -1);
  void publish_batch(const Replica& r, const SchedulerOutput& so, bool warmup);
  bool all_done() const;

  const EngineConfig& cfg_;
  core::Runtime& rt_;
  Checkpoint ckpt_;
  std::vector<Replica> replicas_;
  std::vector<std::unique_ptr<Worker>> workers_;
  int64_t next_step_ = 0;
  int64_t serving_steps_ = 0;
  int64_t warmup_steps_ = 0;  // the step ids warmup used
  int64_t dummy_batches_ = 0;
  bool completed_ = false;
  // Disaggregation: the decode instance owns the prefill instance; each counts its connectors'
  // reports per request until it has the reports it expects (every route on the prefill side,
  // every consumer rank on the decode side).
  std::unique_ptr<EngineConfig> prefill_cfg_;
  std::unique_ptr<Engine> prefill_;
  std::vector<KvConnector*> connectors_;
  std::map<int64_t, int> kv_reports_;
  std::set<int64_t> kv_counted_;
  // The decode instance: exports that arrived during its warmup, admitted once it serves (vLLM's
  // engine takes no request before its warmup ends). Bounded by the workload.
  std::vector<KvExport> early_exports_;
  bool serving_ = false;  // requests whose reports reached the count (bounded by the workload)
  int kv_reports_expected_ = 0;
};

}  // namespace ppspec::engine
