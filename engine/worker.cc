#include "engine/worker.h"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <set>
#include <stdexcept>
#include <utility>

#include "core/assert.h"
#include "engine/probe.h"
#include "engine/span_of.h"
#include "kernels/mla_attention.h"
#include "kernels/drafter.h"
#include "kernels/eagle.h"
#include "kernels/expert_dispatch.h"
#include "kernels/feedback_payload.h"
#include "kernels/kv_transfer.h"
#include "kernels/launch.h"
#include "kernels/post_update.h"
#include "kernels/prepare_dflash_inputs.h"
#include "kernels/prepare_inputs.h"
#include "kernels/rejection_sample.h"
#include "kernels/request_tables.h"
#include "kernels/topk_softplus_sqrt.h"
#include "kernels/toy_model.h"
#include "kernels/write_check.h"

namespace ppspec::engine {

namespace kn = ppspec::kernels;

Worker::Worker(core::Runtime& rt, core::RankId rank, const EngineConfig& cfg, const Checkpoint& ckpt,
               std::string outputs)
    : ctx_(rt, rank, cfg, ckpt, std::move(outputs)),
      staging_(ctx_),
      tables_(ctx_, staging_),
      inputs_(ctx_, staging_),
      model_(ctx_),
      taps_(cfg.eagle() ? std::make_unique<EagleTaps>(ctx_) : nullptr),
      // Write checks cover a step's rows and the drafter's query rows.
      check_(ctx_, std::max<int64_t>(ctx_.max_rows, ctx_.last && ctx_.k > 0 ? ctx_.draft_query_rows() : 0)) {
  using core::Dtype;
  prev_idx_ = ctx_.alloc(Dtype::i32, ctx_.max_reqs, 1, "prev_idx_mapping");
  prev_query_len_ = ctx_.alloc(Dtype::i32, ctx_.max_reqs, 1, "prev_query_len");
  model_.bind_taps(taps_.get());
  if (!ctx_.last) return;
  sampler_ = std::make_unique<Sampler>(ctx_);
  if (ctx_.k > 0) drafter_ = std::make_unique<Drafter>(ctx_);
  if (taps_) drafter_->bind_taps(taps_.get());
  if (ctx_.cfg.spec.adaptive_budget) draft_budget_ = std::make_unique<DraftBudget>(ctx_);
  if (AcceptedReadback::wanted(ctx_)) accepted_ = std::make_unique<AcceptedReadback>(ctx_);
  if (ctx_.pp > 1) return;
  const int64_t n = ctx_.max_reqs;
  own_slot_.sampled = ctx_.alloc(Dtype::i64, n, ctx_.k + 1, "sampled");
  own_slot_.counts = ctx_.alloc(Dtype::i32, 2, n, "counts");
  own_slot_.drafts = ctx_.alloc(Dtype::i64, n, std::max(ctx_.k, 1), "drafts");
  own_slot_.payload = ctx_.alloc(Dtype::i64, n, 2 * ctx_.k + 3, "payload");
}

Worker::~Worker() = default;

KvConnector* Worker::attach_connector() {
  if (ctx_.cfg.instance() == Instance::aggregated) return nullptr;
  KvCaches caches;
  caches.context = model_.context_kv();
  for (int l = 0; l < ctx_.cfg.model.layers; ++l) caches.layers.push_back(model_.kv_cache(l));
  if (drafter_) caches.draft = &drafter_->kv_cache();
  connector_ = std::make_unique<KvConnector>(ctx_, std::move(caches));
  return connector_.get();
}

int32_t Worker::graph_size(int32_t tokens) const {
  for (int s : ctx_.cfg.serving.capture_sizes)
    if (s >= tokens) return s;
  return tokens;
}

void Worker::phase(core::WarmupPhase phase) {
  publish(ctx_.rt, Probe{ctx_.rank, -1, -1}, core::WarmupPhaseProbe{phase});
}

// ---------------------------------------------------------------------------------------------
// The actor

void Worker::init_communicators() {
  for (const CommunicatorSpec& spec : communicators(ctx_.cfg.topology, ctx_.cfg.instance())) {
    if (std::find(spec.members.begin(), spec.members.end(), ctx_.rank) == spec.members.end()) continue;
    core::Communicator& c = ctx_.rt.comm_init(spec.name, ctx_.rank);
    switch (spec.role) {
      case CommRole::tensor_parallel: tp_comm_ = &c; break;
      case CommRole::pipeline: pp_comm_ = &c; break;
      case CommRole::feedback: bcast_comm_ = &c; break;
      case CommRole::data_parallel: dp_comm_ = &c; break;
    }
    PPSPEC_ASSERT(spec.index == index_in_role(ctx_.cfg.topology, spec.role, ctx_.rank),
                  "communicator {} (index {}) on rank {}", spec.name, spec.index, ctx_.rank);
  }
  if (drafter_) drafter_->bind_tp(tp());
  if (dp_comm_ == nullptr) return;
  dp_ = std::make_unique<DataParallel>(ctx_, *dp_comm_);
  if (drafter_) drafter_->bind_dp(dp_.get());
}

void Worker::load_checkpoint() {
  // Device memory starts as poison on both runtimes (cudaMalloc's is whatever was there): what no
  // kernel or copy stored is recognisable, and a run that reads it reads the same on both.
  for (const core::Buffer& b : ctx_.allocated) ctx_.dev.memset(ctx_.main, b, kn::kPoisonByte);
  // Each stage loads its part of the checkpoint.
  model_.load_checkpoint();
  if (taps_) taps_->load_checkpoint();
  if (drafter_) drafter_->load_checkpoint();
  inputs_.clear_split();
  ctx_.dev.stream_sync(ctx_.main);
}

void Worker::run() {
  init_communicators();
  if (ctx_.pp > 1) pp_handler_ = std::make_unique<PPHandler>(ctx_, *bcast_comm_);
  load_checkpoint();
  core::HostChannel& inbox = ctx_.rt.channel(fmt::format("worker{}", ctx_.rank));
  for (;;) {
    const auto cmd = std::any_cast<WorkerCommand>(inbox.recv());
    ctx_.rt.set_call_site({});  // `step` names its own
    switch (cmd.command) {
      case Command::step: step(*cmd.step); break;
      case Command::disable_feedback:
        phase(core::WarmupPhase::feedback_disabled);
        if (pp_handler_) pp_handler_->set_disabled(true);
        break;
      case Command::enable_feedback:
        phase(core::WarmupPhase::feedback_enabled);
        if (pp_handler_) pp_handler_->set_disabled(false);
        break;
      case Command::preload: preload(); break;
      case Command::warmup_decode_update: warmup_decode_update(); break;
      case Command::reset_feedback:
        if (pp_handler_) pp_handler_->reset();
        break;
      case Command::capture: capture_graphs(); break;
      case Command::serve:
        phase(core::WarmupPhase::serving);
        if (connector_) ctx_.rt.channel(kv_connector_channel(ctx_.rank)).send(KvServing{});
        if (pp_handler_) {
          pp_handler_->set_disabled(false);
          pp_handler_->start_serving();
        }
        break;
      case Command::shutdown: ctx_.dev.device_sync(); return;
    }
  }
}

void Worker::preload() {
  phase(core::WarmupPhase::preload_registered_kernels);
  auto load = [this]<typename K>(const char* name, const char* spec, const K*) {
    preload_kernel<K>(ctx_.dev, core::KernelRef{name, spec});
  };
  load("prepare_inputs", "", static_cast<kn::PrepareInputsKernel*>(nullptr));
  if (connector_) {
    load("kv_gather", "", static_cast<kn::KvGatherKernel*>(nullptr));
    load("kv_inject", "", static_cast<kn::KvInjectKernel*>(nullptr));
  }
  load("save_and_poison", "", static_cast<kn::SaveAndPoisonKernel*>(nullptr));
  load("restore_unwritten", "", static_cast<kn::RestoreUnwrittenBandsKernel*>(nullptr));
  if (ctx_.first) {
    load("embed", "", static_cast<kn::EmbedKernel*>(nullptr));
    load("context_sum", "", static_cast<kn::ContextSumKernel*>(nullptr));
  }
  if (model_.layers().last > model_.layers().first) {
    load("layer_partial", "", static_cast<kn::LayerPartialKernel*>(nullptr));
    load("layer_kv_write", "", static_cast<kn::LayerKvWriteKernel*>(nullptr));
    load("layer_out", "", static_cast<kn::LayerOutKernel*>(nullptr));
    if (inputs_.reorder_threshold() > 0) {
      load("mla_decode", "", static_cast<kn::MlaDecodeAttentionKernel*>(nullptr));
      load("mla_prefill", "", static_cast<kn::MlaPrefillAttentionKernel*>(nullptr));
    }
  }
  if (inputs_.reorder_threshold() > 0) load("decode_seq_lens", "", static_cast<kn::DecodeSeqLensKernel*>(nullptr));
  model_.recurrent().preload();
  if (taps_) taps_->preload();
  if (!ctx_.last) {
    load("advance_num_computed", "", static_cast<kn::AdvanceNumComputedKernel*>(nullptr));
    if (ctx_.cfg.spec.feedback == Feedback::single_payload)
      load("unpack_payload", "", static_cast<kn::UnpackPayloadKernel*>(nullptr));
    // post_update's deferred specialization is not registered: warmup_pp_decode_update loads it.
    return;
  }
  load("head_partial", "", static_cast<kn::HeadPartialKernel*>(nullptr));
  load("logits", "", static_cast<kn::LogitsKernel*>(nullptr));
  load("gather_sampling_params", "", static_cast<kn::GatherSamplingParamsKernel*>(nullptr));
  load("rejection_sample", "", static_cast<kn::RejectionSampleKernel*>(nullptr));
  load("post_update", "last", static_cast<kn::PostUpdateKernel*>(nullptr));
  if (ctx_.k == 0) return;
  load("dflash_gather", "", static_cast<kn::DflashGatherKernel*>(nullptr));
  load("gather_block_rows", "", static_cast<kn::GatherBlockRowsKernel*>(nullptr));
  load("prepare_dflash_inputs", "", static_cast<kn::PrepareDflashInputsKernel*>(nullptr));
  load("draft_context_kv", "", static_cast<kn::DraftContextKvRangesKernel*>(nullptr));
  if (ctx_.cfg.eagle())
    load("eagle_step", "", static_cast<kn::EagleStepKernel*>(nullptr));
  else
    load("draft_forward", "", static_cast<kn::DraftForwardKernel*>(nullptr));
  load("draft_gate", "", static_cast<kn::DraftGateKernel*>(nullptr));
  load("topk_softplus_sqrt", "", static_cast<kn::TopkSoftplusSqrtKernel*>(nullptr));
  if (ctx_.dp > 1) {
    load("ep_dispatch_pack", "", static_cast<kn::EpDispatchPackKernel*>(nullptr));
    load("ep_experts", "", static_cast<kn::EpExpertsKernel*>(nullptr));
    load("ep_combine", "", static_cast<kn::EpCombineKernel*>(nullptr));
    load("dummy_query_rows", "", static_cast<kn::DummyQueryRowsKernel*>(nullptr));
  } else {
    load("draft_experts", "", static_cast<kn::DraftExpertsKernel*>(nullptr));
  }
  if (ctx_.cfg.spec.adaptive_budget)
    load("confidence_to_fixed", "", static_cast<kn::ConfidenceToFixedKernel*>(nullptr));
  load("set_draft_tokens", "", static_cast<kn::SetDraftTokensKernel*>(nullptr));
  load("gather_drafts", "", static_cast<kn::GatherDraftsKernel*>(nullptr));
  load("pack_payload", "", static_cast<kn::PackPayloadKernel*>(nullptr));
}

void Worker::warmup_decode_update() {
  if (ctx_.last || ctx_.pp == 1 || ctx_.cfg.faults.lazy_post_update) return;
  phase(core::WarmupPhase::warmup_pp_decode_update);
  // The serving specialization, with idx -1: loaded, writes nothing (vLLM warmup_pp_decode_update).
  ctx_.upload(prev_idx_, std::vector<int32_t>{-1});
  kn::PostUpdateKernel pk{span_of<int32_t>(prev_idx_),
                          span_of<int64_t>(tables_.last_sampled),
                          span_of<int32_t>(tables_.num_computed),
                          span_of<int32_t>(tables_.num_computed),
                          span_of<int32_t>(prev_query_len_),
                          {},
                          ctx_.k,
                          true,
                          span_of<int64_t>(tables_.last_sampled),
                          span_of<int32_t>(tables_.num_computed),
                          span_of<int32_t>(tables_.total_len),
                          span_of<int64_t>(tables_.draft_tokens)};
  ctx_.run("post_update", "deferred", kn::DeferredPostUpdateKernel{pk}, 1);
  ctx_.dev.stream_sync(ctx_.main);
}

void Worker::capture_graphs() {
  phase(core::WarmupPhase::capture_graphs);
  for (int s : ctx_.cfg.serving.capture_sizes) {
    ctx_.dev.capture_begin(ctx_.main);
    model_.forward(s, inputs_, tables_, tp());
    graphs_[s] = ctx_.dev.capture_end(ctx_.main);
    if (taps_) graph_taps_[s] = taps_->take_digested();
  }
  ctx_.dev.stream_sync(ctx_.main);
}

}  // namespace ppspec::engine
