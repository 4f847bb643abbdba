// The step of a worker: execute_model, then sample_tokens, in the order of DESIGN §6.2.
#include <algorithm>
#include <cstring>
#include <fmt/format.h>

#include "core/hash.h"
#include "engine/probe.h"
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

namespace ppspec::engine {

namespace kn = ppspec::kernels;

namespace {

// Publishes an engine probe with a list of integers (simulator only: kernel bodies run there).
void probe(core::Runtime& rt, core::EventKind kind, core::RankId rank, int64_t step, int64_t req,
           const std::vector<int64_t>& ints, int64_t value = -1, std::string_view text = {}) {
  publish(rt, Probe{kind, rank, step, req, value, text}, ints);
}

// 1 when any element of rows [first, first + n) of these buffers was never written (shadow bytes;
// always 0 on real hardware, where nothing tracks initialisation).
int64_t never_written(std::initializer_list<const core::Buffer*> bufs, int64_t row) {
  for (const core::Buffer* b : bufs)
    if (b->uninitialised_elements(row * b->shape().cols, b->shape().cols) > 0) return 1;
  return 0;
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
  if (cfg_.spec.feedback == Feedback::single_payload) {
    // Columns [0, K+1) sampled, [K+1, 2K+1) drafts, then num_sampled, num_rejected.
    const auto payload = span_of<int64_t>(slot.payload);
    const auto sampled = span_of<int64_t>(slot.sampled);
    const auto counts = span_of<int32_t>(slot.counts);
    const auto drafts = span_of<int64_t>(slot.drafts);
    launch(main_, "unpack_payload", "", n, [=] {
      const int width = 2 * kk + 3;
      for (int32_t r = 0; r < n; ++r) {
        for (int j = 0; j <= kk; ++j) sampled[r * (kk + 1) + j] = payload[r * width + j];
        for (int j = 0; j < kk; ++j) drafts[r * kk + j] = payload[r * width + kk + 1 + j];
        counts[r] = static_cast<int32_t>(payload[r * width + 2 * kk + 1]);
        counts[n + r] = static_cast<int32_t>(payload[r * width + 2 * kk + 2]);
      }
    });
  }
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
  core::Runtime& rt = rt_;
  const core::RankId rank = rank_;
  const int64_t step = prev->step;
  const auto ids = prev->req_ids;
  const bool has_drafts = prev->has_drafts;
  launch(main_, "post_update", "deferred", n, [=, &rt] {
    kn::run_on_cpu(pk, n);
    if (!has_drafts) return;
    for (int32_t r = 0; r < n; ++r) {
      if (pk.idx_mapping[r] < 0) continue;
      const auto drafts = pk.drafts.sub(r * kk, kk);
      const std::vector<int64_t> d(drafts.begin(), drafts.end());
      probe(rt, core::EventKind::drafts_adopted, rank, step, ids[static_cast<size_t>(r)], d);
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
  core::Runtime& rt = rt_;
  const core::RankId rank = rank_;
  const int64_t step = so.step;
  std::vector<int64_t> ids;
  for (const auto& r : so.requests) ids.push_back(r.id);
  std::vector<int64_t> decode;
  for (const auto& r : so.requests) decode.push_back(r.decode() ? 1 : 0);
  const core::Buffer ids_b = input_ids_, pos_b = positions_, pad_b = is_padding_, req_b = row_req_, slot_b = slots_;
  launch(main_, "prepare_inputs", "", n + 1, [=, &rt] {
    kn::run_on_cpu(k, n + 1);
    // What the kernel wrote, for the shadow bytes: slots and row owners always, the rest of a
    // padding row only when it clears padding.
    const int64_t written = k.clear_padding ? padded_rows : k.num_rows;
    for (const core::Buffer* b : {&ids_b, &pos_b, &pad_b}) b->mark_written(0, written);
    for (const core::Buffer* b : {&slot_b, &req_b}) b->mark_written(0, padded_rows);
    if (!rt.events().active()) return;
    for (int32_t r = 0; r < n; ++r) {
      std::vector<int64_t> v{k.positions[k.query_start[r]]};
      for (int32_t i = k.query_start[r]; i < k.query_start[r + 1]; ++i) v.push_back(k.input_ids[i]);
      probe(rt, core::EventKind::inputs_built, rank, step, ids[static_cast<size_t>(r)], v, decode[static_cast<size_t>(r)]);
    }
    if (padded_rows == k.num_rows) return;
    // The padding rows a graph will read (R10): id, position, is_padding, slot, never written.
    std::vector<int64_t> pad;
    for (int32_t i = k.num_rows; i < padded_rows; ++i)
      pad.insert(pad.end(), {k.input_ids[i], k.positions[i], k.is_padding[i] ? 1 : 0, k.slots[i],
                             never_written({&ids_b, &pos_b, &pad_b}, i)});
    probe(rt, core::EventKind::padding_rows, rank, step, -1, pad, k.num_rows, "prepare_inputs");
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
      launch(main_, "embed", "", rows, [e, rows] { kn::run_on_cpu(e, rows); });
      kn::ContextSumKernel cs{in, span_of<uint32_t>(ctx_kv_), span_of<uint32_t>(c_)};
      launch(main_, "context_sum", "", rows, [cs, rows] { kn::run_on_cpu(cs, rows); });
    }
    kn::LayerPartialKernel p{span_of<int32_t>(row_req_), span_of<uint32_t>(x_), span_of<uint32_t>(w_[li]), span_of<uint32_t>(u_[li]), D,
                             lane_begin_, lane_count_, span_of<uint32_t>(y_)};
    launch(main_, "layer_partial", "", rows, [p, rows] { kn::run_on_cpu(p, rows); });
    if (tp_ > 1) tp_comm_->all_reduce(y_.rows(0, rows), core::ReduceOp::sum, main_, core::Label{"tp.layer", l});
    kn::LayerKvWriteKernel kw{in, span_of<uint32_t>(y_), span_of<uint32_t>(v_[li]), D, lane_begin_, lane_count_, span_of<uint32_t>(kv_[li])};
    launch(main_, "layer_kv_write", "", rows, [kw, rows] { kn::run_on_cpu(kw, rows); });
    kn::LayerOutKernel o{in, span_of<uint32_t>(y_), span_of<uint32_t>(kv_[li]), D, lane_begin_, lane_count_, span_of<uint32_t>(x_)};
    launch(main_, "layer_out", "", rows, [o, rows] { kn::run_on_cpu(o, rows); });
  }
  if (!last_) return;
  kn::HeadPartialKernel hp{span_of<int32_t>(row_req_), span_of<uint32_t>(x_), span_of<uint32_t>(head_), lane_begin_, lane_count_,
                           span_of<uint32_t>(h_)};
  launch(main_, "head_partial", "", rows, [hp, rows] { kn::run_on_cpu(hp, rows); });
  if (tp_ > 1) tp_comm_->all_reduce(h_.rows(0, rows), core::ReduceOp::sum, main_, core::Label{"tp.head", -1});
  kn::LogitsKernel lg{span_of<int32_t>(row_req_), span_of<uint32_t>(c_), span_of<uint32_t>(h_), cfg_.model.vocab,
                      ckpt_.consts.accept_1024, span_of<int64_t>(greedy_)};
  launch(main_, "logits", "", rows, [lg, rows] { kn::run_on_cpu(lg, rows); });
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
  const auto idx = span_of<int32_t>(idx_mapping_);
  const auto qlen = span_of<int32_t>(query_len_);
  const auto computed = span_of<int32_t>(num_computed_);
  launch(main_, "advance_num_computed", "", n, [=] {
    for (int32_t r = 0; r < n; ++r) computed[idx[r]] += qlen[r];
  });
}

void Worker::sample_last_stage(const SchedulerOutput& so, int32_t padded_rows) {
  (void)padded_rows;
  const auto n = static_cast<int32_t>(so.requests.size());
  // pp = 1: no feedback; the sampler's outputs live in buffers of their own.
  FeedbackBuffers& slot = pp_handler_ ? pp_handler_->last_stage_slot(so.step) : own_slot_;

  // Which rows carry logits: every row of a decode request, the last row of a final prefill chunk.
  std::vector<int32_t> start, count, rows_with_samples;
  std::vector<int64_t> seeds, out_index;
  std::vector<uint32_t> spread;
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
  {
    const auto idx = span_of<int32_t>(idx_mapping_);
    const auto s_src = span_of<int64_t>(seeds_);
    const auto p_src = span_of<uint32_t>(spread_);
    const auto s_dst = span_of<int64_t>(b_seeds_);
    const auto p_dst = span_of<uint32_t>(b_spread_);
    launch(main_, "gather_sampling_params", "", n, [=] {
      for (int32_t r = 0; r < n; ++r) {
        s_dst[r] = s_src[idx[r]];
        p_dst[r] = p_src[idx[r]];
      }
    });
  }
  kn::RejectionSampleKernel rs{span_of<int32_t>(logit_start_), span_of<int32_t>(num_logits_), span_of<int32_t>(input_ids_),
                               span_of<int64_t>(greedy_),     span_of<uint32_t>(h_),        span_of<int64_t>(b_seeds_),
                               span_of<int64_t>(b_out_index_), span_of<uint32_t>(b_spread_), cfg_.model.vocab,
                               k_ + 1,                     span_of<int64_t>(slot.sampled), span_of<int32_t>(slot.counts),
                               span_of<int32_t>(slot.counts).sub(n, n)};
  {
    core::Runtime& rt = rt_;
    const core::RankId rank = rank_;
    const int64_t step = so.step;
    std::vector<int64_t> ids;
    for (const auto& r : so.requests) ids.push_back(r.id);
    const int width = k_ + 1;
    launch(main_, "rejection_sample", "", n, [=, &rt] {
      kn::run_on_cpu(rs, n);
      for (int32_t r = 0; r < n; ++r) {
        if (rs.num_sampled[r] == 0) continue;
        const auto sampled = rs.sampled.sub(r * width, rs.num_sampled[r]);
        const std::vector<int64_t> t(sampled.begin(), sampled.end());
        probe(rt, core::EventKind::tokens_sampled, rank, step, ids[static_cast<size_t>(r)], t, rs.num_rejected[r]);
      }
    });
  }
  // Messages 1 and 2 of the feedback, right after sampling.
  if (pp_handler_) pp_handler_->broadcast(so, slot, !any_drafts);
  // postprocess_sampled: the last stage's own post_update, now.
  kn::PostUpdateKernel pk{span_of<int32_t>(idx_mapping_), span_of<int64_t>(slot.sampled), span_of<int32_t>(slot.counts),
                          span_of<int32_t>(slot.counts).sub(n, n), span_of<int32_t>(query_len_), {}, k_, false,
                          span_of<int64_t>(last_sampled_), span_of<int32_t>(num_computed_), span_of<int32_t>(total_len_),
                          span_of<int64_t>(draft_tokens_)};
  launch(main_, "post_update", "last", n, [pk, n] { kn::run_on_cpu(pk, n); });

  int drafted = 0;
  if (k_ > 0 && !so.dummy) drafted = propose_drafts(so, rows_with_samples, slot);
  if (pp_handler_ && (drafted > 0 || cfg_.spec.feedback == Feedback::single_payload || k_ == 0)) {
    if (cfg_.spec.feedback == Feedback::single_payload) {
      const auto payload = span_of<int64_t>(slot.payload);
      const auto sampled = span_of<int64_t>(slot.sampled);
      const auto counts = span_of<int32_t>(slot.counts);
      const auto drafts = span_of<int64_t>(slot.drafts);
      const int kk = k_;
      const bool have_drafts = drafted > 0;
      launch(main_, "pack_payload", "", n, [=] {
        const int width = 2 * kk + 3;
        for (int32_t r = 0; r < n; ++r) {
          for (int j = 0; j <= kk; ++j) payload[r * width + j] = sampled[r * (kk + 1) + j];
          for (int j = 0; j < kk; ++j) payload[r * width + kk + 1 + j] = have_drafts ? drafts[r * kk + j] : 0;
          payload[r * width + 2 * kk + 1] = counts[r];
          payload[r * width + 2 * kk + 2] = counts[n + r];
        }
      });
    }
    pp_handler_->broadcast_drafts(so, slot);
  }
  // The second call site, beside set_draft_tokens() (#50514): it relays drafts that a speculator-less
  // path wrote. This engine has no such path, and the seed PR gates the site out whenever the
  // speculator ran; the merge that kept it ungated (5b572da027) posted every step's drafts twice.
  const bool speculator_ran = drafted > 0;
  if (pp_handler_ && speculator_ran && cfg_.faults.double_post_drafts) pp_handler_->broadcast_drafts(so, slot);
  send_output(so, slot, rows_with_samples);
}

int Worker::propose_drafts(const SchedulerOutput& so, const std::vector<int32_t>& rows_with_samples,
                           FeedbackBuffers& slot) {
  const auto nd = static_cast<int32_t>(rows_with_samples.size());
  if (nd == 0) return 0;
  const auto n = static_cast<int32_t>(so.requests.size());
  const int kk = k_;
  // The draft batch: the rows that sampled, compacted; their target rows are the context.
  std::vector<int32_t> didx, cs, ce, brow;
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
        ++next;
      }
      row += r.num_tokens;
    }
  }
  upload(d_idx_, didx);
  upload(d_ctx_start_, cs);
  upload(d_ctx_end_, ce);
  upload(d_brow_, brow);
  const auto counts = span_of<int32_t>(slot.counts);
  const auto ns = span_of<int32_t>(d_num_sampled_);
  const auto nr = span_of<int32_t>(d_num_rejected_);
  const auto anchor = span_of<int32_t>(d_anchor_);
  const auto brow_d = span_of<int32_t>(d_brow_);
  const auto ce_d = span_of<int32_t>(d_ctx_end_);
  launch(main_, "dflash_gather", "", nd, [=] {
    for (int32_t d = 0; d < nd; ++d) {
      ns[d] = counts[brow_d[d]];
      nr[d] = counts[n + brow_d[d]];
      anchor[d] = ce_d[d] - 1 - nr[d];
    }
  });
  // The drafter's graph: its query rows padded to the next capture size.
  const int32_t q_rows = std::max(graph_size(nd * kk), nd * kk);
  const bool pp_gt1 = pp_ > 1;
  const kn::Span<const uint32_t> embed =
      pp_gt1 ? (cfg_.faults.alias_target_embed ? span_of<uint32_t>(embed_ctx_) : span_of<uint32_t>(draft_embed_))
             : span_of<uint32_t>(embed_ctx_);
  kn::PrepareDflashInputsKernel pd{};
  pd.num_reqs = nd;
  pd.num_query_per_req = kk;
  pd.max_num_reqs = max_reqs_;
  pd.max_num_tokens = q_rows;
  pd.idx_mapping = span_of<int32_t>(d_idx_);
  pd.ctx_start = span_of<int32_t>(d_ctx_start_);
  pd.ctx_end = span_of<int32_t>(d_ctx_end_);
  pd.target_positions = span_of<int64_t>(positions_);
  pd.num_sampled = ns;
  pd.num_rejected = nr;
  pd.last_sampled = span_of<int64_t>(last_sampled_);
  pd.next_prefill_tokens = span_of<int64_t>(d_next_prefill_);
  pd.block_table = {};  // set in the body: gathered per draft row
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
  const auto table = span_of<int32_t>(block_table_);
  const int32_t mb = max_blocks_;
  core::Runtime& rt = rt_;
  const core::RankId rank = rank_;
  const int64_t step = so.step;
  const core::Buffer dids_b = d_input_ids_, dpos_b = d_positions_, dpad_b = d_is_padding_;
  launch(main_, "prepare_dflash_inputs", "", nd, [pd, table, mb, nd, &rt, rank, step, dids_b, dpos_b, dpad_b]() mutable {
    std::vector<int32_t> per_row(static_cast<size_t>(nd) * static_cast<size_t>(mb));
    for (int32_t d = 0; d < nd; ++d)
      std::memcpy(per_row.data() + static_cast<size_t>(d) * static_cast<size_t>(mb), table.sub(pd.idx_mapping[d] * mb, mb).data,
                  static_cast<size_t>(mb) * sizeof(int32_t));
    pd.block_table = per_row;
    kn::run_on_cpu(pd, nd);
    const int32_t used = nd * pd.num_query_per_req;
    for (const core::Buffer* b : {&dids_b, &dpos_b, &dpad_b}) b->mark_written(0, pd.clear_padding ? pd.max_num_tokens : used);
    if (!rt.events().active() || used == pd.max_num_tokens) return;
    std::vector<int64_t> pad;
    for (int32_t q = used; q < pd.max_num_tokens; ++q)
      pad.insert(pad.end(), {pd.input_ids[q], pd.positions[q], pd.is_padding[q] ? 1 : 0, pd.query_slot_mapping[q],
                             never_written({&dids_b, &dpos_b, &dpad_b}, q)});
    probe(rt, core::EventKind::padding_rows, rank, step, -1, pad, used, "prepare_dflash_inputs");
  });
  // Context KV of the drafter (never through a PAD slot).
  {
    const auto slots = span_of<int64_t>(d_ctx_slots_);
    const auto c = span_of<uint32_t>(c_);
    const auto dkv = span_of<uint32_t>(draft_kv_);
    const auto cs_d = span_of<int32_t>(d_ctx_start_);
    launch(main_, "draft_context_kv", "", nd, [=] {
      for (int32_t d = 0; d < nd; ++d)
        for (int32_t t = cs_d[d]; t < ce_d[d]; ++t) kn::DraftContextKvKernel{slots, c, dkv}.row(t);
    });
  }
  kn::DraftForwardKernel fw{kk, anchor, span_of<uint32_t>(c_), span_of<int32_t>(d_input_ids_), span_of<int64_t>(d_positions_), embed,
                            ckpt_.consts.r, cfg_.model.vocab, span_of<int64_t>(d_drafts_)};
  // The first forward tells the checkers which embedding table the drafter reads (its hash, and how
  // much of it was never written: an aliased table on a stage that never loaded it).
  const core::Buffer table_b = pp_gt1 && !cfg_.faults.alias_target_embed ? draft_embed_ : embed_ctx_;
  bool* probed = &embed_probed_;
  launch(main_, "draft_forward", "", nd, [fw, nd, &rt, rank, step, table_b, probed] {
    kn::run_on_cpu(fw, nd);
    if (*probed || !rt.events().active()) return;
    *probed = true;
    const auto words = static_cast<size_t>(table_b.count());
    const auto hash = static_cast<int64_t>(core::fnv1a_words(static_cast<const uint32_t*>(table_b.data()), words));
    probe(rt, core::EventKind::table_bound, rank, step, -1,
          {table_b.count(), table_b.uninitialised_elements(0, table_b.count())}, hash, "draft.embed_tokens");
  });
  // The MoE layer over every query row of the graph, padding included.
  const int E = cfg_.model.experts;
  const int top = cfg_.model.topk;
  kn::DraftGateKernel gate{span_of<int32_t>(d_input_ids_), span_of<int64_t>(d_positions_), E, span_of<float>(d_gating_)};
  launch(main_, "draft_gate", "", q_rows, [gate, q_rows] { kn::run_on_cpu(gate, q_rows); });
  kn::TopkSoftplusSqrtKernel router{span_of<float>(d_gating_), span_of<float>(d_router_bias_), span_of<bool>(d_is_padding_), E, top,
                                    true, 1.0f, !cfg_.faults.router_ignores_padding, span_of<int32_t>(d_topk_ids_),
                                    span_of<float>(d_topk_w_)};
  const int32_t used_rows = nd * kk;
  launch(main_, "topk_softplus_sqrt", "", q_rows, [router, q_rows, used_rows, top, &rt, rank, step] {
    kn::run_on_cpu(router, q_rows);
    if (!rt.events().active() || used_rows == q_rows) return;
    // Per padding row: the expert ids it selected, then how many of its weights are non-zero.
    std::vector<int64_t> pad;
    for (int32_t q = used_rows; q < q_rows; ++q) {
      int64_t nonzero = 0;
      for (int j = 0; j < top; ++j) {
        pad.push_back(router.topk_ids[q * top + j]);
        nonzero += router.topk_weights[q * top + j] != 0.0f ? 1 : 0;
      }
      pad.push_back(nonzero);
    }
    probe(rt, core::EventKind::padding_rows, rank, step, -1, pad, used_rows, "topk_softplus_sqrt");
  });
  kn::DraftExpertsKernel experts{span_of<int32_t>(d_topk_ids_), span_of<float>(d_topk_w_), top, span_of<float>(d_expert_scale_),
                                 span_of<float>(d_confidence_)};
  launch(main_, "draft_experts", "", q_rows, [experts, q_rows] { kn::run_on_cpu(experts, q_rows); });
  // req_states.draft_tokens[idx_mapping] = draft_tokens; then the batch's rows for the relay,
  // gathered on the main stream (#55745).
  {
    std::vector<int64_t> ids;
    for (int32_t i : rows_with_samples) ids.push_back(so.requests[static_cast<size_t>(i)].id);
    const auto drafts = span_of<int64_t>(d_drafts_);
    const auto table_d = span_of<int64_t>(draft_tokens_);
    const auto didx_d = span_of<int32_t>(d_idx_);
    launch(main_, "set_draft_tokens", "", nd, [=, &rt] {
      for (int32_t d = 0; d < nd; ++d) {
        for (int j = 0; j < kk; ++j) table_d[didx_d[d] * kk + j] = drafts[d * kk + j];
        probe(rt, core::EventKind::drafts_proposed, rank, step, ids[static_cast<size_t>(d)],
              std::vector<int64_t>(drafts.sub(d * kk, kk).begin(), drafts.sub(d * kk, kk).end()));
      }
    });
    const auto bidx = span_of<int32_t>(idx_mapping_);
    const auto out = span_of<int64_t>(slot.drafts);
    launch(main_, "gather_drafts", "", n, [=] {
      for (int32_t r = 0; r < n; ++r)
        for (int j = 0; j < kk; ++j) out[r * kk + j] = table_d[bidx[r] * kk + j];
    });
  }
  return nd;
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
  dev_.download(main_, host_counts_.data(), core::Buffer(slot.counts.data(), nullptr, core::Dtype::i32, core::Shape{2 * n, 1}));
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
