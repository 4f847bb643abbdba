#include "engine/worker.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <fmt/format.h>
#include <set>
#include <stdexcept>

#include "core/assert.h"
#include "engine/probe.h"
#include "engine/span_of.h"
#include "kernels/drafter.h"
#include "kernels/launch.h"
#include "kernels/post_update.h"
#include "kernels/prepare_dflash_inputs.h"
#include "kernels/prepare_inputs.h"
#include "kernels/rejection_sample.h"
#include "kernels/topk_softplus_sqrt.h"
#include "kernels/toy_model.h"

namespace ppspec::engine {

namespace kn = ppspec::kernels;

std::string tp_group(int stage) { return fmt::format("tp{}", stage); }
std::string pp_group(int tp_rank) { return fmt::format("pp{}", tp_rank); }
std::string pp_broadcast_group(int tp_rank) { return fmt::format("pp_broadcast{}", tp_rank); }
bool is_pp_broadcast_group(std::string_view name) { return name.starts_with("pp_broadcast"); }

std::vector<std::pair<std::string, std::vector<core::RankId>>> communicators(const Topology& t) {
  std::vector<std::pair<std::string, std::vector<core::RankId>>> out;
  if (t.tp > 1)
    for (int s = 0; s < t.pp; ++s) {
      std::vector<core::RankId> m;
      for (int r = 0; r < t.tp; ++r) m.push_back(t.rank_of(s, r));
      out.emplace_back(tp_group(s), m);
    }
  if (t.pp > 1) {
    for (int r = 0; r < t.tp; ++r) {
      std::vector<core::RankId> m;
      for (int s = 0; s < t.pp; ++s) m.push_back(t.rank_of(s, r));
      out.emplace_back(pp_group(r), m);
    }
    // Its own communicator, so that the feedback does not serialise with the activations (R2).
    for (int r = 0; r < t.tp; ++r) {
      std::vector<core::RankId> m;
      for (int s = 0; s < t.pp; ++s) m.push_back(t.rank_of(s, r));
      out.emplace_back(pp_broadcast_group(r), m);
    }
  }
  return out;
}

namespace {

// Query rows of the drafter's largest batch: every request's K rows, or the largest graph.
int64_t draft_query_rows(const EngineConfig& cfg) {
  return std::max<int64_t>(static_cast<int64_t>(cfg.serving.max_num_seqs) * cfg.spec.k,
                           cfg.serving.capture_sizes.empty() ? 0 : cfg.serving.capture_sizes.back());
}

}  // namespace

std::string step_call_site(int64_t step) { return fmt::format("execute_model step {}", step); }

std::optional<int64_t> step_of_call_site(std::string_view call_site) {
  constexpr std::string_view kPrefix = "execute_model step ";
  if (!call_site.starts_with(kPrefix)) return std::nullopt;
  int64_t step = 0;
  const auto digits = call_site.substr(kPrefix.size());
  if (std::from_chars(digits.data(), digits.data() + digits.size(), step).ec != std::errc{}) return std::nullopt;
  return step;
}

Worker::Worker(core::Runtime& rt, core::RankId rank, const EngineConfig& cfg, const Checkpoint& ckpt)
    : rt_(rt), dev_(rt.device(rank)), cfg_(cfg), ckpt_(ckpt), rank_(rank) {
  const Topology& t = cfg.topology;
  stage_ = t.stage_of(rank);
  tp_rank_ = t.tp_rank_of(rank);
  pp_ = t.pp;
  tp_ = t.tp;
  k_ = cfg.spec.k;
  first_ = stage_ == 0;
  last_ = stage_ == pp_ - 1;
  layers_ = stage_layers(cfg.model, pp_, stage_);
  lane_count_ = cfg.model.lanes / tp_;
  lane_begin_ = tp_rank_ * lane_count_;
  max_reqs_ = cfg.serving.max_num_seqs;
  max_rows_ = cfg.max_rows();
  max_blocks_ = cfg.max_blocks_per_req();
  const int blocks = cfg.model.num_blocks > 0 ? cfg.model.num_blocks : 0;
  num_slots_ = static_cast<int64_t>(std::max(blocks, max_reqs_ * max_blocks_ + 1)) * cfg.model.block_size;
  main_ = dev_.stream("main");
  side_ = dev_.stream("side");
  const int kk = std::max(k_, 1);
  const int D = cfg.model.lanes;
  const int V = cfg.model.vocab;
  using core::Dtype;
  last_sampled_ = alloc(Dtype::i64, max_reqs_, 1, "last_sampled");
  draft_tokens_ = alloc(Dtype::i64, max_reqs_, kk, "draft_tokens");
  num_computed_ = alloc(Dtype::i32, max_reqs_, 1, "num_computed");
  prefill_len_ = alloc(Dtype::i32, max_reqs_, 1, "prefill_len");
  total_len_ = alloc(Dtype::i32, max_reqs_, 1, "total_len");
  prompt_ = alloc(Dtype::i32, max_reqs_, cfg.max_prompt(), "prompt");
  block_table_ = alloc(Dtype::i32, max_reqs_, max_blocks_, "block_table");
  seeds_ = alloc(Dtype::i64, max_reqs_, 1, "seeds");
  spread_ = alloc(Dtype::u32, max_reqs_, 1, "spread");
  temperature_ = alloc(Dtype::f32, max_reqs_, 1, "temperature");
  input_ids_ = alloc(Dtype::i32, max_rows_, 1, "input_ids");
  positions_ = alloc(Dtype::i64, max_rows_, 1, "positions");
  slots_ = alloc(Dtype::i64, max_rows_, 1, "slot_mapping");
  is_padding_ = alloc(Dtype::u8, max_rows_, 1, "is_padding");
  row_req_ = alloc(Dtype::i32, max_rows_, 1, "row_req");
  query_start_ = alloc(Dtype::i32, max_reqs_ + 1, 1, "query_start_loc");
  idx_mapping_ = alloc(Dtype::i32, max_reqs_, 1, "idx_mapping");
  query_len_ = alloc(Dtype::i32, max_reqs_, 1, "query_len");
  c_ = alloc(Dtype::u32, max_rows_, 1, "hidden.ctx");
  x_ = alloc(Dtype::u32, max_rows_, lane_count_, "hidden.lanes");
  y_ = alloc(Dtype::u32, max_rows_, D, "hidden.mix");
  h_ = alloc(Dtype::u32, max_rows_, 1, "hidden.head");
  greedy_ = alloc(Dtype::i64, max_rows_, 1, "greedy");
  // The target embedding exists on the first stage only (a PPMissingLayer elsewhere); it is
  // allocated everywhere so that aliasing it elsewhere reads never-written memory, as it would.
  embed_ctx_ = alloc(Dtype::u32, V, 1, "embed_tokens");
  if (first_) {
    ctx_kv_ = alloc(Dtype::u32, num_slots_, 1, "kv.ctx");
    embed_deep_ = alloc(Dtype::u32, V, D, "embed_deep");
  }
  for (int l = layers_.first; l < layers_.last; ++l) {
    kv_.push_back(alloc(Dtype::u32, num_slots_, lane_count_, "kv"));
    w_.push_back(alloc(Dtype::u32, D, 1, "layer.w"));
    u_.push_back(alloc(Dtype::u32, D, 1, "layer.u"));
    v_.push_back(alloc(Dtype::u32, D, 1, "layer.v"));
  }
  // Write checks cover a step's rows and the drafter's query rows (at most 8 bytes an element).
  check_stride_ = std::max<int64_t>(max_rows_, last_ && k_ > 0 ? draft_query_rows(cfg) : 0);
  check_saved_ = alloc(Dtype::u8, 3, check_stride_ * 8, "write_check.saved");
  check_unwritten_ = alloc(Dtype::u8, 3, check_stride_, "write_check.unwritten");
  prev_idx_ = alloc(Dtype::i32, max_reqs_, 1, "prev_idx_mapping");
  prev_query_len_ = alloc(Dtype::i32, max_reqs_, 1, "prev_query_len");
  if (last_) {
    head_ = alloc(Dtype::u32, D, 1, "lm_head");
    logit_start_ = alloc(Dtype::i32, max_reqs_, 1, "logit_start");
    num_logits_ = alloc(Dtype::i32, max_reqs_, 1, "num_logits");
    b_seeds_ = alloc(Dtype::i64, max_reqs_, 1, "batch.seeds");
    b_out_index_ = alloc(Dtype::i64, max_reqs_, 1, "batch.out_index");
    b_spread_ = alloc(Dtype::u32, max_reqs_, 1, "batch.spread");
    if (k_ > 0) {
      const int64_t q = draft_query_rows(cfg);
      const int E = cfg.model.experts;
      const int top = cfg.model.topk;
      // Under PP the drafter loads its own embedding ("embed.weight"); at pp = 1 it shares the target's.
      if (pp_ > 1) draft_embed_ = alloc(Dtype::u32, V, 1, "draft.embed_tokens");
      draft_kv_ = alloc(Dtype::u32, num_slots_, 1, "draft.kv");
      d_idx_ = alloc(Dtype::i32, max_reqs_, 1, "draft.idx_mapping");
      d_ctx_start_ = alloc(Dtype::i32, max_reqs_, 1, "draft.ctx_start");
      d_ctx_end_ = alloc(Dtype::i32, max_reqs_, 1, "draft.ctx_end");
      d_num_sampled_ = alloc(Dtype::i32, max_reqs_, 1, "draft.num_sampled");
      d_num_rejected_ = alloc(Dtype::i32, max_reqs_, 1, "draft.num_rejected");
      d_anchor_ = alloc(Dtype::i32, max_reqs_, 1, "draft.anchor_row");
      d_ctx_pos_ = alloc(Dtype::i64, max_rows_, 1, "draft.context_positions");
      d_ctx_slots_ = alloc(Dtype::i64, max_rows_, 1, "draft.context_slot_mapping");
      d_input_ids_ = alloc(Dtype::i32, q, 1, "draft.input_ids");
      d_positions_ = alloc(Dtype::i64, q, 1, "draft.positions");
      d_is_padding_ = alloc(Dtype::u8, q, 1, "draft.is_padding");
      d_slots_ = alloc(Dtype::i64, q, 1, "draft.query_slot_mapping");
      d_sample_idx_ = alloc(Dtype::i32, q, 1, "draft.sample_indices");
      d_sample_pos_ = alloc(Dtype::i64, q, 1, "draft.sample_pos");
      d_sample_map_ = alloc(Dtype::i32, q, 1, "draft.sample_idx_mapping");
      d_qsl_ = alloc(Dtype::i32, max_reqs_ + 1, 1, "draft.query_start_loc");
      d_seq_lens_ = alloc(Dtype::i32, max_reqs_, 1, "draft.seq_lens");
      d_temperature_ = alloc(Dtype::f32, max_reqs_, 1, "draft.temperature");
      d_seeds_ = alloc(Dtype::i64, max_reqs_, 1, "draft.seeds");
      d_next_prefill_ = alloc(Dtype::i64, max_reqs_, 1, "draft.next_prefill_tokens");
      d_gating_ = alloc(Dtype::f32, q, E, "draft.router_logits");
      d_router_bias_ = alloc(Dtype::f32, E, 1, "draft.e_score_correction_bias");
      d_topk_ids_ = alloc(Dtype::i32, q, top, "draft.topk_ids");
      d_topk_w_ = alloc(Dtype::f32, q, top, "draft.topk_weights");
      d_expert_scale_ = alloc(Dtype::f32, E, 1, "draft.experts");
      d_confidence_ = alloc(Dtype::f32, q, 1, "draft.confidence");
      d_drafts_ = alloc(Dtype::i64, max_reqs_, k_, "draft.proposed");
      d_brow_ = alloc(Dtype::i32, max_reqs_, 1, "draft.batch_row");
      d_block_rows_ = alloc(Dtype::i32, max_reqs_, max_blocks_, "draft.block_table");
    }
    if (pp_ == 1) {
      own_slot_.sampled = alloc(Dtype::i64, max_reqs_, k_ + 1, "sampled");
      own_slot_.counts = alloc(Dtype::i32, 2, max_reqs_, "counts");
      own_slot_.drafts = alloc(Dtype::i64, max_reqs_, kk, "drafts");
      own_slot_.payload = alloc(Dtype::i64, max_reqs_, 2 * k_ + 3, "payload");
    }
  }
}

Worker::~Worker() = default;

core::Buffer Worker::alloc(core::Dtype d, int64_t rows, int64_t cols, const char* name) {
  core::Buffer b = dev_.alloc(d, core::Shape{rows, cols}, name);
  allocated_.push_back(b);
  return b;
}

void Worker::poison_rows(const std::vector<core::Buffer>& bufs, int64_t first, int64_t last) {
  PPSPEC_ASSERT(bufs.size() <= 3 && first <= last && last <= check_stride_, "write check of rows [{}, {}) over {} rows",
                first, last, check_stride_);
  for (size_t b = 0; b < bufs.size(); ++b) {
    const core::Buffer range = bufs[b].rows(first, last - first).as_bytes();
    dev_.memcpy(main_, check_saved_.slice(static_cast<int64_t>(b), 0, range.count()), range);
    dev_.memset(main_, range, kn::kPoisonByte);
  }
}

void Worker::restore_unwritten(const std::vector<core::Buffer>& bufs, int64_t first, int64_t last) {
  for (size_t b = 0; b < bufs.size(); ++b) {
    const core::Buffer range = bufs[b].rows(first, last - first);
    const core::Buffer bytes = range.as_bytes();
    const auto elem_bytes = static_cast<int32_t>(core::dtype_size(range.dtype()) * static_cast<size_t>(range.shape().cols));
    kn::RestoreUnwrittenKernel k{elem_bytes, span_of<uint8_t>(bytes),
                                 span_of<uint8_t>(check_saved_.slice(static_cast<int64_t>(b), 0, bytes.count())),
                                 span_of<uint8_t>(check_unwritten_.slice(static_cast<int64_t>(b), 0, last - first))};
    run(main_, "restore_unwritten", "", k, last - first);
  }
}

core::Buffer Worker::unwritten_rows(size_t bands, int64_t first, int64_t last) const {
  (void)first;
  (void)last;
  return check_unwritten_.rows(0, static_cast<int64_t>(bands));
}

int32_t Worker::graph_size(int32_t tokens) const {
  for (int s : cfg_.serving.capture_sizes)
    if (s >= tokens) return s;
  return tokens;
}

void Worker::phase(const char* name) { publish(rt_, Probe{core::EventKind::warmup_phase, rank_, -1, -1, -1, name}); }

// ---------------------------------------------------------------------------------------------
// The actor

void Worker::run() {
  for (const auto& [name, members] : communicators(cfg_.topology)) {
    if (std::find(members.begin(), members.end(), rank_) == members.end()) continue;
    core::Communicator& c = rt_.comm_init(name, rank_);
    if (name == tp_group(stage_)) tp_comm_ = &c;
    if (name == pp_group(tp_rank_)) pp_comm_ = &c;
    if (name == pp_broadcast_group(tp_rank_)) bcast_comm_ = &c;
  }
  // Device memory starts as poison on both runtimes (cudaMalloc's is whatever was there): what no
  // kernel or copy stored is recognisable, and a run that reads it reads the same on both.
  for (const core::Buffer& b : allocated_) dev_.memset(main_, b, kn::kPoisonByte);
  // Each stage loads its part of the checkpoint.
  if (first_) {
    upload(embed_ctx_, ckpt_.embed_ctx);
    upload(embed_deep_, ckpt_.embed_deep);
  }
  for (int l = layers_.first; l < layers_.last; ++l) {
    const LayerWeights& lw = ckpt_.layers[static_cast<size_t>(l)];
    upload(w_[static_cast<size_t>(l - layers_.first)], lw.w);
    upload(u_[static_cast<size_t>(l - layers_.first)], lw.u);
    upload(v_[static_cast<size_t>(l - layers_.first)], lw.v);
  }
  if (last_) {
    upload(head_, ckpt_.head);
    if (k_ > 0) {
      if (pp_ > 1 && !cfg_.faults.alias_target_embed) upload(draft_embed_, ckpt_.draft_embed);
      if (pp_ == 1) upload(embed_ctx_, ckpt_.embed_ctx);  // the target's own (stage 0 is this stage)
      upload(d_router_bias_, ckpt_.router_bias);
      upload(d_expert_scale_, ckpt_.expert_scale);
    }
  }
  dev_.stream_sync(main_);
  if (pp_ > 1) pp_handler_ = std::make_unique<PPHandler>(rt_, dev_, *bcast_comm_, stage_, pp_, cfg_, main_, side_);

  core::HostChannel& inbox = rt_.channel(fmt::format("worker{}", rank_));
  for (;;) {
    const auto cmd = std::any_cast<WorkerCommand>(inbox.recv());
    rt_.set_call_site({});  // `step` names its own
    switch (cmd.command) {
      case Command::step: step(*cmd.step); break;
      case Command::disable_feedback:
        phase("feedback disabled");
        if (pp_handler_) pp_handler_->set_disabled(true);
        break;
      case Command::enable_feedback:
        phase("feedback enabled");
        if (pp_handler_) pp_handler_->set_disabled(false);
        break;
      case Command::preload: preload(); break;
      case Command::warmup_decode_update: warmup_decode_update(); break;
      case Command::reset_feedback:
        if (pp_handler_) pp_handler_->reset();
        break;
      case Command::capture: capture_graphs(); break;
      case Command::serve:
        phase("serving");
        if (pp_handler_) pp_handler_->set_disabled(false);
        break;
      case Command::shutdown:
        dev_.device_sync();
        return;
    }
  }
}

void Worker::preload() {
  phase("preload registered kernels");
  auto load = [this]<typename K>(const char* name, const char* spec, const K*) {
    preload_kernel<K>(dev_, core::KernelRef{name, spec});
  };
  load("prepare_inputs", "", static_cast<kn::PrepareInputsKernel*>(nullptr));
  load("restore_unwritten", "", static_cast<kn::RestoreUnwrittenKernel*>(nullptr));
  if (first_) {
    load("embed", "", static_cast<kn::EmbedKernel*>(nullptr));
    load("context_sum", "", static_cast<kn::ContextSumKernel*>(nullptr));
  }
  if (layers_.last > layers_.first) {
    load("layer_partial", "", static_cast<kn::LayerPartialKernel*>(nullptr));
    load("layer_kv_write", "", static_cast<kn::LayerKvWriteKernel*>(nullptr));
    load("layer_out", "", static_cast<kn::LayerOutKernel*>(nullptr));
  }
  if (!last_) {
    load("advance_num_computed", "", static_cast<kn::AdvanceNumComputedKernel*>(nullptr));
    if (cfg_.spec.feedback == Feedback::single_payload) load("unpack_payload", "", static_cast<kn::UnpackPayloadKernel*>(nullptr));
    // post_update's deferred specialization is not registered: warmup_pp_decode_update loads it.
    return;
  }
  load("head_partial", "", static_cast<kn::HeadPartialKernel*>(nullptr));
  load("logits", "", static_cast<kn::LogitsKernel*>(nullptr));
  load("gather_sampling_params", "", static_cast<kn::GatherSamplingParamsKernel*>(nullptr));
  load("rejection_sample", "", static_cast<kn::RejectionSampleKernel*>(nullptr));
  load("post_update", "last", static_cast<kn::PostUpdateKernel*>(nullptr));
  if (k_ == 0) return;
  load("dflash_gather", "", static_cast<kn::DflashGatherKernel*>(nullptr));
  load("gather_block_rows", "", static_cast<kn::GatherBlockRowsKernel*>(nullptr));
  load("prepare_dflash_inputs", "", static_cast<kn::PrepareDflashInputsKernel*>(nullptr));
  load("draft_context_kv", "", static_cast<kn::DraftContextKvRangesKernel*>(nullptr));
  load("draft_forward", "", static_cast<kn::DraftForwardKernel*>(nullptr));
  load("draft_gate", "", static_cast<kn::DraftGateKernel*>(nullptr));
  load("topk_softplus_sqrt", "", static_cast<kn::TopkSoftplusSqrtKernel*>(nullptr));
  load("draft_experts", "", static_cast<kn::DraftExpertsKernel*>(nullptr));
  load("set_draft_tokens", "", static_cast<kn::SetDraftTokensKernel*>(nullptr));
  load("gather_drafts", "", static_cast<kn::GatherDraftsKernel*>(nullptr));
  load("pack_payload", "", static_cast<kn::PackPayloadKernel*>(nullptr));
}

void Worker::warmup_decode_update() {
  if (last_ || pp_ == 1 || cfg_.faults.lazy_post_update) return;
  phase("warmup_pp_decode_update");
  // The serving specialization, with idx -1: loaded, writes nothing (vLLM warmup_pp_decode_update).
  upload(prev_idx_, std::vector<int32_t>{-1});
  const int kk = k_;
  kn::PostUpdateKernel pk{span_of<int32_t>(prev_idx_), span_of<int64_t>(last_sampled_), span_of<int32_t>(num_computed_),
                          span_of<int32_t>(num_computed_), span_of<int32_t>(prev_query_len_), {}, kk, true,
                          span_of<int64_t>(last_sampled_), span_of<int32_t>(num_computed_), span_of<int32_t>(total_len_),
                          span_of<int64_t>(draft_tokens_)};
  run(main_, "post_update", "deferred", kn::DeferredPostUpdateKernel{pk}, 1);
  dev_.stream_sync(main_);
}

void Worker::capture_graphs() {
  phase("capture graphs");
  for (int s : cfg_.serving.capture_sizes) {
    dev_.capture_begin(main_);
    forward_kernels(s);
    graphs_[s] = dev_.capture_end(main_);
  }
  dev_.stream_sync(main_);
}

}  // namespace ppspec::engine
