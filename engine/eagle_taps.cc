#include "engine/eagle_taps.h"

#include <algorithm>

#include "core/assert.h"
#include "engine/checkpoint.h"
#include "engine/kernel_launch.h"
#include "engine/probe.h"
#include "engine/span_of.h"
#include "kernels/eagle.h"

namespace ppspec::engine {

namespace kn = ppspec::kernels;

static_assert(kMaxTaps == kn::kMaxEagleTaps, "the configuration and the kernel agree on the taps' bound");

EagleTaps::EagleTaps(RankContext& c) : ctx_(c), layers_(eagle_taps(c.cfg)) {
  PPSPEC_ASSERT(c.cfg.eagle() && !layers_.empty() && layers_.size() <= static_cast<size_t>(kMaxTaps), "{} EAGLE taps",
                layers_.size());
  for (int l : layers_) {
    int s = 0;
    while (stage_layers(c.cfg.model, c.pp, s).last <= l) ++s;
    PPSPEC_ASSERT(s < c.pp, "tapped layer {} past the model's {} layers", l, c.cfg.model.layers);
    stage_of_.push_back(s);
  }
  for (size_t t = 0; t < layers_.size(); ++t) {
    const bool here = stage_of_[t] == c.stage;
    buffers_.push_back(here || c.last ? c.alloc(core::Dtype::u32, c.max_rows, kn::kTapWords, "eagle.aux_hidden")
                                      : core::Buffer{});
    weights_.push_back(here ? c.alloc(core::Dtype::u32, c.cfg.model.lanes, 1, "eagle.tap_weights") : core::Buffer{});
  }
  source_ = sources(c.stage);
}

// vLLM's model loop `for idx, layer in enumerate(islice(self.layers, start, end))` compares idx with
// the global aux_hidden_state_layers; without `start=start_layer` (vLLM #36151, fixed by PR #36731)
// a later stage captures the layers whose index within it is a tapped layer's, in order, and fills
// its taps with them: stage 0 is untouched, a later stage digests other layers or none.
std::vector<int> EagleTaps::sources(int stage) const {
  std::vector<int> src(layers_.size(), -1);
  const std::vector<size_t> own = taps_of(stage);
  if (!ctx_.cfg.faults.tap_local_layer_index) {
    for (size_t t : own) src[t] = layers_[t];
    return src;
  }
  const LayerRange range = stage_layers(ctx_.cfg.model, ctx_.pp, stage);
  size_t k = 0;
  for (int l = range.first; l < range.last && k < own.size(); ++l)
    if (std::find(layers_.begin(), layers_.end(), l - range.first) != layers_.end()) src[own[k++]] = l;
  return src;
}

std::vector<int64_t> EagleTaps::take_digested() {
  std::vector<int64_t> out;
  out.swap(digested_);
  return out;
}

void EagleTaps::publish(int64_t step, const std::vector<int64_t>& digested) const {
  if (!taps_of(ctx_.stage).empty() || !digested.empty())
    engine::publish(ctx_.rt, Probe{ctx_.rank, step, -1}, core::EagleTapsProbe{digested});
}

void EagleTaps::load_checkpoint() {
  const auto D = static_cast<size_t>(ctx_.cfg.model.lanes);
  for (size_t t = 0; t < layers_.size(); ++t) {
    if (stage_of_[t] != ctx_.stage) continue;
    const auto first = ctx_.ckpt.tap_weights.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(layers_[t]) * D);
    ctx_.upload(weights_[t], std::vector<uint32_t>(first, first + static_cast<std::ptrdiff_t>(D)));
  }
}

void EagleTaps::preload() {
  if (!taps_of(ctx_.stage).empty()) preload_kernel<kn::TapKernel>(ctx_.dev, core::KernelRef{"eagle_tap", ""});
}

void EagleTaps::produce(int layer, int32_t rows, const core::Buffer& row_req, const core::Buffer& context,
                        const core::Buffer& lanes, core::Communicator* tp) {
  for (size_t t = 0; t < layers_.size(); ++t) {
    if (source_[t] != layer) continue;
    PPSPEC_ASSERT(stage_of_[t] == ctx_.stage, "tap {} filled on stage {}, which does not hold it", layers_[t],
                  ctx_.stage);
    digested_.insert(digested_.end(), {layers_[t], layer});
    ctx_.run("eagle_tap", "",
             kn::TapKernel{span_of<int32_t>(row_req), span_of<uint32_t>(context), span_of<uint32_t>(lanes),
                           span_of<uint32_t>(weights_[t]), ctx_.lane_begin, ctx_.lane_count, ctx_.tp_rank == 0,
                           span_of<uint32_t>(buffers_[t])},
             rows);
    if (tp != nullptr)
      tp->all_reduce(buffers_[t].rows(0, rows), core::ReduceOp::sum, ctx_.main, core::Label{"tp.eagle_tap", layer});
  }
}

bool EagleTaps::rides_activations(int stage) const {
  return stage == ctx_.pp - 2 && !ctx_.cfg.faults.untagged_aux_relay;
}

std::vector<size_t> EagleTaps::taps_of(int stage) const {
  std::vector<size_t> out;
  for (size_t t = 0; t < layers_.size(); ++t)
    if (stage_of_[t] == stage) out.push_back(t);
  return out;
}

void EagleTaps::send_with_activations(core::Communicator& pp, int64_t step, int32_t rows) {
  if (!rides_activations(ctx_.stage)) return;
  for (size_t t : taps_of(ctx_.stage))
    pp.send(buffers_[t].rows(0, rows), ctx_.stage + 1, ctx_.main, core::Label{"act.aux", step});
}

void EagleTaps::recv_with_activations(core::Communicator& pp, int64_t step, int32_t rows) {
  if (!rides_activations(ctx_.stage - 1)) return;
  for (size_t t : taps_of(ctx_.stage - 1))
    pp.recv(buffers_[t].rows(0, rows), ctx_.stage - 1, ctx_.main, core::Label{"act.aux", step});
}

// The far stages' taps, straight to the last stage, after their activations: a p2p pair's first
// transfer blocks its host until the peer reaches it too (R1), and the last stage reaches these
// only after it received its own activations. Under the fault the stage before the last sends its
// taps this way too, but as it produces them, before its activations (`before_activations`).
void EagleTaps::exchange_far(core::Communicator& pp, int64_t step, int32_t rows, bool before_activations) {
  const int last = ctx_.pp - 1;
  if (ctx_.stage != last) {
    const bool adjacent = ctx_.stage == last - 1;
    if (rides_activations(ctx_.stage) || before_activations != adjacent) return;
    for (size_t t : taps_of(ctx_.stage))
      pp.send(buffers_[t].rows(0, rows), last, ctx_.main, core::Label{"aux.direct", step});
    return;
  }
  if (before_activations) return;
  for (int s = 0; s < last; ++s) {
    if (rides_activations(s)) continue;
    for (size_t t : taps_of(s)) pp.recv(buffers_[t].rows(0, rows), s, ctx_.main, core::Label{"aux.direct", step});
  }
}

}  // namespace ppspec::engine
