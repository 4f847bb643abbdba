#include "engine/expert_dispatch.h"

#include <vector>

#include "core/assert.h"
#include "engine/span_of.h"
#include "kernels/expert_dispatch.h"

namespace ppspec::engine {

namespace kn = ppspec::kernels;

ExpertDispatch::ExpertDispatch(RankContext& ctx, core::Communicator& group, int64_t max_rows)
    : ctx_(ctx), group_(group), dp_(group.size()), top_(ctx.cfg.model.topk), max_rows_(max_rows) {
  using core::Dtype;
  PPSPEC_ASSERT(dp_ >= 2 && max_rows_ >= 1, "expert parallelism over {} replicas, {} rows", dp_, max_rows_);
  const int64_t entries = dp_ * max_rows_ * top_;
  scale_ = ctx.alloc(Dtype::f32, ctx.cfg.model.experts, 1, "ep.experts");
  send_ids_ = ctx.alloc(Dtype::i32, entries, 1, "ep.dispatch_ids");
  send_weights_ = ctx.alloc(Dtype::f32, entries, 1, "ep.dispatch_weights");
  recv_ids_ = ctx.alloc(Dtype::i32, entries, 1, "ep.received_ids");
  recv_weights_ = ctx.alloc(Dtype::f32, entries, 1, "ep.received_weights");
  partial_ = ctx.alloc(Dtype::i32, dp_ * max_rows_, 1, "ep.expert_out");
  returned_ = ctx.alloc(Dtype::i32, dp_ * max_rows_, 1, "ep.combined");
}

void ExpertDispatch::load_checkpoint() {
  std::vector<float> mine = ctx_.ckpt.expert_scale;
  for (size_t e = 0; e < mine.size(); ++e)
    if (static_cast<int>(e) % dp_ != group_.rank()) mine[e] = 0.0f;
  ctx_.upload(scale_, mine);
}

void ExpertDispatch::run(int64_t step, int32_t rows, const core::Buffer& topk_ids, const core::Buffer& topk_weights,
                         const core::Buffer& confidence) {
  PPSPEC_ASSERT(rows >= 1 && rows <= max_rows_, "an expert-parallel MoE over {} rows (room for {})", rows, max_rows_);
  const int64_t entries = static_cast<int64_t>(dp_) * rows * top_;
  ctx_.run("ep_dispatch_pack", "",
           kn::EpDispatchPackKernel{rows, top_, dp_, span_of<int32_t>(topk_ids), span_of<float>(topk_weights),
                                    span_of<int32_t>(send_ids_), span_of<float>(send_weights_)},
           rows);
  // Dispatch: chunk p of each buffer goes to replica p; chunk p received came from replica p.
  group_.all_to_all(send_ids_.rows(0, entries), recv_ids_.rows(0, entries), ctx_.main,
                    core::Label{"ep.dispatch_ids", step});
  group_.all_to_all(send_weights_.rows(0, entries), recv_weights_.rows(0, entries), ctx_.main,
                    core::Label{"ep.dispatch_weights", step});
  ctx_.run("ep_experts", "",
           kn::EpExpertsKernel{top_, span_of<int32_t>(recv_ids_), span_of<float>(recv_weights_), span_of<float>(scale_),
                               span_of<int32_t>(partial_)},
           static_cast<int64_t>(dp_) * rows);
  // Combine: each received chunk's outputs go back to the replica it came from.
  const int64_t outputs = static_cast<int64_t>(dp_) * rows;
  group_.all_to_all(partial_.rows(0, outputs), returned_.rows(0, outputs), ctx_.main, core::Label{"ep.combine", step});
  ctx_.run("ep_combine", "", kn::EpCombineKernel{rows, dp_, span_of<int32_t>(returned_), span_of<float>(confidence)},
           rows);
}

}  // namespace ppspec::engine
