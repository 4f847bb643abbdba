// Data parallelism across replicas (vLLM's DP engines with an expert-parallel MoE): per forward the
// replicas' ranks that hold the same stage and TP shard agree on the forward's row count, and every
// one pads to the largest (vLLM coordinate_batch_across_dp: each rank writes its count into its
// slot of a [dp] tensor of zeros, an all-reduce (sum) over the DP group gives num_tokens_across_dp;
// the graphs and the MoE all-to-alls need the same size on every replica).
// The target's step is one forward; the drafter's propose is one (DSpark) or K (EAGLE), each with
// its sync and its MoE layer. A replica with nothing to run runs a dummy batch through both, so
// that every collective of the group has its counterpart (vLLM execute_dummy_batch, #26217, #35294).
//
// Simplification: vLLM all-reduces the counts on the CPU (a gloo group); here it is a device
// all-reduce on the group's communicator, downloaded and waited for, so the counts are ordered with
// the group's other collectives the way vLLM's forward context orders them.
#pragma once

#include <cstdint>
#include <vector>

#include "core/runtime.h"
#include "engine/rank_context.h"

namespace ppspec::engine {

class DataParallel {
 public:
  // What a forward's count is for: the label its all-reduce carries.
  enum class Forward : uint8_t { target, drafter };

  DataParallel(RankContext& ctx, core::Communicator& group);
  // The largest of the replicas' `rows` for this forward; blocks until the all-reduce is done.
  int32_t max_rows(int32_t rows, int64_t step, Forward forward);
  core::Communicator& group() const { return group_; }

 private:
  RankContext& ctx_;
  core::Communicator& group_;
  core::Buffer counts_;  // [dp] i32: num_tokens_across_dp
  std::vector<int32_t> host_counts_;
};

}  // namespace ppspec::engine
