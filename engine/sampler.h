// The last stage's sampler: which rows carry logits, the rejection sampler over the drafts the step
// verified, and post_update of the rank's own tables; its outputs go to a feedback slot.
#pragma once

#include <vector>

#include "engine/messages.h"
#include "engine/pp_handler.h"
#include "engine/rank_context.h"
#include "engine/request_tables.h"
#include "engine/step_inputs.h"
#include "engine/target_model.h"

namespace ppspec::engine {

// Which batch rows sampled this step, and whether any verified drafts.
struct SampledRows {
  std::vector<int32_t> rows;
  bool any_drafts = false;
};

class Sampler {
 public:
  explicit Sampler(RankContext& ctx);
  // Rejection sampling into `slot` (sampled [N, K+1], counts [2, N]) and the tokens_sampled probes.
  SampledRows sample(const SchedulerOutput& so, FeedbackBuffers& slot, const RequestTables& tables,
                     const StepInputs& in, const TargetModel& model);
  // postprocess_sampled: the last stage's own post_update, at the step itself.
  void post_update(const SchedulerOutput& so, FeedbackBuffers& slot, RequestTables& tables, const StepInputs& in);

 private:
  void probe_sampled(const SchedulerOutput& so, const FeedbackBuffers& slot);
  // What the sampling seeds are folded with: the TP rank under rank_local_sampling, else 0.
  int64_t rank_salt() const;

  RankContext& ctx_;
  core::Buffer logit_start_, num_logits_, seeds_, out_index_, spread_;  // by batch row
};

}  // namespace ppspec::engine
