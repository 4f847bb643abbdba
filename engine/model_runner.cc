// The step of a worker: execute_model, then sample_tokens, in the order of DESIGN §6.2.
#include <algorithm>
#include <cstring>
#include <fmt/format.h>

#include "core/hash.h"
#include "engine/probe.h"
#include "engine/readback.h"
#include "engine/span_of.h"
#include "engine/worker.h"
#include "kernels/drafter.h"
#include "kernels/launch.h"
#include "kernels/post_update.h"
#include "kernels/prepare_dflash_inputs.h"
#include "kernels/prepare_inputs.h"
#include "kernels/rejection_sample.h"
#include "kernels/topk_softplus_sqrt.h"
#include "kernels/toy_model.h"
#include "kernels/write_check.h"

namespace ppspec::engine {

namespace kn = ppspec::kernels;

namespace {

// Publishes an engine probe with a list of integers.
void probe(core::Runtime& rt, core::EventKind kind, core::RankId rank, int64_t step, int64_t req,
           const std::vector<int64_t>& ints, int64_t value = -1, std::string_view text = {}) {
  publish(rt, Probe{kind, rank, step, req, value, text}, ints);
}

// 1 when a write check found element `e` of any of its `bands` buffers unstored (part `part`).
int64_t unwritten_at(const HostRows& h, size_t part, int bands, int64_t stride, int64_t e) {
  for (int b = 0; b < bands; ++b)
    if (h.at<uint8_t>(part, b * stride + e) != 0) return 1;
  return 0;
}

std::vector<int32_t> query_starts(const SchedulerOutput& so) {
  std::vector<int32_t> qs{0};
  for (const ScheduledRequest& r : so.requests) qs.push_back(qs.back() + r.num_tokens);
  return qs;
}

template <typename T>
std::vector<int64_t> as_ints(std::span<const T> values) {
  return std::vector<int64_t>(values.begin(), values.end());
}

}  // namespace

void Worker::step(const SchedulerOutput& so) {
  // Reports of what the host does from here (a module load, a blocking call) name the step.
  // The runtime keeps a view of the text in what it records: keep every one alive with the worker.
  rt_.set_call_site(call_sites_.emplace_back(step_call_site(so.step)));
  // 1. Earlier stages adopt the feedback of step T-pp (the deferred update).
  if (!last_ && pp_handler_) deferred_update();
  // 2. Finished and new requests, block tables; then the batch, decode rows first (the scheduler
  // orders it); the graph size.
  apply_requests(so);
  if (so.num_tokens == 0) {
    // An idle step keeps the PP cadence: every rank takes it, nothing runs, nothing is posted.
    if (pp_handler_ && !last_) pp_handler_->receive(so);
    if (last_ && tp_rank_ == 0) rt_.channel("engine").send(ModelOutput{so.step, rt_.now(), {}});
    ++steps_;
    return;
  }
  const int32_t padded = graph_size(so.num_tokens);
  // 3. Inputs from this rank's own tables.
  prepare_inputs(so, padded);
  // 4. Activations in, own layers, activations out.
  if (!first_) exchange_activations(so, padded, true);
  forward(padded, graphs_.count(padded) > 0);
  if (!last_) exchange_activations(so, padded, false);
  sample_tokens(so, padded);
  ++steps_;
}

void Worker::deferred_update() {
  std::optional<PrevOutputs> prev = pp_handler_->get_prev_sampled_outputs();
  if (!prev) return;
  const int32_t n = prev->rows;
  upload(prev_idx_, prev->idx_mapping);
  FeedbackBuffers& slot = *prev->slot;
  const int kk = k_;
  if (cfg_.spec.feedback == Feedback::single_payload)
    run(main_, "unpack_payload", "",
        kn::UnpackPayloadKernel{n, kk, span_of<int64_t>(slot.payload), span_of<int64_t>(slot.sampled),
                                span_of<int32_t>(slot.counts), span_of<int64_t>(slot.drafts)},
        n);
  kn::PostUpdateKernel pk{span_of<int32_t>(prev_idx_),
                          span_of<int64_t>(slot.sampled),
                          span_of<int32_t>(slot.counts),
                          span_of<int32_t>(slot.counts).sub(n, n),
                          span_of<int32_t>(prev_query_len_),
                          prev->has_drafts ? span_of<int64_t>(slot.drafts) : kn::Span<int64_t>(),
                          kk,
                          true,
                          span_of<int64_t>(last_sampled_),
                          span_of<int32_t>(num_computed_),
                          span_of<int32_t>(total_len_),
                          span_of<int64_t>(draft_tokens_)};
  run(main_, "post_update", "deferred", kn::DeferredPostUpdateKernel{pk}, n);
  if (!prev->has_drafts || !rt_.events().active()) return;
  // The drafts the update adopted, as they are in the buffer it read them from.
  read_back(dev_, main_, {slot.drafts.rows(0, n)},
            [&rt = rt_, rank = rank_, step = prev->step, kk, p = std::move(*prev)](const HostRows& h) {
              for (int32_t r = 0; r < p.rows; ++r) {
                if (p.idx_mapping[static_cast<size_t>(r)] < 0) continue;
                probe(rt, core::EventKind::drafts_adopted, rank, step, p.req_ids[static_cast<size_t>(r)],
                      as_ints(h.get<int64_t>(0).subspan(static_cast<size_t>(r) * kk, static_cast<size_t>(kk))));
              }
            });
}

void Worker::apply_requests(const SchedulerOutput& so) {
  for (int32_t idx : so.finished)
    if (pp_handler_) pp_handler_->on_req_idx_freed(idx);
  for (const NewRequest& r : so.new_requests) {
    const int64_t i = r.idx;
    std::vector<int32_t> prompt = r.prompt;
    prompt.resize(static_cast<size_t>(cfg_.max_prompt()), 0);
    upload(prompt_.rows(i, 1), prompt);
    upload(num_computed_.rows(i, 1), std::vector<int32_t>{0});
    upload(prefill_len_.rows(i, 1), std::vector<int32_t>{static_cast<int32_t>(r.prompt.size())});
    upload(total_len_.rows(i, 1), std::vector<int32_t>{static_cast<int32_t>(r.prompt.size())});
    upload(last_sampled_.rows(i, 1), std::vector<int64_t>{0});
    // A reused slot must not verify the previous request's drafts.
    upload(draft_tokens_.rows(i, 1), std::vector<int64_t>(static_cast<size_t>(draft_tokens_.shape().cols), 0));
    upload(seeds_.rows(i, 1), std::vector<int64_t>{r.seed});
    upload(spread_.rows(i, 1), std::vector<uint32_t>{r.spread});
    upload(temperature_.rows(i, 1), std::vector<float>{static_cast<float>(r.spread) / 32.0f});
  }
  std::vector<int32_t> qs{0}, idx, qlen;
  for (const ScheduledRequest& r : so.requests) {
    if (!r.new_blocks.empty()) upload(block_table_.slice(r.idx, r.first_new_block, static_cast<int64_t>(r.new_blocks.size())), r.new_blocks);
    qs.push_back(qs.back() + r.num_tokens);
    idx.push_back(r.idx);
    qlen.push_back(r.num_tokens);
  }
  upload(query_start_, qs);
  upload(idx_mapping_, idx);
  upload(query_len_, qlen);
}

void Worker::prepare_inputs(const SchedulerOutput& so, int32_t padded_rows) {
  const auto n = static_cast<int32_t>(so.requests.size());
  kn::PrepareInputsKernel k{n,
                            so.num_tokens,
                            span_of<int32_t>(query_start_),
                            span_of<int32_t>(idx_mapping_),
                            span_of<int32_t>(num_computed_),
                            span_of<int32_t>(prefill_len_),
                            span_of<int32_t>(prompt_),
                            cfg_.max_prompt(),
                            span_of<int64_t>(last_sampled_),
                            span_of<int64_t>(draft_tokens_),
                            std::max(k_, 1),
                            span_of<int32_t>(block_table_),
                            max_blocks_,
                            cfg_.model.block_size,
                            !cfg_.faults.uncleared_padding,
                            span_of<int32_t>(input_ids_),
                            span_of<int64_t>(positions_),
                            span_of<int64_t>(slots_),
                            span_of<bool>(is_padding_),
                            span_of<int32_t>(row_req_),
                            padded_rows};
  const bool observed = rt_.events().active();
  const bool padded = padded_rows > so.num_tokens;
  const std::vector<core::Buffer> checked = {input_ids_, positions_, is_padding_};
  if (observed && padded) poison_rows(checked, so.num_tokens, padded_rows);
  run(main_, "prepare_inputs", "", k, n + 1);
  if (!observed) return;
  if (padded) restore_unwritten(checked, so.num_tokens, padded_rows);
  // The rows as the kernel left them: each request's inputs, and the padding rows a graph will read
  // (R10) with whether the kernel stored them this step.
  std::vector<int64_t> ids, decode;
  for (const auto& r : so.requests) {
    ids.push_back(r.id);
    decode.push_back(r.decode() ? 1 : 0);
  }
  const int64_t used = so.num_tokens;
  read_back(dev_, main_,
            {input_ids_.rows(0, padded_rows), positions_.rows(0, padded_rows), is_padding_.rows(0, padded_rows),
             slots_.rows(0, padded_rows), unwritten_rows(checked.size(), used, padded_rows)},
            [&rt = rt_, rank = rank_, step = so.step, ids, decode, qs = query_starts(so), used, padded_rows,
             stride = check_stride_](const HostRows& h) {
              for (size_t r = 0; r < ids.size(); ++r) {
                std::vector<int64_t> v{h.at<int64_t>(1, qs[r])};
                for (int32_t i = qs[r]; i < qs[r + 1]; ++i) v.push_back(h.at<int32_t>(0, i));
                probe(rt, core::EventKind::inputs_built, rank, step, ids[r], v, decode[r]);
              }
              if (padded_rows == used) return;
              std::vector<int64_t> pad;
              for (int64_t i = used; i < padded_rows; ++i)
                pad.insert(pad.end(), {h.at<int32_t>(0, i), h.at<int64_t>(1, i), h.at<uint8_t>(2, i) != 0 ? 1 : 0,
                                       h.at<int64_t>(3, i), unwritten_at(h, 4, 3, stride, i - used)});
              probe(rt, core::EventKind::padding_rows, rank, step, -1, pad, used, "prepare_inputs");
            });
}

void Worker::exchange_activations(const SchedulerOutput& so, int32_t rows, bool receive) {
  rt_.group_start();
  if (receive) {
    pp_comm_->recv(c_.rows(0, rows), stage_ - 1, main_, core::Label{"act.ctx", so.step});
    pp_comm_->recv(x_.rows(0, rows), stage_ - 1, main_, core::Label{"act.hidden", so.step});
  } else {
    pp_comm_->send(c_.rows(0, rows), stage_ + 1, main_, core::Label{"act.ctx", so.step});
    pp_comm_->send(x_.rows(0, rows), stage_ + 1, main_, core::Label{"act.hidden", so.step});
  }
  rt_.group_end();
}

void Worker::forward(int32_t rows, bool use_graph) {
  if (use_graph)
    dev_.graph_launch(graphs_.at(rows), main_);  // R10: the graph reads all its captured rows
  else
    forward_kernels(rows);
}

void Worker::forward_kernels(int32_t rows) {
  const int D = cfg_.model.lanes;
  const kn::RowInputs in{span_of<int32_t>(input_ids_), span_of<int64_t>(positions_), span_of<int64_t>(slots_), span_of<int32_t>(row_req_),
                         span_of<int32_t>(block_table_), max_blocks_, cfg_.model.block_size};
  for (int l = layers_.first; l < layers_.last; ++l) {
    const size_t li = static_cast<size_t>(l - layers_.first);
    if (l == 0) {
      kn::EmbedKernel e{in, span_of<uint32_t>(embed_ctx_), span_of<uint32_t>(embed_deep_), D, lane_begin_, lane_count_,
                        ckpt_.consts.r, span_of<uint32_t>(ctx_kv_), span_of<uint32_t>(x_)};
      run(main_, "embed", "", e, rows);
      kn::ContextSumKernel cs{in, span_of<uint32_t>(ctx_kv_), span_of<uint32_t>(c_)};
      run(main_, "context_sum", "", cs, rows);
    }
    kn::LayerPartialKernel p{span_of<int32_t>(row_req_), span_of<uint32_t>(x_), span_of<uint32_t>(w_[li]), span_of<uint32_t>(u_[li]), D,
                             lane_begin_, lane_count_, span_of<uint32_t>(y_)};
    run(main_, "layer_partial", "", p, rows);
    if (tp_ > 1) tp_comm_->all_reduce(y_.rows(0, rows), core::ReduceOp::sum, main_, core::Label{"tp.layer", l});
    kn::LayerKvWriteKernel kw{in, span_of<uint32_t>(y_), span_of<uint32_t>(v_[li]), D, lane_begin_, lane_count_, span_of<uint32_t>(kv_[li])};
    run(main_, "layer_kv_write", "", kw, rows);
    kn::LayerOutKernel o{in, span_of<uint32_t>(y_), span_of<uint32_t>(kv_[li]), D, lane_begin_, lane_count_, span_of<uint32_t>(x_)};
    run(main_, "layer_out", "", o, rows);
  }
  if (!last_) return;
  kn::HeadPartialKernel hp{span_of<int32_t>(row_req_), span_of<uint32_t>(x_), span_of<uint32_t>(head_), lane_begin_, lane_count_,
                           span_of<uint32_t>(h_)};
  run(main_, "head_partial", "", hp, rows);
  if (tp_ > 1) tp_comm_->all_reduce(h_.rows(0, rows), core::ReduceOp::sum, main_, core::Label{"tp.head", -1});
  kn::LogitsKernel lg{span_of<int32_t>(row_req_), span_of<uint32_t>(c_), span_of<uint32_t>(h_), cfg_.model.vocab,
                      ckpt_.consts.accept_1024, span_of<int64_t>(greedy_)};
  run(main_, "logits", "", lg, rows);
}

void Worker::sample_tokens(const SchedulerOutput& so, int32_t padded_rows) {
  if (last_) {
    sample_last_stage(so, padded_rows);
    return;
  }
  // Post this step's feedback receives now; they are adopted pp steps later.
  if (pp_handler_) pp_handler_->receive(so);
  // postprocess_num_computed_tokens: advance optimistically by the whole query; the deferred
  // update subtracts the rejected drafts.
  const auto n = static_cast<int32_t>(so.requests.size());
  run(main_, "advance_num_computed", "",
      kn::AdvanceNumComputedKernel{span_of<int32_t>(idx_mapping_), span_of<int32_t>(query_len_), span_of<int32_t>(num_computed_)}, n);
}

void Worker::sample_last_stage(const SchedulerOutput& so, int32_t padded_rows) {
  (void)padded_rows;
  const auto n = static_cast<int32_t>(so.requests.size());
  // pp = 1: no feedback; the sampler's outputs live in buffers of their own.
  FeedbackBuffers& slot = pp_handler_ ? pp_handler_->last_stage_slot(so.step) : own_slot_;

  // Which rows carry logits: every row of a decode request, the last row of a final prefill chunk.
  std::vector<int32_t> start, count, rows_with_samples;
  std::vector<int64_t> out_index;
  bool any_drafts = false;
  int32_t row = 0;
  for (size_t i = 0; i < so.requests.size(); ++i) {
    const ScheduledRequest& r = so.requests[i];
    if (r.decode()) {
      start.push_back(row);
      count.push_back(r.num_tokens);
      any_drafts = any_drafts || r.num_tokens > 1;
    } else if (r.produces_sample()) {
      start.push_back(row + r.num_tokens - 1);
      count.push_back(1);
    } else {
      start.push_back(row);
      count.push_back(0);
    }
    if (r.produces_sample()) rows_with_samples.push_back(static_cast<int32_t>(i));
    row += r.num_tokens;
    out_index.push_back(r.out_index);
  }
  upload(logit_start_, start);
  upload(num_logits_, count);
  upload(b_out_index_, out_index);
  // Seeds and spreads by batch row, gathered from the request tables.
  run(main_, "gather_sampling_params", "",
      kn::GatherSamplingParamsKernel{span_of<int32_t>(idx_mapping_), span_of<int64_t>(seeds_), span_of<uint32_t>(spread_),
                                     span_of<int64_t>(b_seeds_), span_of<uint32_t>(b_spread_)},
      n);
  kn::RejectionSampleKernel rs{span_of<int32_t>(logit_start_), span_of<int32_t>(num_logits_), span_of<int32_t>(input_ids_),
                               span_of<int64_t>(greedy_),     span_of<uint32_t>(h_),        span_of<int64_t>(b_seeds_),
                               span_of<int64_t>(b_out_index_), span_of<uint32_t>(b_spread_), cfg_.model.vocab,
                               k_ + 1,                     span_of<int64_t>(slot.sampled), span_of<int32_t>(slot.counts),
                               span_of<int32_t>(slot.counts).sub(n, n)};
  run(main_, "rejection_sample", "", rs, n);
  if (rt_.events().active()) probe_sampled(so, slot);
  // Messages 1 and 2 of the feedback, right after sampling.
  if (pp_handler_) pp_handler_->broadcast(so, slot, !any_drafts);
  // postprocess_sampled: the last stage's own post_update, now.
  kn::PostUpdateKernel pk{span_of<int32_t>(idx_mapping_), span_of<int64_t>(slot.sampled), span_of<int32_t>(slot.counts),
                          span_of<int32_t>(slot.counts).sub(n, n), span_of<int32_t>(query_len_), {}, k_, false,
                          span_of<int64_t>(last_sampled_), span_of<int32_t>(num_computed_), span_of<int32_t>(total_len_),
                          span_of<int64_t>(draft_tokens_)};
  run(main_, "post_update", "last", pk, n);

  int drafted = 0;
  if (k_ > 0 && !so.dummy) drafted = propose_drafts(so, rows_with_samples, slot);
  if (pp_handler_ && (drafted > 0 || cfg_.spec.feedback == Feedback::single_payload || k_ == 0)) {
    if (cfg_.spec.feedback == Feedback::single_payload)
      run(main_, "pack_payload", "",
          kn::PackPayloadKernel{n, k_, drafted > 0, span_of<int64_t>(slot.sampled), span_of<int32_t>(slot.counts),
                                span_of<int64_t>(slot.drafts), span_of<int64_t>(slot.payload)},
          n);
    pp_handler_->broadcast_drafts(so, slot);
  }
  // The second call site, beside set_draft_tokens() (#50514): it relays drafts that a speculator-less
  // path wrote. This engine has no such path, and the seed PR gates the site out whenever the
  // speculator ran; the merge that kept it ungated (5b572da027) posted every step's drafts twice.
  const bool speculator_ran = drafted > 0;
  if (pp_handler_ && speculator_ran && cfg_.faults.double_post_drafts) pp_handler_->broadcast_drafts(so, slot);
  send_output(so, slot, rows_with_samples);
}

void Worker::probe_sampled(const SchedulerOutput& so, FeedbackBuffers& slot) {
  const auto n = static_cast<int64_t>(so.requests.size());
  std::vector<int64_t> ids;
  for (const auto& r : so.requests) ids.push_back(r.id);
  read_back(dev_, main_, {slot.sampled.rows(0, n), counts_view(slot, n)},
            [&rt = rt_, rank = rank_, step = so.step, ids, width = k_ + 1](const HostRows& h) {
              const auto n_rows = static_cast<int64_t>(ids.size());
              for (int64_t r = 0; r < n_rows; ++r) {
                const int32_t sampled = h.at<int32_t>(1, r);
                if (sampled == 0) continue;
                const auto t = h.get<int64_t>(0).subspan(static_cast<size_t>(r * width), static_cast<size_t>(sampled));
                probe(rt, core::EventKind::tokens_sampled, rank, step, ids[static_cast<size_t>(r)], as_ints(t),
                      h.at<int32_t>(1, n_rows + r));
              }
            });
}

int Worker::propose_drafts(const SchedulerOutput& so, const std::vector<int32_t>& rows_with_samples,
                           FeedbackBuffers& slot) {
  const auto nd = static_cast<int32_t>(rows_with_samples.size());
  if (nd == 0) return 0;
  const auto n = static_cast<int32_t>(so.requests.size());
  const int kk = k_;
  // The draft batch: the rows that sampled, compacted; their target rows are the context.
  std::vector<int32_t> didx, cs, ce, brow;
  std::vector<int64_t> ids;
  {
    int32_t row = 0;
    size_t next = 0;
    for (size_t i = 0; i < so.requests.size(); ++i) {
      const ScheduledRequest& r = so.requests[i];
      if (next < rows_with_samples.size() && rows_with_samples[next] == static_cast<int32_t>(i)) {
        didx.push_back(r.idx);
        cs.push_back(row);
        ce.push_back(row + r.num_tokens);
        brow.push_back(static_cast<int32_t>(i));
        ids.push_back(r.id);
        ++next;
      }
      row += r.num_tokens;
    }
  }
  upload(d_idx_, didx);
  upload(d_ctx_start_, cs);
  upload(d_ctx_end_, ce);
  upload(d_brow_, brow);
  run(main_, "dflash_gather", "",
      kn::DflashGatherKernel{n, span_of<int32_t>(slot.counts), span_of<int32_t>(d_brow_), span_of<int32_t>(d_ctx_end_),
                             span_of<int32_t>(d_num_sampled_), span_of<int32_t>(d_num_rejected_), span_of<int32_t>(d_anchor_)},
      nd);
  run(main_, "gather_block_rows", "",
      kn::GatherBlockRowsKernel{span_of<int32_t>(d_idx_), span_of<int32_t>(block_table_), max_blocks_, span_of<int32_t>(d_block_rows_)},
      nd);
  // The drafter's graph: its query rows padded to the next capture size.
  const int32_t q_rows = std::max(graph_size(nd * kk), nd * kk);
  prepare_draft_inputs(so.step, nd, q_rows);
  run(main_, "draft_context_kv", "",
      kn::DraftContextKvRangesKernel{{span_of<int64_t>(d_ctx_slots_), span_of<uint32_t>(c_), span_of<uint32_t>(draft_kv_)},
                                     span_of<int32_t>(d_ctx_start_),
                                     span_of<int32_t>(d_ctx_end_)},
      nd);
  draft_forward(so.step, nd);
  route_draft_rows(so.step, nd * kk, q_rows);
  // req_states.draft_tokens[idx_mapping] = draft_tokens; then the batch's rows for the relay,
  // gathered on the main stream (#55745).
  run(main_, "set_draft_tokens", "",
      kn::SetDraftTokensKernel{kk, span_of<int32_t>(d_idx_), span_of<int64_t>(d_drafts_), span_of<int64_t>(draft_tokens_)}, nd);
  if (rt_.events().active())
    read_back(dev_, main_, {d_drafts_.rows(0, nd)}, [&rt = rt_, rank = rank_, step = so.step, ids, kk](const HostRows& h) {
      for (size_t d = 0; d < ids.size(); ++d)
        probe(rt, core::EventKind::drafts_proposed, rank, step, ids[d],
              as_ints(h.get<int64_t>(0).subspan(d * static_cast<size_t>(kk), static_cast<size_t>(kk))));
    });
  run(main_, "gather_drafts", "",
      kn::GatherDraftsKernel{kk, span_of<int32_t>(idx_mapping_), span_of<int64_t>(draft_tokens_), span_of<int64_t>(slot.drafts)}, n);
  return nd;
}

void Worker::prepare_draft_inputs(int64_t step, int32_t nd, int32_t q_rows) {
  kn::PrepareDflashInputsKernel pd{};
  pd.num_reqs = nd;
  pd.num_query_per_req = k_;
  pd.max_num_reqs = max_reqs_;
  pd.max_num_tokens = q_rows;
  pd.idx_mapping = span_of<int32_t>(d_idx_);
  pd.ctx_start = span_of<int32_t>(d_ctx_start_);
  pd.ctx_end = span_of<int32_t>(d_ctx_end_);
  pd.target_positions = span_of<int64_t>(positions_);
  pd.num_sampled = span_of<int32_t>(d_num_sampled_);
  pd.num_rejected = span_of<int32_t>(d_num_rejected_);
  pd.last_sampled = span_of<int64_t>(last_sampled_);
  pd.next_prefill_tokens = span_of<int64_t>(d_next_prefill_);
  pd.block_table = span_of<int32_t>(d_block_rows_);
  pd.max_blocks = max_blocks_;
  pd.block_size = cfg_.model.block_size;
  pd.mask_id = cfg_.model.vocab - 1;
  pd.max_model_len = cfg_.model.max_model_len;
  pd.sample_from_anchor = true;
  pd.req_temperature = span_of<float>(temperature_);
  pd.req_seeds = span_of<int64_t>(seeds_);
  pd.clear_padding = !cfg_.faults.uncleared_padding;
  pd.context_positions = span_of<int64_t>(d_ctx_pos_);
  pd.context_slot_mapping = span_of<int64_t>(d_ctx_slots_);
  pd.input_ids = span_of<int32_t>(d_input_ids_);
  pd.positions = span_of<int64_t>(d_positions_);
  pd.is_padding = span_of<bool>(d_is_padding_);
  pd.query_slot_mapping = span_of<int64_t>(d_slots_);
  pd.sample_indices = span_of<int32_t>(d_sample_idx_);
  pd.sample_pos = span_of<int64_t>(d_sample_pos_);
  pd.sample_idx_mapping = span_of<int32_t>(d_sample_map_);
  pd.query_start_loc = span_of<int32_t>(d_qsl_);
  pd.seq_lens = span_of<int32_t>(d_seq_lens_);
  pd.temperature = span_of<float>(d_temperature_);
  pd.seeds = span_of<int64_t>(d_seeds_);
  const int32_t used = nd * k_;
  const bool observed = rt_.events().active();
  const std::vector<core::Buffer> checked = {d_input_ids_, d_positions_, d_is_padding_};
  if (observed && used < q_rows) poison_rows(checked, used, q_rows);
  run(main_, "prepare_dflash_inputs", "", pd, nd);
  if (!observed || used == q_rows) return;
  restore_unwritten(checked, used, q_rows);
  read_back(dev_, main_,
            {d_input_ids_.rows(used, q_rows - used), d_positions_.rows(used, q_rows - used),
             d_is_padding_.rows(used, q_rows - used), d_slots_.rows(used, q_rows - used),
             unwritten_rows(checked.size(), used, q_rows)},
            [&rt = rt_, rank = rank_, step, used, q_rows, stride = check_stride_](const HostRows& h) {
              std::vector<int64_t> pad;
              for (int64_t i = 0; i < q_rows - used; ++i)
                pad.insert(pad.end(), {h.at<int32_t>(0, i), h.at<int64_t>(1, i), h.at<uint8_t>(2, i) != 0 ? 1 : 0,
                                       h.at<int64_t>(3, i), unwritten_at(h, 4, 3, stride, i)});
              probe(rt, core::EventKind::padding_rows, rank, step, -1, pad, used, "prepare_dflash_inputs");
            });
}

void Worker::draft_forward(int64_t step, int32_t nd) {
  // Under PP the drafter reads its own table; the fault aliases the target's, which lives on stage 0.
  const bool own_table = pp_ > 1 && !cfg_.faults.alias_target_embed;
  const core::Buffer& table = own_table ? draft_embed_ : embed_ctx_;
  kn::DraftForwardKernel fw{k_, span_of<int32_t>(d_anchor_), span_of<uint32_t>(c_), span_of<int32_t>(d_input_ids_), span_of<int64_t>(d_positions_),
                            span_of<uint32_t>(table), ckpt_.consts.r, cfg_.model.vocab, span_of<int64_t>(d_drafts_)};
  run(main_, "draft_forward", "", fw, nd);
  if (embed_probed_ || !rt_.events().active()) return;
  // The first forward tells the checkers which table the drafter read: its hash, and how many of its
  // entries still hold the allocation's poison (never written on this rank).
  embed_probed_ = true;
  read_back(dev_, main_, {table}, [&rt = rt_, rank = rank_, step](const HostRows& h) {
    const auto words = h.get<uint32_t>(0);
    int64_t poisoned = 0;
    for (uint32_t w : words) poisoned += w == kn::kPoisonWord ? 1 : 0;
    const auto hash = static_cast<int64_t>(core::fnv1a_words(words.data(), words.size()));
    probe(rt, core::EventKind::table_bound, rank, step, -1, {static_cast<int64_t>(words.size()), poisoned}, hash,
          "draft.embed_tokens");
  });
}

void Worker::route_draft_rows(int64_t step, int32_t used_rows, int32_t q_rows) {
  // The MoE layer over every query row of the graph, padding included.
  const int E = cfg_.model.experts;
  const int top = cfg_.model.topk;
  run(main_, "draft_gate", "", kn::DraftGateKernel{span_of<int32_t>(d_input_ids_), span_of<int64_t>(d_positions_), E, span_of<float>(d_gating_)},
      q_rows);
  kn::TopkSoftplusSqrtKernel router{span_of<float>(d_gating_), span_of<float>(d_router_bias_), span_of<bool>(d_is_padding_), E, top,
                                    true, 1.0f, !cfg_.faults.router_ignores_padding, span_of<int32_t>(d_topk_ids_),
                                    span_of<float>(d_topk_w_)};
  run(main_, "topk_softplus_sqrt", "", router, q_rows);
  if (rt_.events().active() && used_rows < q_rows)
    read_back(dev_, main_, {d_topk_ids_.rows(used_rows, q_rows - used_rows), d_topk_w_.rows(used_rows, q_rows - used_rows)},
              [&rt = rt_, rank = rank_, step, used_rows, q_rows, top](const HostRows& h) {
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
                probe(rt, core::EventKind::padding_rows, rank, step, -1, pad, used_rows, "topk_softplus_sqrt");
              });
  run(main_, "draft_experts", "",
      kn::DraftExpertsKernel{span_of<int32_t>(d_topk_ids_), span_of<float>(d_topk_w_), top, span_of<float>(d_expert_scale_),
                             span_of<float>(d_confidence_)},
      q_rows);
}

void Worker::send_output(const SchedulerOutput& so, FeedbackBuffers& slot, const std::vector<int32_t>& draft_rows) {
  if (tp_rank_ != 0) {
    dev_.stream_sync(main_);
    return;
  }
  const auto n = static_cast<int64_t>(so.requests.size());
  const int width = k_ + 1;
  host_sampled_.resize(static_cast<size_t>(n * width));
  host_counts_.resize(static_cast<size_t>(2 * n));
  host_inputs_.resize(static_cast<size_t>(so.num_tokens));
  dev_.download(main_, host_sampled_.data(), slot.sampled.rows(0, n));
  dev_.download(main_, host_counts_.data(), counts_view(slot, n));
  dev_.download(main_, host_inputs_.data(), input_ids_.rows(0, so.num_tokens));
  const bool drafted = k_ > 0 && !so.dummy && !draft_rows.empty();
  if (drafted) {
    host_drafts_.resize(static_cast<size_t>(draft_rows.size()) * static_cast<size_t>(k_));
    dev_.download(main_, host_drafts_.data(), d_drafts_.rows(0, static_cast<int64_t>(draft_rows.size())));
  }
  dev_.stream_sync(main_);
  ModelOutput out;
  out.step = so.step;
  out.time = rt_.now();
  int32_t row = 0;
  size_t next_draft = 0;
  for (int64_t i = 0; i < n; ++i) {
    const ScheduledRequest& r = so.requests[static_cast<size_t>(i)];
    RowOutput o;
    o.idx = r.idx;
    o.id = r.id;
    o.num_sampled = host_counts_[static_cast<size_t>(i)];
    o.num_rejected = host_counts_[static_cast<size_t>(n + i)];
    for (int j = 0; j < o.num_sampled; ++j) o.tokens.push_back(host_sampled_[static_cast<size_t>(i * width + j)]);
    if (r.decode())
      for (int32_t t = row + 1; t < row + r.num_tokens; ++t) o.drafts_verified.push_back(host_inputs_[static_cast<size_t>(t)]);
    if (drafted && next_draft < draft_rows.size() && draft_rows[next_draft] == static_cast<int32_t>(i)) {
      for (int j = 0; j < k_; ++j) o.drafts_proposed.push_back(host_drafts_[next_draft * static_cast<size_t>(k_) + static_cast<size_t>(j)]);
      ++next_draft;
    }
    row += r.num_tokens;
    out.rows.push_back(std::move(o));
  }
  rt_.channel("engine").send(std::move(out));
}

}  // namespace ppspec::engine
