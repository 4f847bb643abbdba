#include "engine/drafter.h"

#include "core/hash.h"
#include "engine/readback.h"
#include "engine/span_of.h"
#include "kernels/drafter.h"
#include "kernels/eagle.h"
#include "kernels/prepare_dflash_inputs.h"
#include "kernels/request_tables.h"
#include "kernels/topk_softplus_sqrt.h"
#include "kernels/write_check.h"

namespace ppspec::engine {

namespace kn = ppspec::kernels;

Drafter::Drafter(RankContext& c) : ctx_(c) {
  using core::Dtype;
  const int64_t q = c.draft_query_rows();
  const int32_t n = c.max_reqs;
  const int E = c.cfg.model.experts;
  const int top = c.cfg.model.topk;
  // Under PP the drafter loads its own embedding ("embed.weight"); at pp = 1 it shares the target's.
  if (c.pp > 1) embed_ = c.alloc(Dtype::u32, c.cfg.model.vocab, 1, "draft.embed_tokens");
  kv_ = c.alloc(Dtype::u32, c.num_slots, 1, "draft.kv");
  idx_ = c.alloc(Dtype::i32, n, 1, "draft.idx_mapping");
  ctx_start_ = c.alloc(Dtype::i32, n, 1, "draft.ctx_start");
  ctx_end_ = c.alloc(Dtype::i32, n, 1, "draft.ctx_end");
  num_sampled_ = c.alloc(Dtype::i32, n, 1, "draft.num_sampled");
  num_rejected_ = c.alloc(Dtype::i32, n, 1, "draft.num_rejected");
  anchor_ = c.alloc(Dtype::i32, n, 1, "draft.anchor_row");
  batch_row_ = c.alloc(Dtype::i32, n, 1, "draft.batch_row");
  block_rows_ = c.alloc(Dtype::i32, n, c.max_blocks, "draft.block_table");
  ctx_positions_ = c.alloc(Dtype::i64, c.max_rows, 1, "draft.context_positions");
  ctx_slots_ = c.alloc(Dtype::i64, c.max_rows, 1, "draft.context_slot_mapping");
  input_ids_ = c.alloc(Dtype::i32, q, 1, "draft.input_ids");
  positions_ = c.alloc(Dtype::i64, q, 1, "draft.positions");
  is_padding_ = c.alloc(Dtype::u8, q, 1, "draft.is_padding");
  query_slots_ = c.alloc(Dtype::i64, q, 1, "draft.query_slot_mapping");
  sample_idx_ = c.alloc(Dtype::i32, q, 1, "draft.sample_indices");
  sample_pos_ = c.alloc(Dtype::i64, q, 1, "draft.sample_pos");
  sample_map_ = c.alloc(Dtype::i32, q, 1, "draft.sample_idx_mapping");
  query_start_ = c.alloc(Dtype::i32, n + 1, 1, "draft.query_start_loc");
  seq_lens_ = c.alloc(Dtype::i32, n, 1, "draft.seq_lens");
  temperature_ = c.alloc(Dtype::f32, n, 1, "draft.temperature");
  seeds_ = c.alloc(Dtype::i64, n, 1, "draft.seeds");
  next_prefill_ = c.alloc(Dtype::i64, n, 1, "draft.next_prefill_tokens");
  gating_ = c.alloc(Dtype::f32, q, E, "draft.router_logits");
  router_bias_ = c.alloc(Dtype::f32, E, 1, "draft.e_score_correction_bias");
  topk_ids_ = c.alloc(Dtype::i32, q, top, "draft.topk_ids");
  topk_weights_ = c.alloc(Dtype::f32, q, top, "draft.topk_weights");
  expert_scale_ = c.alloc(Dtype::f32, E, 1, "draft.experts");
  confidence_ = c.alloc(Dtype::f32, q, 1, "draft.confidence");
  if (c.cfg.spec.adaptive_budget) confidence_fixed_ = c.alloc(Dtype::i32, q, 1, "draft.confidence_fixed");
  drafts_ = c.alloc(Dtype::i64, n, c.k, "draft.proposed");
  if (c.cfg.eagle()) {
    eagle_state_ = c.alloc(Dtype::u32, n, 2, "eagle.hidden");
    eagle_cursor_ = c.alloc(Dtype::i64, n, 2, "eagle.cursor");
  }
  if (c.cfg.faults.unordered_draft_gather) gathered_after_ = c.dev.event("draft.main_done");
}

void Drafter::bind_dp(DataParallel* dp) {
  PPSPEC_ASSERT(dp != nullptr && dp_ == nullptr && !ctx_.cfg.spec.adaptive_budget,
                "a drafter bound to a DP group twice, or with an adaptive budget");
  dp_ = dp;
  experts_ = std::make_unique<ExpertDispatch>(ctx_, dp->group(), ctx_.draft_query_rows());
}

int32_t Drafter::forward_rows(int64_t step, int32_t rows) {
  return dp_ ? dp_->max_rows(rows, step, DataParallel::Forward::drafter) : rows;
}

void Drafter::dummy_propose(int64_t step, int forwards) {
  PPSPEC_ASSERT(dp_ != nullptr && forwards >= 1, "a dummy proposal of {} forwards outside DP", forwards);
  for (int f = 0; f < forwards; ++f) {
    const int32_t rows = forward_rows(step, 0);
    // Every replica drafts nothing this forward: no MoE layer runs anywhere.
    if (rows == 0) continue;
    ctx_.run("dummy_query_rows", "",
             kn::DummyQueryRowsKernel{span_of<int32_t>(input_ids_), span_of<int64_t>(positions_),
                                      span_of<bool>(is_padding_)},
             rows);
    route(step, 0, rows, false);
  }
}

void Drafter::load_checkpoint() {
  if (ctx_.pp > 1 && !ctx_.cfg.faults.alias_target_embed) ctx_.upload(embed_, ctx_.ckpt.draft_embed);
  ctx_.upload(router_bias_, ctx_.ckpt.router_bias);
  if (experts_) experts_->load_checkpoint();
  if (!ctx_.cfg.spec.adaptive_budget || ctx_.tp == 1) {
    ctx_.upload(expert_scale_, ctx_.ckpt.expert_scale);
    return;
  }
  // The confidence head sharded by expert: this TP rank holds the experts e with e % tp == tp_rank
  // (the others' scales are 0 here), and the all-reduce sums the shards' partial confidences.
  std::vector<float> shard = ctx_.ckpt.expert_scale;
  for (size_t e = 0; e < shard.size(); ++e)
    if (static_cast<int>(e) % ctx_.tp != ctx_.tp_rank) shard[e] = 0.0f;
  ctx_.upload(expert_scale_, shard);
}

namespace {

// The draft batch: the rows that sampled, compacted; their target rows are the context.
struct DraftBatch {
  std::vector<int32_t> idx, ctx_start, ctx_end, batch_row;
  std::vector<int64_t> ids;
};

DraftBatch draft_batch(const SchedulerOutput& so, const std::vector<int32_t>& sampled) {
  DraftBatch b;
  int32_t row = 0;
  size_t next = 0;
  for (size_t i = 0; i < so.requests.size(); ++i) {
    const ScheduledRequest& r = so.requests[i];
    if (next < sampled.size() && sampled[next] == static_cast<int32_t>(i)) {
      b.idx.push_back(r.idx);
      b.ctx_start.push_back(row);
      b.ctx_end.push_back(row + r.num_tokens);
      b.batch_row.push_back(static_cast<int32_t>(i));
      b.ids.push_back(r.id);
      ++next;
    }
    row += r.num_tokens;
  }
  PPSPEC_ASSERT(b.idx.size() == sampled.size(), "{} of {} sampled rows found in the batch", b.idx.size(),
                sampled.size());
  return b;
}

}  // namespace

int Drafter::propose(const SchedulerOutput& so, const std::vector<int32_t>& sampled, FeedbackBuffers& slot,
                     RequestTables& tables, const StepInputs& in, const TargetModel& model, WriteCheck& check,
                     int32_t query_rows, int32_t budget) {
  const auto nd = static_cast<int32_t>(sampled.size());
  if (nd == 0) return 0;
  const auto n = static_cast<int32_t>(so.requests.size());
  const int k = ctx_.k;
  PPSPEC_ASSERT(budget >= 1 && budget <= k && (budget == k || ctx_.cfg.spec.adaptive_budget),
                "a draft budget of {} with K = {}", budget, k);
  const DraftBatch b = draft_batch(so, sampled);
  ctx_.upload(idx_, b.idx);
  ctx_.upload(ctx_start_, b.ctx_start);
  ctx_.upload(ctx_end_, b.ctx_end);
  ctx_.upload(batch_row_, b.batch_row);
  ctx_.run("dflash_gather", "",
           kn::DflashGatherKernel{n, span_of<int32_t>(slot.counts), span_of<int32_t>(batch_row_),
                                  span_of<int32_t>(ctx_end_), span_of<int32_t>(num_sampled_),
                                  span_of<int32_t>(num_rejected_), span_of<int32_t>(anchor_)},
           nd);
  ctx_.run("gather_block_rows", "",
           kn::GatherBlockRowsKernel{span_of<int32_t>(idx_), span_of<int32_t>(tables.block_table), ctx_.max_blocks,
                                     span_of<int32_t>(block_rows_)},
           nd);
  // The first forward's count (EAGLE's others sync again, each its own forward).
  const int32_t q_rows = forward_rows(so.step, std::max(query_rows, nd * budget));
  prepare_inputs(so.step, nd, q_rows, budget, tables, in, check);
  if (ctx_.observed()) probe_kv_slots(so.step, b.ids, b.ctx_start, b.ctx_end, budget);
  ctx_.run("draft_context_kv", "",
           kn::DraftContextKvRangesKernel{
               {span_of<int64_t>(ctx_slots_), span_of<uint32_t>(model.ctx), span_of<uint32_t>(kv_)},
               span_of<int32_t>(ctx_start_),
               span_of<int32_t>(ctx_end_)},
           nd);
  if (ctx_.cfg.eagle()) {
    eagle_forwards(so.step, nd, q_rows, model);
  } else {
    forward(so.step, nd, budget, model);
    route(so.step, nd * budget, q_rows);
  }
  if (ctx_.cfg.spec.adaptive_budget) sum_confidence(so.step, q_rows);
  // req_states.draft_tokens[idx_mapping] = draft_tokens; the batch's rows for the relay gathered on main (#55745).
  ctx_.run("set_draft_tokens", "",
           kn::SetDraftTokensKernel{k, span_of<int32_t>(idx_), span_of<int64_t>(drafts_),
                                    span_of<int64_t>(tables.draft_tokens)},
           nd);
  if (ctx_.observed()) probe_proposed(so.step, b.ids, budget);
  const kn::GatherDraftsKernel gather{k, span_of<int32_t>(in.idx_mapping), span_of<int64_t>(tables.draft_tokens),
                                      span_of<int64_t>(slot.drafts)};
  if (!ctx_.cfg.faults.unordered_draft_gather) {
    ctx_.run("gather_drafts", "", gather, n);
    return nd;
  }
  // The fault: on the side stream, ordered after this step's main-stream work only.
  ctx_.dev.record(gathered_after_, ctx_.main);
  ctx_.dev.stream_wait(ctx_.side, gathered_after_);
  launch_kernel(ctx_.dev, ctx_.side, core::KernelRef{"gather_drafts", ""}, gather, n);
  return nd;
}

void Drafter::probe_proposed(int64_t step, const std::vector<int64_t>& ids, int32_t budget) {
  const auto nd = static_cast<int64_t>(ids.size());
  read_back(ctx_.dev, ctx_.main, {drafts_.rows(0, nd)},
            [&rt = ctx_.rt, rank = ctx_.rank, step, ids, k = ctx_.k, budget](const HostRows& h) {
              // The drafts proposed are the budget's; the columns past it hold the MASK id, verified by no step.
              for (size_t d = 0; d < ids.size(); ++d) {
                const auto drafts = h.get<int64_t>(0).subspan(d * static_cast<size_t>(k), static_cast<size_t>(budget));
                publish(rt, Probe{rank, step, ids[d]}, core::DraftsProbe{core::EventKind::drafts_proposed, drafts});
              }
            });
}

void Drafter::prepare_inputs(int64_t step, int32_t nd, int32_t q_rows, int32_t budget, const RequestTables& tables,
                             const StepInputs& in, WriteCheck& check) {
  kn::PrepareDflashInputsKernel pd{};
  pd.num_reqs = nd;
  pd.num_query_per_req = budget;
  pd.max_num_reqs = ctx_.max_reqs;
  pd.max_num_tokens = q_rows;
  pd.idx_mapping = span_of<int32_t>(idx_);
  pd.ctx_start = span_of<int32_t>(ctx_start_);
  pd.ctx_end = span_of<int32_t>(ctx_end_);
  pd.target_positions = span_of<int64_t>(in.positions);
  pd.num_sampled = span_of<int32_t>(num_sampled_);
  pd.num_rejected = span_of<int32_t>(num_rejected_);
  pd.last_sampled = span_of<int64_t>(tables.last_sampled);
  pd.next_prefill_tokens = span_of<int64_t>(next_prefill_);
  pd.block_table = span_of<int32_t>(block_rows_);
  pd.max_blocks = ctx_.max_blocks;
  pd.block_size = ctx_.cfg.model.block_size;
  pd.mask_id = ctx_.cfg.model.vocab - 1;
  pd.max_model_len = ctx_.cfg.model.max_model_len;
  pd.sample_from_anchor = true;
  pd.req_temperature = span_of<float>(tables.temperature);
  pd.req_seeds = span_of<int64_t>(tables.seeds);
  pd.clear_padding = !ctx_.cfg.faults.uncleared_padding;
  pd.context_positions = span_of<int64_t>(ctx_positions_);
  pd.context_slot_mapping = span_of<int64_t>(ctx_slots_);
  pd.input_ids = span_of<int32_t>(input_ids_);
  pd.positions = span_of<int64_t>(positions_);
  pd.is_padding = span_of<bool>(is_padding_);
  pd.query_slot_mapping = span_of<int64_t>(query_slots_);
  pd.sample_indices = span_of<int32_t>(sample_idx_);
  pd.sample_pos = span_of<int64_t>(sample_pos_);
  pd.sample_idx_mapping = span_of<int32_t>(sample_map_);
  pd.query_start_loc = span_of<int32_t>(query_start_);
  pd.seq_lens = span_of<int32_t>(seq_lens_);
  pd.temperature = span_of<float>(temperature_);
  pd.seeds = span_of<int64_t>(seeds_);
  const int32_t used = nd * budget;
  const bool observed = ctx_.observed();
  const std::vector<core::Buffer> checked = {input_ids_, positions_, is_padding_};
  if (observed && used < q_rows) check.poison(checked, used, q_rows);
  ctx_.run("prepare_dflash_inputs", "", pd, nd);
  if (observed && ctx_.cfg.spec.adaptive_budget)
    // What the kernel was launched with is the rank's decision (the draft block's rows per request).
    publish(ctx_.rt, Probe{ctx_.rank, step, -1}, core::DraftBudgetProbe{pd.num_query_per_req, budget_estimate_});
  if (!observed || used == q_rows) return;
  check.restore(checked, used, q_rows);
  read_back(ctx_.dev, ctx_.main,
            {input_ids_.rows(used, q_rows - used), positions_.rows(used, q_rows - used),
             is_padding_.rows(used, q_rows - used), query_slots_.rows(used, q_rows - used), check.flags()},
            [&rt = ctx_.rt, rank = ctx_.rank, step, used, q_rows, stride = check.stride()](const HostRows& h) {
              std::vector<int64_t> pad;
              for (int64_t i = 0; i < q_rows - used; ++i)
                core::PreparedPaddingRow{h.at<int32_t>(0, i), h.at<int64_t>(1, i), h.at<uint8_t>(2, i) != 0 ? 1 : 0,
                                         h.at<int64_t>(3, i), unwritten_at(h, 4, 3, stride, i)}
                    .append_to(pad);
              publish(rt, Probe{rank, step, -1},
                      core::PaddingRowsProbe{core::PaddingKernel::prepare_dflash_inputs, used, pad});
            });
}

void Drafter::probe_kv_slots(int64_t step, const std::vector<int64_t>& ids, const std::vector<int32_t>& ctx_start,
                             const std::vector<int32_t>& ctx_end, int32_t budget) {
  const int64_t queries = static_cast<int64_t>(ids.size()) * budget;
  const int64_t context = ctx_end.back();
  read_back(ctx_.dev, ctx_.main,
            {positions_.rows(0, queries), query_slots_.rows(0, queries), ctx_positions_.rows(0, context),
             ctx_slots_.rows(0, context)},
            [&rt = ctx_.rt, rank = ctx_.rank, step, ids, ctx_start, ctx_end, k = budget](const HostRows& h) {
              std::vector<int64_t> query_rows, context_rows;
              for (size_t d = 0; d < ids.size(); ++d) {
                for (int64_t q = static_cast<int64_t>(d) * k; q < static_cast<int64_t>(d + 1) * k; ++q)
                  core::KvSlotRow{ids[d], h.at<int64_t>(0, q), h.at<int64_t>(1, q)}.append_to(query_rows);
                for (int32_t t = ctx_start[d]; t < ctx_end[d]; ++t)
                  if (h.at<int64_t>(3, t) != kn::kPadSlot)
                    core::KvSlotRow{ids[d], h.at<int64_t>(2, t), h.at<int64_t>(3, t)}.append_to(context_rows);
              }
              publish(rt, Probe{rank, step, -1}, core::KvSlotsProbe{core::KvWriter::draft_query, query_rows});
              publish(rt, Probe{rank, step, -1}, core::KvSlotsProbe{core::KvWriter::draft_context, context_rows});
            });
}

void Drafter::forward(int64_t step, int32_t nd, int32_t budget, const TargetModel& model) {
  const core::Buffer& table = embedding(model);
  kn::DraftForwardKernel fw{budget,
                            span_of<int32_t>(anchor_),
                            span_of<uint32_t>(model.ctx),
                            span_of<int32_t>(input_ids_),
                            span_of<int64_t>(positions_),
                            span_of<uint32_t>(table),
                            ctx_.ckpt.consts.r,
                            ctx_.cfg.model.vocab,
                            span_of<int64_t>(drafts_),
                            ctx_.k};
  ctx_.run("draft_forward", "", fw, nd);
  probe_table(step, fw.draft_embed);
}

const core::Buffer& Drafter::embedding(const TargetModel& model) const {
  // Under PP the drafter reads its own table; the fault aliases the target's, which lives on stage 0.
  const bool own_table = ctx_.pp > 1 && !ctx_.cfg.faults.alias_target_embed;
  return own_table ? embed_ : model.embed_tokens;
}

void Drafter::eagle_forwards(int64_t step, int32_t nd, int32_t q_rows, const TargetModel& model) {
  PPSPEC_ASSERT(taps_ != nullptr && !taps_->all().empty(), "an EAGLE drafter with no taps bound");
  const core::Buffer& table = embedding(model);
  kn::EagleStepKernel fw{};
  fw.k = ctx_.k;
  fw.num_taps = static_cast<int32_t>(taps_->all().size());
  for (int32_t t = 0; t < fw.num_taps; ++t) fw.taps[t] = span_of<uint32_t>(taps_->all()[static_cast<size_t>(t)]);
  fw.anchor_row = span_of<int32_t>(anchor_);
  fw.input_ids = span_of<int32_t>(input_ids_);
  fw.positions = span_of<int64_t>(positions_);
  fw.draft_embed = span_of<uint32_t>(table);
  fw.r_pow = ctx_.ckpt.consts.r;
  fw.vocab = ctx_.cfg.model.vocab;
  fw.state = span_of<uint32_t>(eagle_state_);
  fw.cursor = span_of<int64_t>(eagle_cursor_);
  fw.drafts = span_of<int64_t>(drafts_);
  // vLLM's EagleProposer.propose: K forwards, each one a pass of the draft model (its MoE layer,
  // and under DP its collectives); the first from the taps, the others from the draft before.
  for (fw.pass = 0; fw.pass < ctx_.k; ++fw.pass) {
    if (fw.pass > 0) {
      const int32_t rows = forward_rows(step, q_rows);
      PPSPEC_ASSERT(rows == q_rows, "EAGLE forward {} of step {}: the DP group's rows went from {} to {}", fw.pass,
                    step, q_rows, rows);
    }
    ctx_.run("eagle_step", "", fw, nd);
    route(step, nd * ctx_.k, q_rows, fw.pass == 0);
  }
  probe_table(step, fw.draft_embed);
}

void Drafter::probe_table(int64_t step, kn::Span<const uint32_t> table) {
  if (probed_table_ || !ctx_.observed()) return;
  // The first forward tells the checkers which table the drafter read: its hash, and how many of its
  // entries still hold the allocation's poison (never written on this rank). The memory read back is
  // the kernel's own argument, not a table chosen again here: what the kernel reads is the evidence.
  probed_table_ = true;
  const core::Buffer read(const_cast<uint32_t*>(table.data), nullptr, core::Dtype::u32, core::Shape{table.size, 1});
  read_back(ctx_.dev, ctx_.main, {read}, [&rt = ctx_.rt, rank = ctx_.rank, step](const HostRows& h) {
    const auto words = h.get<uint32_t>(0);
    int64_t poisoned = 0;
    for (uint32_t w : words) poisoned += w == kn::kPoisonWord ? 1 : 0;
    const auto hash = static_cast<int64_t>(core::fnv1a_words(words.data(), words.size()));
    publish(rt, Probe{rank, step, -1},
            core::TableBoundProbe{core::WeightTable::draft_embed_tokens, hash, static_cast<int64_t>(words.size()),
                                  poisoned});
  });
}

void Drafter::route(int64_t step, int32_t used_rows, int32_t q_rows, bool probe) {
  // The MoE layer over every query row of the graph, padding included.
  const int E = ctx_.cfg.model.experts;
  const int top = ctx_.cfg.model.topk;
  ctx_.run("draft_gate", "",
           kn::DraftGateKernel{span_of<int32_t>(input_ids_), span_of<int64_t>(positions_), E, span_of<float>(gating_)},
           q_rows);
  kn::TopkSoftplusSqrtKernel router{span_of<float>(gating_),
                                    span_of<float>(router_bias_),
                                    span_of<bool>(is_padding_),
                                    E,
                                    top,
                                    true,
                                    1.0f,
                                    !ctx_.cfg.faults.router_ignores_padding,
                                    span_of<int32_t>(topk_ids_),
                                    span_of<float>(topk_weights_)};
  ctx_.run("topk_softplus_sqrt", "", router, q_rows);
  if (probe && ctx_.observed() && used_rows < q_rows)
    read_back(ctx_.dev, ctx_.main,
              {topk_ids_.rows(used_rows, q_rows - used_rows), topk_weights_.rows(used_rows, q_rows - used_rows)},
              [&rt = ctx_.rt, rank = ctx_.rank, step, used_rows, q_rows, top](const HostRows& h) {
                // Per padding row: the expert ids it selected, then how many of its weights are non-zero.
                std::vector<int64_t> pad;
                for (int64_t q = 0; q < q_rows - used_rows; ++q) {
                  int64_t nonzero = 0;
                  for (int j = 0; j < top; ++j) {
                    pad.push_back(h.at<int32_t>(0, q * top + j));
                    nonzero += h.at<float>(1, q * top + j) != 0.0f ? 1 : 0;
                  }
                  pad.push_back(nonzero);
                }
                publish(rt, Probe{rank, step, -1},
                        core::PaddingRowsProbe{core::PaddingKernel::topk_softplus_sqrt, used_rows, pad});
              });
  if (experts_) {
    experts_->run(step, q_rows, topk_ids_, topk_weights_, confidence_);
    return;
  }
  ctx_.run("draft_experts", "",
           kn::DraftExpertsKernel{span_of<int32_t>(topk_ids_), span_of<float>(topk_weights_), top,
                                  span_of<float>(expert_scale_), span_of<float>(confidence_)},
           q_rows);
}

// The confidence head's output in fixed point, summed over the TP ranks' expert shards: the
// all-reduce runs over the draft block's graph rows, so ranks that drafted blocks of different sizes
// post it with different counts.
void Drafter::sum_confidence(int64_t step, int32_t q_rows) {
  ctx_.run("confidence_to_fixed", "",
           kn::ConfidenceToFixedKernel{span_of<float>(confidence_), span_of<int32_t>(confidence_fixed_)}, q_rows);
  if (tp_ != nullptr)
    tp_->all_reduce(confidence_fixed_.rows(0, q_rows), core::ReduceOp::sum, ctx_.main,
                    core::Label{"tp.draft_confidence", step});
}

}  // namespace ppspec::engine
