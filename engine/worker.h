// One rank of the serving system: the model runner of its pipeline stage and tensor-parallel
// shard (vLLM MRV2 `GPUModelRunner` + `Worker`), written only against the runtime interface.
// Per step it runs execute_model then sample_tokens in the order of DESIGN §6.2 (Worker::step).
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "core/runtime.h"
#include "engine/accepted_readback.h"
#include "engine/checkpoint.h"
#include "engine/config.h"
#include "engine/draft_budget.h"
#include "engine/drafter.h"
#include "engine/eagle_taps.h"
#include "engine/kv_connector.h"
#include "engine/messages.h"
#include "engine/pp_handler.h"
#include "engine/rank_context.h"
#include "engine/request_tables.h"
#include "engine/sampler.h"
#include "engine/communicators.h"
#include "engine/data_parallel.h"
#include "engine/step_inputs.h"
#include "engine/target_model.h"
#include "engine/write_check.h"

namespace ppspec::engine {

// One rank: its parts, each owning its buffers (request tables, step inputs, target model, write
// checks; on the last stage the sampler and the drafter), its communicators and feedback handler.
class Worker {
 public:
  // `cfg` is the rank's replica's; `outputs` the channel the replica's last stage returns outputs on.
  Worker(core::Runtime& rt, core::RankId rank, const EngineConfig& cfg, const Checkpoint& ckpt, std::string outputs);
  ~Worker();

  // The actor's body: initialise communicators, then serve commands until shutdown.
  void run();
  // A disaggregated instance's rank: its KV connector (engine/kv_connector.h), made before the
  // actor starts, whose own actor the engine spawns; null otherwise.
  KvConnector* attach_connector();

  // What the host last read back of a step's accepted counts (engine/accepted_readback.h); null
  // on ranks that do not read them. Meant for a host-side decision such as an adaptive draft budget.
  const AcceptedCounts* accepted_last_step() const { return accepted_ ? &accepted_->last() : nullptr; }

 private:
  // ---- commands ----
  void init_communicators();
  void load_checkpoint();
  void step(const SchedulerOutput& so);
  void preload();
  void warmup_decode_update();
  void capture_graphs();
  void phase(core::WarmupPhase phase);

  // ---- the parts of a step (model_runner.cc) ----
  void deferred_update();
  void probe_adopted(PrevOutputs p);
  void probe_stage_output(const SchedulerOutput& so);
  void exchange_activations(const SchedulerOutput& so, int32_t rows, bool receive);
  void forward(int32_t rows, int64_t step);
  // Data parallelism: the step's rows padded to the replicas' largest, or this replica's own.
  int32_t rows_across_replicas(const SchedulerOutput& so);
  // An idle replica's dummy batch (so.dp_dummy): the forward over padding rows, without the
  // pipeline's transfers (vLLM's dummy run makes its intermediate tensors locally), then on the
  // last stage the drafter's dummy proposal, with every collective the busy replicas post.
  void dummy_batch(const SchedulerOutput& so, int32_t padded);
  void return_idle_output(const SchedulerOutput& so);
  void sample_last_stage(const SchedulerOutput& so);
  void relay_drafts(const SchedulerOutput& so, FeedbackBuffers& slot, int drafted);
  void send_output(const SchedulerOutput& so, FeedbackBuffers& slot, const std::vector<int32_t>& draft_rows,
                   int32_t budget);
  int32_t decide_draft_budget(const SchedulerOutput& so, bool drafts);

  int32_t graph_size(int32_t tokens) const;
  core::Communicator* tp() const { return ctx_.tp > 1 ? tp_comm_ : nullptr; }

  RankContext ctx_;
  InputStaging staging_;  // with pin_memory, what tables_ and inputs_ stage their host writes through
  RequestTables tables_;
  StepInputs inputs_;
  TargetModel model_;
  std::unique_ptr<EagleTaps> taps_;  // EAGLE: where tapped layers are, and on the last stage
  WriteCheck check_;
  std::unique_ptr<Sampler> sampler_;            // last stage
  std::unique_ptr<Drafter> drafter_;            // last stage, K > 0
  std::unique_ptr<DraftBudget> draft_budget_;   // last stage, adaptive budget
  std::unique_ptr<AcceptedReadback> accepted_;  // AcceptedReadback::wanted
  std::unique_ptr<KvConnector> connector_;      // a disaggregated instance's
  core::Communicator* tp_comm_ = nullptr;
  core::Communicator* pp_comm_ = nullptr;
  core::Communicator* bcast_comm_ = nullptr;
  core::Communicator* dp_comm_ = nullptr;  // dp > 1: this stage and TP shard across the replicas
  std::unique_ptr<DataParallel> dp_;
  std::unique_ptr<PPHandler> pp_handler_;
  std::map<int32_t, core::Graph> graphs_;  // by padded row count
  // EAGLE: what each graph's captured forward digested into the taps (engine/eagle_taps.h).
  std::map<int32_t, std::vector<int64_t>> graph_taps_;
  std::deque<std::string> call_sites_;      // "execute_model step N", one per step: stable addresses
  FeedbackBuffers own_slot_;                // the sampler's outputs when pp = 1 (no feedback handler)
  core::Buffer prev_idx_, prev_query_len_;  // the deferred update's rows (earlier stages)
  // Host copies read back after a step (last stage, tp rank 0).
  std::vector<int64_t> host_sampled_;
  std::vector<int32_t> host_counts_;
  std::vector<int64_t> host_drafts_;
  std::vector<int32_t> host_inputs_;
};

}  // namespace ppspec::engine
