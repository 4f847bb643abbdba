// The serving system on a runtime: the engine core (scheduler, batch queue of depth pp, warmup
// protocol) and one worker per rank, all as actors; communicators per topology.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/runtime.h"
#include "engine/checkpoint.h"
#include "engine/config.h"
#include "engine/scheduler.h"
#include "engine/worker.h"

namespace ppspec::engine {

struct ServingStats {
  int64_t steps = 0;           // serving steps (batches) run
  int64_t output_tokens = 0;
  int64_t drafts_verified = 0;
  int64_t drafts_accepted = 0;
  int64_t preemptions = 0;
  int64_t steps_ahead = 0;     // request steps scheduled while the request's previous step was in flight
  int64_t prefix_hit_blocks = 0;  // blocks requests reused from the prefix cache
  int64_t prefix_evictions = 0;   // cached blocks given for new content
  int64_t budget_below_k = 0;     // steps whose adaptive draft budget was below K
  double acceptance_rate() const { return drafts_verified == 0 ? 0 : static_cast<double>(drafts_accepted) / static_cast<double>(drafts_verified); }
  double tokens_per_step() const { return steps == 0 ? 0 : static_cast<double>(output_tokens) / static_cast<double>(steps); }
};

class Engine {
 public:
  Engine(const EngineConfig& cfg, core::Runtime& rt);
  ~Engine();
  // Declares the communicators and spawns the actors; the caller runs the runtime.
  void install();

  const Checkpoint& checkpoint() const { return ckpt_; }
  const Scheduler& scheduler() const { return *scheduler_; }
  ServingStats stats() const;
  bool completed() const { return completed_; }

 private:
  void engine_core();
  void broadcast(Command c, std::shared_ptr<const SchedulerOutput> so = nullptr);
  void run_step_synchronously(std::shared_ptr<SchedulerOutput> so);
  std::shared_ptr<SchedulerOutput> schedule(bool warmup);
  void update(const SchedulerOutput& so, const ModelOutput& out);
  void publish_ledger();
  void publish_batch(const SchedulerOutput& so, bool warmup);

  const EngineConfig& cfg_;
  core::Runtime& rt_;
  Checkpoint ckpt_;
  std::unique_ptr<Scheduler> scheduler_;
  std::vector<std::unique_ptr<Worker>> workers_;
  int64_t next_step_ = 0;
  int64_t serving_steps_ = 0;
  bool completed_ = false;
};

}  // namespace ppspec::engine
