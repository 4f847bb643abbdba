// The target model's part on this rank: its stage's layers over its TP shard of the deep lanes,
// the embedding on the first stage, the head on the last; the hidden state exchanged between
// stages. forward() is what the decode graphs capture.
#pragma once

#include <vector>

#include "engine/checkpoint.h"
#include "engine/eagle_taps.h"
#include "engine/rank_context.h"
#include "engine/recurrent_state.h"
#include "engine/request_tables.h"
#include "engine/step_inputs.h"

namespace ppspec::engine {

class TargetModel {
 public:
  explicit TargetModel(RankContext& ctx);
  // This stage's part of the checkpoint (the target embedding lives on stage 0 only).
  void load_checkpoint();
  // Every kernel of the stage over `rows` rows (TP all-reduces on `tp`, when TP > 1).
  void forward(int32_t rows, const StepInputs& in, const RequestTables& tables, core::Communicator* tp);
  const LayerRange& layers() const { return layers_; }
  // This stage's recurrent layers' states (none: any() is false).
  RecurrentState& recurrent() { return recurrent_; }
  // The KV cache of `layer` on this rank ([slots, lanes/TP]); null where the stage does not hold
  // the layer or the layer keeps a recurrent state instead. The context lane's ([slots]) on the
  // first stage; null elsewhere. (A disaggregated instance's KV connector copies through them.)
  const core::Buffer* kv_cache(int layer) const;
  const core::Buffer* context_kv() const { return ctx_.first ? &ctx_kv_ : nullptr; }
  // EAGLE: the taps its tapped layers produce inside the forward (null: none).
  void bind_taps(EagleTaps* taps) { taps_ = taps; }

  core::Buffer ctx;       // [max_rows] u32: the context lane, sent to the next stage
  core::Buffer hidden;    // [max_rows, lanes/TP] u32: the deep lanes, sent to the next stage
  core::Buffer mix;       // [max_rows, lanes] u32: a layer's partial sums (all-reduced over TP)
  core::Buffer head_out;  // [max_rows] u32
  core::Buffer greedy;    // [max_rows] i64
  // The target's embedding: allocated on every stage, loaded on the first only (a PPMissingLayer
  // elsewhere), so that aliasing it elsewhere reads memory nothing wrote, as it would.
  core::Buffer embed_tokens;

 private:
  // The forward's row inputs (`in`) are built once per forward, not per layer.
  void attend(int32_t rows, const StepInputs& inputs, const kernels::RowInputs& in, size_t li);
  RankContext& ctx_;
  LayerRange layers_;
  core::Buffer ctx_kv_, embed_deep_, lm_head_;
  std::vector<core::Buffer> kv_, w_, u_, v_;  // per own layer (a recurrent layer has no KV)
  RecurrentState recurrent_;
  EagleTaps* taps_ = nullptr;
};

}  // namespace ppspec::engine
