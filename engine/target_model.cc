#include "engine/target_model.h"

#include "engine/span_of.h"
#include "kernels/mla_attention.h"
#include "kernels/toy_model.h"

namespace ppspec::engine {

namespace kn = ppspec::kernels;

TargetModel::TargetModel(RankContext& c)
    : ctx_(c), layers_(stage_layers(c.cfg.model, c.pp, c.stage)), recurrent_(c, layers_) {
  using core::Dtype;
  const int D = c.cfg.model.lanes;
  const int V = c.cfg.model.vocab;
  ctx = c.alloc(Dtype::u32, c.max_rows, 1, "hidden.ctx");
  hidden = c.alloc(Dtype::u32, c.max_rows, c.lane_count, "hidden.lanes");
  mix = c.alloc(Dtype::u32, c.max_rows, D, "hidden.mix");
  head_out = c.alloc(Dtype::u32, c.max_rows, 1, "hidden.head");
  greedy = c.alloc(Dtype::i64, c.max_rows, 1, "greedy");
  embed_tokens = c.alloc(Dtype::u32, V, 1, "embed_tokens");
  if (c.first) {
    ctx_kv_ = c.alloc(Dtype::u32, c.num_slots, 1, "kv.ctx");
    embed_deep_ = c.alloc(Dtype::u32, V, D, "embed_deep");
  }
  for (int l = layers_.first; l < layers_.last; ++l) {
    kv_.push_back(c.cfg.model.is_recurrent(l) ? core::Buffer{} : c.alloc(Dtype::u32, c.num_slots, c.lane_count, "kv"));
    w_.push_back(c.alloc(Dtype::u32, D, 1, "layer.w"));
    u_.push_back(c.alloc(Dtype::u32, D, 1, "layer.u"));
    v_.push_back(c.alloc(Dtype::u32, D, 1, "layer.v"));
  }
  if (c.last) lm_head_ = c.alloc(Dtype::u32, D, 1, "lm_head");
}

// The layer's attention over its KV: one causal varlen kernel, or TRITON_MLA's two paths.
void TargetModel::attend(int32_t rows, const StepInputs& inputs, const kn::RowInputs& in, size_t li) {
  const kn::LayerOutKernel varlen{in,
                                  span_of<uint32_t>(mix),
                                  span_of<uint32_t>(kv_[li]),
                                  ctx_.cfg.model.lanes,
                                  ctx_.lane_begin,
                                  ctx_.lane_count,
                                  span_of<uint32_t>(hidden)};
  if (inputs.reorder_threshold() == 0) {
    ctx_.run("layer_out", "", varlen, rows);
    return;
  }
  const auto split = span_of<int32_t>(inputs.attention_split);
  ctx_.run("mla_decode", "",
           kn::MlaDecodeAttentionKernel{split, span_of<int32_t>(inputs.idx_mapping), span_of<int32_t>(inputs.seq_lens),
                                        varlen},
           rows);
  ctx_.run("mla_prefill", "", kn::MlaPrefillAttentionKernel{split, varlen}, rows);
}

const core::Buffer* TargetModel::kv_cache(int layer) const {
  if (layer < layers_.first || layer >= layers_.last) return nullptr;
  const core::Buffer& b = kv_[static_cast<size_t>(layer - layers_.first)];
  return b.count() > 0 ? &b : nullptr;
}

void TargetModel::load_checkpoint() {
  const Checkpoint& ck = ctx_.ckpt;
  if (ctx_.first) {
    ctx_.upload(embed_tokens, ck.embed_ctx);
    ctx_.upload(embed_deep_, ck.embed_deep);
  }
  for (int l = layers_.first; l < layers_.last; ++l) {
    const LayerWeights& lw = ck.layers[static_cast<size_t>(l)];
    const auto i = static_cast<size_t>(l - layers_.first);
    ctx_.upload(w_[i], lw.w);
    ctx_.upload(u_[i], lw.u);
    ctx_.upload(v_[i], lw.v);
  }
  if (ctx_.last) ctx_.upload(lm_head_, ck.head);
  recurrent_.load_checkpoint();
}

void TargetModel::forward(int32_t rows, const StepInputs& inputs, const RequestTables& tables, core::Communicator* tp) {
  const int D = ctx_.cfg.model.lanes;
  const int32_t lb = ctx_.lane_begin;
  const int32_t lc = ctx_.lane_count;
  const kn::RowInputs in = inputs.row_inputs(tables);
  const auto row_req = span_of<int32_t>(inputs.row_req);
  for (int l = layers_.first; l < layers_.last; ++l) {
    const size_t li = static_cast<size_t>(l - layers_.first);
    if (l == 0) {
      ctx_.run("embed", "",
               kn::EmbedKernel{in, span_of<uint32_t>(embed_tokens), span_of<uint32_t>(embed_deep_), D, lb, lc,
                               ctx_.ckpt.consts.r, span_of<uint32_t>(ctx_kv_), span_of<uint32_t>(hidden)},
               rows);
      ctx_.run("context_sum", "", kn::ContextSumKernel{in, span_of<uint32_t>(ctx_kv_), span_of<uint32_t>(ctx)}, rows);
    }
    ctx_.run("layer_partial", "",
             kn::LayerPartialKernel{row_req, span_of<uint32_t>(hidden), span_of<uint32_t>(w_[li]),
                                    span_of<uint32_t>(u_[li]), D, lb, lc, span_of<uint32_t>(mix)},
             rows);
    if (tp != nullptr) tp->all_reduce(mix.rows(0, rows), core::ReduceOp::sum, ctx_.main, core::Label{"tp.layer", l});
    if (ctx_.cfg.model.is_recurrent(l)) {
      recurrent_.forward(l, rows, inputs.row_req, inputs.positions, mix, v_[li], hidden);
    } else {
      ctx_.run("layer_kv_write", "",
               kn::LayerKvWriteKernel{in, span_of<uint32_t>(mix), span_of<uint32_t>(v_[li]), D, lb, lc,
                                      span_of<uint32_t>(kv_[li])},
               rows);
      attend(rows, inputs, in, li);
    }
    if (taps_ != nullptr) taps_->produce(l, rows, inputs.row_req, ctx, hidden, tp);
  }
  if (!ctx_.last) return;
  ctx_.run("head_partial", "",
           kn::HeadPartialKernel{row_req, span_of<uint32_t>(hidden), span_of<uint32_t>(lm_head_), lb, lc,
                                 span_of<uint32_t>(head_out)},
           rows);
  if (tp != nullptr) tp->all_reduce(head_out.rows(0, rows), core::ReduceOp::sum, ctx_.main, core::Label{"tp.head", -1});
  ctx_.run("logits", "",
           kn::LogitsKernel{row_req, span_of<uint32_t>(ctx), span_of<uint32_t>(head_out), ctx_.cfg.model.vocab,
                            ctx_.ckpt.consts.accept_1024, span_of<int64_t>(greedy)},
           rows);
}

}  // namespace ppspec::engine
