// The drafter's MoE experts, expert-parallel over the data-parallel group (kernels/expert_dispatch.h):
// expert e on replica e % dp; the routing entries dispatched by one all-to-all per field, the
// owners' outputs combined by another. Every replica of the group runs it for every drafter forward,
// a dummy batch's included, with the same row count (engine/data_parallel.h): the all-to-alls have
// equal chunks.
#pragma once

#include <cstdint>

#include "core/runtime.h"
#include "engine/rank_context.h"

namespace ppspec::engine {

class ExpertDispatch {
 public:
  ExpertDispatch(RankContext& ctx, core::Communicator& group, int64_t max_rows);
  // This replica's experts: the checkpoint's scales of the experts it owns, 0 for the others.
  void load_checkpoint();
  // The experts' output (the confidence head) for `rows` rows routed by topk_ids / topk_weights.
  void run(int64_t step, int32_t rows, const core::Buffer& topk_ids, const core::Buffer& topk_weights,
           const core::Buffer& confidence);

 private:
  RankContext& ctx_;
  core::Communicator& group_;
  int dp_;
  int top_;
  int64_t max_rows_;
  core::Buffer scale_;                    // [experts] f32, this replica's
  core::Buffer send_ids_, send_weights_;  // [dp * rows * top]
  core::Buffer recv_ids_, recv_weights_;  // [dp * rows * top]
  core::Buffer partial_, returned_;       // [dp * rows] i32
};

}  // namespace ppspec::engine
