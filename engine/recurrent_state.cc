#include "engine/recurrent_state.h"

#include "core/assert.h"
#include "engine/span_of.h"
#include "kernels/recurrent.h"

namespace ppspec::engine {

namespace kn = ppspec::kernels;

RecurrentState::RecurrentState(RankContext& c, LayerRange own) : ctx_(c), window_(c.k + 1) {
  for (int l = own.first; l < own.last; ++l) {
    if (!c.cfg.model.is_recurrent(l)) continue;
    Layer r;
    r.index = l;
    r.state = c.alloc(core::Dtype::u32, c.max_reqs, c.lane_count, "recurrent.state");
    r.scratch =
        c.alloc(core::Dtype::u32, static_cast<int64_t>(c.max_reqs) * window_, c.lane_count, "recurrent.scratch");
    r.a = c.alloc(core::Dtype::u32, c.cfg.model.lanes, 1, "recurrent.a");
    r.b = c.alloc(core::Dtype::u32, c.cfg.model.lanes, 1, "recurrent.b");
    layers_.push_back(std::move(r));
  }
  if (any()) admitted_ = c.alloc(core::Dtype::i32, c.max_reqs, 1, "recurrent.admitted");
}

void RecurrentState::load_checkpoint() {
  for (const Layer& r : layers_) {
    const LayerWeights& lw = ctx_.ckpt.layers[static_cast<size_t>(r.index)];
    ctx_.upload(r.a, lw.a);
    ctx_.upload(r.b, lw.b);
  }
}

void RecurrentState::forward(int layer, int32_t rows, const core::Buffer& row_req, const core::Buffer& positions,
                             const core::Buffer& y, const core::Buffer& v, const core::Buffer& x) {
  for (const Layer& r : layers_) {
    if (r.index != layer) continue;
    ctx_.run("recurrent_layer", "",
             kn::RecurrentLayerKernel{
                 span_of<int32_t>(row_req), span_of<int64_t>(positions), span_of<uint32_t>(y), span_of<uint32_t>(v),
                 span_of<uint32_t>(r.a), span_of<uint32_t>(r.b), span_of<uint32_t>(r.state), ctx_.cfg.model.lanes,
                 ctx_.lane_begin, ctx_.lane_count, window_, rows, span_of<uint32_t>(r.scratch), span_of<uint32_t>(x)},
             rows);
    return;
  }
  PPSPEC_ASSERT(false, "layer {} is not a recurrent layer of this stage", layer);
}

void RecurrentState::reset(const SchedulerOutput& so) {
  if (!any() || so.new_requests.empty()) return;
  std::vector<int32_t> idx;
  for (const NewRequest& n : so.new_requests) idx.push_back(n.idx);
  PPSPEC_ASSERT(idx.size() <= static_cast<size_t>(ctx_.max_reqs), "{} requests admitted, {} slots", idx.size(),
                ctx_.max_reqs);
  ctx_.upload(admitted_, idx);
  for (const Layer& r : layers_)
    ctx_.run("recurrent_reset", "",
             kn::RecurrentResetKernel{span_of<int32_t>(admitted_), ctx_.lane_count, span_of<uint32_t>(r.state)},
             static_cast<int64_t>(idx.size()));
}

void RecurrentState::commit(const core::Buffer& idx, int32_t entries, const core::Buffer& num_computed) {
  if (entries <= 0) return;
  for (const Layer& r : layers_)
    ctx_.run(
        "recurrent_commit", "",
        kn::RecurrentCommitKernel{span_of<int32_t>(idx), span_of<int32_t>(num_computed), span_of<uint32_t>(r.scratch),
                                  window_, ctx_.lane_count, span_of<uint32_t>(r.state)},
        entries);
}

void RecurrentState::preload() {
  if (!any()) return;
  preload_kernel<kn::RecurrentLayerKernel>(ctx_.dev, core::KernelRef{"recurrent_layer", ""});
  preload_kernel<kn::RecurrentCommitKernel>(ctx_.dev, core::KernelRef{"recurrent_commit", ""});
  preload_kernel<kn::RecurrentResetKernel>(ctx_.dev, core::KernelRef{"recurrent_reset", ""});
}

}  // namespace ppspec::engine
