// One rank of the serving system: the model runner of its pipeline stage and tensor-parallel
// shard (vLLM MRV2 `GPUModelRunner` + `Worker`), written only against the runtime interface.
// Per step it runs execute_model then sample_tokens in the order of DESIGN §6.2.
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
#include "engine/checkpoint.h"
#include "engine/config.h"
#include "engine/kernel_launch.h"
#include "engine/messages.h"
#include "engine/pp_handler.h"

namespace ppspec::engine {

// Names of the communicators of a topology, in the order every rank initialises them.
std::string tp_group(int stage);
std::string pp_group(int tp_rank);
std::string pp_broadcast_group(int tp_rank);
bool is_pp_broadcast_group(std::string_view name);  // a feedback communicator, of any TP column
std::vector<std::pair<std::string, std::vector<core::RankId>>> communicators(const Topology& t);

// What a worker tells the runtime it is doing while it runs a step ("execute_model step N"), so that
// reports of what its host thread did there (a module load, a blocking call) name the step; and back.
std::string step_call_site(int64_t step);
std::optional<int64_t> step_of_call_site(std::string_view call_site);

class Worker {
 public:
  Worker(core::Runtime& rt, core::RankId rank, const EngineConfig& cfg, const Checkpoint& ckpt);
  ~Worker();

  // The actor's body: initialise communicators, then serve commands until shutdown.
  void run();

 private:
  struct Kernel;  // a launch helper (worker.cc)

  // ---- commands ----
  void step(const SchedulerOutput& so);
  void preload();
  void warmup_decode_update();
  void capture_graphs();
  void phase(const char* name);

  // ---- execute_model ----
  void deferred_update();
  void apply_requests(const SchedulerOutput& so);
  void prepare_inputs(const SchedulerOutput& so, int32_t padded_rows);
  void forward(int32_t rows, bool use_graph);
  void forward_kernels(int32_t rows);
  void exchange_activations(const SchedulerOutput& so, int32_t rows, bool receive);

  // ---- sample_tokens ----
  void sample_tokens(const SchedulerOutput& so, int32_t padded_rows);
  void sample_last_stage(const SchedulerOutput& so, int32_t padded_rows);
  void probe_sampled(const SchedulerOutput& so, FeedbackBuffers& slot);
  int propose_drafts(const SchedulerOutput& so, const std::vector<int32_t>& rows_with_samples, FeedbackBuffers& slot);
  void prepare_draft_inputs(int64_t step, int32_t draft_rows, int32_t query_rows);
  void draft_forward(int64_t step, int32_t draft_rows);
  void route_draft_rows(int64_t step, int32_t used_rows, int32_t query_rows);
  void send_output(const SchedulerOutput& so, FeedbackBuffers& slot, const std::vector<int32_t>& draft_rows);

  // ---- write checks (kernels/write_check.h): which rows the next kernel really stores ----
  void poison_rows(const std::vector<core::Buffer>& bufs, int64_t first, int64_t last);
  void restore_unwritten(const std::vector<core::Buffer>& bufs, int64_t first, int64_t last);
  // The per-element flags of the last check: [bands, check_stride_] u8, band b for bufs[b].
  core::Buffer unwritten_rows(size_t bands, int64_t first, int64_t last) const;

  int32_t graph_size(int32_t tokens) const;
  // Launches a row kernel on this rank (engine/kernel_launch.h); `spec` must be a literal.
  template <typename K>
  void run(core::Stream s, const char* name, const char* spec, const K& k, int64_t rows) {
    launch_kernel(dev_, s, core::KernelRef{name, spec}, k, rows);
  }
  core::Buffer alloc(core::Dtype d, int64_t rows, int64_t cols, const char* name);
  template <typename T>
  void upload(const core::Buffer& dst, const std::vector<T>& values);

  core::Runtime& rt_;
  core::Device& dev_;
  const EngineConfig& cfg_;
  const Checkpoint& ckpt_;
  core::RankId rank_;
  int stage_;
  int tp_rank_;
  int pp_;
  int tp_;
  int k_;
  bool first_;
  bool last_;
  LayerRange layers_;
  int32_t lane_begin_;
  int32_t lane_count_;
  int32_t max_reqs_;
  int32_t max_rows_;
  int32_t max_blocks_;
  int64_t num_slots_;
  core::Stream main_;
  core::Stream side_;
  core::Communicator* tp_comm_ = nullptr;
  core::Communicator* pp_comm_ = nullptr;
  core::Communicator* bcast_comm_ = nullptr;
  std::unique_ptr<PPHandler> pp_handler_;
  std::map<int32_t, core::Graph> graphs_;  // by padded row count
  int64_t steps_ = 0;
  bool embed_probed_ = false;
  std::deque<std::string> call_sites_;  // "execute_model step N", one per step: stable addresses  // the drafter's table was reported to the checkers

  // Request state (vLLM RequestState), by req-state index.
  core::Buffer last_sampled_, draft_tokens_, num_computed_, prefill_len_, total_len_, prompt_, block_table_;
  core::Buffer seeds_, spread_, temperature_;
  // Input buffers (vLLM InputBuffers), by row.
  core::Buffer input_ids_, positions_, slots_, is_padding_, row_req_;
  core::Buffer query_start_, idx_mapping_, query_len_;
  // Hidden state and model.
  core::Buffer c_, x_, y_, h_, greedy_;
  core::Buffer ctx_kv_, embed_ctx_, embed_deep_, head_;
  std::vector<core::Buffer> kv_, w_, u_, v_;  // per own layer
  // Sampler (last stage), by batch row.
  core::Buffer logit_start_, num_logits_, b_seeds_, b_out_index_, b_spread_;
  // Drafter (last stage).
  core::Buffer draft_embed_, draft_kv_, d_idx_, d_ctx_start_, d_ctx_end_, d_num_sampled_, d_num_rejected_, d_anchor_;
  core::Buffer d_ctx_pos_, d_ctx_slots_, d_input_ids_, d_positions_, d_is_padding_, d_slots_, d_sample_idx_,
      d_sample_pos_, d_sample_map_, d_qsl_, d_seq_lens_, d_temperature_, d_seeds_, d_next_prefill_, d_gating_,
      d_router_bias_, d_topk_ids_, d_topk_w_, d_expert_scale_, d_confidence_, d_drafts_;
  core::Buffer d_brow_;      // the batch row of each draft row
  core::Buffer d_block_rows_;  // the block-table row of each draft row
  // Write checks: the saved bytes and the unstored flags of up to three buffers.
  core::Buffer check_saved_, check_unwritten_;
  std::vector<core::Buffer> allocated_;  // every buffer above, poisoned when the actor starts
  int64_t check_stride_ = 0;  // rows per band
  FeedbackBuffers own_slot_;  // the sampler's outputs when pp = 1 (no feedback handler)
  // Deferred update (earlier stages).
  core::Buffer prev_idx_, prev_query_len_;
  // Host copies read back after a step (last stage, tp rank 0).
  std::vector<int64_t> host_sampled_;
  std::vector<int32_t> host_counts_;
  std::vector<int64_t> host_drafts_;
  std::vector<int32_t> host_inputs_;
};

template <typename T>
void Worker::upload(const core::Buffer& dst, const std::vector<T>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  dev_.upload(main_, dst, std::move(bytes));
}

}  // namespace ppspec::engine
