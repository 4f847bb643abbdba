// The recurrent layers of one rank's stage (kernels/recurrent.h): per own recurrent layer, the
// committed per-request state over this TP shard's lanes, the scratch of the last step's
// intermediate states (K + 1 per request) and the transition weights. The worker resets a
// request's state when it is admitted and commits the state at the accepted length once the count
// is known on its stage: the last stage after rejection sampling; an earlier stage after its
// optimistic num_computed advance (the whole block, as if every draft were accepted) and again
// from the deferred update's corrected count (DESIGN §6.2 step 1).
#pragma once

#include <vector>

#include "core/buffer.h"
#include "engine/checkpoint.h"
#include "engine/messages.h"
#include "engine/rank_context.h"

namespace ppspec::engine {

class RecurrentState {
 public:
  RecurrentState(RankContext& ctx, LayerRange own);
  bool any() const { return !layers_.empty(); }
  void load_checkpoint();
  // The layer's output rows from its mixed input `y` ([rows, D]) into `x` ([rows, lane_count]).
  void forward(int layer, int32_t rows, const core::Buffer& row_req, const core::Buffer& positions,
               const core::Buffer& y, const core::Buffer& v, const core::Buffer& x);
  // Zero states for the requests the step admits (new, or resumed: recomputed).
  void reset(const SchedulerOutput& so);
  // The state after num_computed[idx] tokens, for the `entries` req-state indices in `idx`
  // (-1: skipped).
  void commit(const core::Buffer& idx, int32_t entries, const core::Buffer& num_computed);
  // Preloads the kernels (warmup): a recurrent stage launches them all while serving.
  void preload();

 private:
  struct Layer {
    int index = -1;
    core::Buffer state, scratch, a, b;
  };
  RankContext& ctx_;
  int32_t window_;
  std::vector<Layer> layers_;
  core::Buffer admitted_;  // [max_reqs] i32: the reset's rows
};

}  // namespace ppspec::engine
