// The DSpark drafter on the last stage (vLLM's DFlash proposer): for the batch rows that sampled, a
// query block of K rows after the last valid context row, padded to a graph size; its forward over
// its own embedding table (the target's at pp = 1), a small MoE layer over every query row, and the
// drafts written to the request tables and gathered for the feedback relay.
#pragma once

#include <memory>
#include <vector>

#include "engine/data_parallel.h"
#include "engine/eagle_taps.h"
#include "engine/expert_dispatch.h"
#include "engine/messages.h"
#include "engine/pp_handler.h"
#include "engine/rank_context.h"
#include "engine/request_tables.h"
#include "engine/step_inputs.h"
#include "engine/target_model.h"
#include "engine/write_check.h"

namespace ppspec::engine {

class Drafter {
 public:
  explicit Drafter(RankContext& ctx);
  void load_checkpoint();
  // The stage's TP communicator (nullptr at tp = 1): with an adaptive budget the confidence head is
  // sharded over the TP ranks by expert, its partial confidences summed by an all-reduce.
  void bind_tp(core::Communicator* tp) { tp_ = tp; }
  // dp > 1: its forwards pad to the replicas' largest, and its MoE layer is expert-parallel over
  // the DP group (engine/data_parallel.h, engine/expert_dispatch.h). Before load_checkpoint.
  void bind_dp(DataParallel* dp);
  // A dummy proposal (vLLM propose(dummy_run=True)): `forwards` drafter forwards over padding
  // rows only, each with its DP sync and its MoE layer's all-to-alls; nothing is drafted.
  void dummy_propose(int64_t step, int forwards);
  // EAGLE: the tapped layers' outputs it drafts from (engine/eagle_taps.h).
  void bind_taps(const EagleTaps* taps) { taps_ = taps; }
  // The rank's own confidence estimate, reported beside the budget its next propose runs with.
  void note_estimate(int64_t estimate) { budget_estimate_ = estimate; }
  // Drafts for the rows that sampled (`sampled`, batch order), `budget` (1..K) per request; the
  // columns past the budget hold the MASK id. Returns how many requests drafted. `query_rows` is the
  // graph size of the query block.
  int propose(const SchedulerOutput& so, const std::vector<int32_t>& sampled, FeedbackBuffers& slot,
              RequestTables& tables, const StepInputs& in, const TargetModel& model, WriteCheck& check,
              int32_t query_rows, int32_t budget);
  // [query rows] i32: the confidence head's output of the last propose, fixed point (adaptive budget).
  const core::Buffer& confidence_fixed() const { return confidence_fixed_; }
  // [slots] u32: the drafter's KV cache (a disaggregated instance's KV connector copies through it).
  const core::Buffer& kv_cache() const { return kv_; }
  // [drafted requests, K] i64: the drafts of the last propose, in batch order.
  const core::Buffer& drafts() const { return drafts_; }

 private:
  void prepare_inputs(int64_t step, int32_t drafted, int32_t query_rows, int32_t budget, const RequestTables& tables,
                      const StepInputs& in, WriteCheck& check);
  void forward(int64_t step, int32_t drafted, int32_t budget, const TargetModel& model);
  // EAGLE's K autoregressive forwards, each through the MoE layer (`q_rows` graph rows).
  void eagle_forwards(int64_t step, int32_t drafted, int32_t q_rows, const TargetModel& model);
  // The embedding table the drafter's forwards read.
  const core::Buffer& embedding(const TargetModel& model) const;
  // The first forward tells the checkers which table the drafter read.
  void probe_table(int64_t step, kernels::Span<const uint32_t> table);
  // The KV slots the drafter's context rows and query rows go through, per request, as
  // prepare_dflash_inputs stored them (kv_slots probes).
  void probe_kv_slots(int64_t step, const std::vector<int64_t>& ids, const std::vector<int32_t>& ctx_start,
                      const std::vector<int32_t>& ctx_end, int32_t budget);
  // The MoE layer; `probe`: report its padding rows (once per propose).
  void route(int64_t step, int32_t used_rows, int32_t query_rows, bool probe = true);
  void sum_confidence(int64_t step, int32_t query_rows);
  void probe_proposed(int64_t step, const std::vector<int64_t>& ids, int32_t budget);

  // One drafter forward's row count: this replica's, or under DP the replicas' largest.
  int32_t forward_rows(int64_t step, int32_t rows);

  RankContext& ctx_;
  core::Communicator* tp_ = nullptr;
  DataParallel* dp_ = nullptr;
  std::unique_ptr<ExpertDispatch> experts_;  // dp > 1
  const EagleTaps* taps_ = nullptr;
  int64_t budget_estimate_ = 0;
  bool probed_table_ = false;  // the table the drafter reads was reported to the checkers
  core::Buffer embed_;         // pp > 1: the drafter's own "embed.weight"
  core::Buffer kv_;
  // The draft batch, by draft row.
  core::Buffer idx_, ctx_start_, ctx_end_, num_sampled_, num_rejected_, anchor_, batch_row_, block_rows_;
  // prepare_dflash_inputs' outputs.
  core::Buffer ctx_positions_, ctx_slots_, input_ids_, positions_, is_padding_, query_slots_, sample_idx_, sample_pos_,
      sample_map_, query_start_, seq_lens_, temperature_, seeds_, next_prefill_;
  // The MoE layer.
  core::Buffer gating_, router_bias_, topk_ids_, topk_weights_, expert_scale_, confidence_;
  core::Buffer confidence_fixed_;  // adaptive budget: the confidences, summed over the TP shards
  core::Buffer drafts_;
  core::Buffer eagle_state_, eagle_cursor_;  // EAGLE: per drafted request, between its forwards
  core::DeviceEvent gathered_after_;         // the unordered_draft_gather fault's side-stream wait
};

}  // namespace ppspec::engine
