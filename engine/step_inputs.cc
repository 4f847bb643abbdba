#include "engine/step_inputs.h"

#include <algorithm>

#include "engine/readback.h"
#include "engine/span_of.h"
#include "kernels/mla_attention.h"
#include "kernels/prepare_inputs.h"

namespace ppspec::engine {

namespace kn = ppspec::kernels;

StepInputs::StepInputs(RankContext& ctx, InputStaging& staging)
    : ctx_(ctx), staging_(staging), group_(target_kv_group(ctx.cfg)) {
  using core::Dtype;
  input_ids = ctx.alloc(Dtype::i32, ctx.max_rows, 1, "input_ids");
  positions = ctx.alloc(Dtype::i64, ctx.max_rows, 1, "positions");
  slots = ctx.alloc(Dtype::i64, ctx.max_rows, 1, "slot_mapping");
  is_padding = ctx.alloc(Dtype::u8, ctx.max_rows, 1, "is_padding");
  row_req = ctx.alloc(Dtype::i32, ctx.max_rows, 1, "row_req");
  query_start = ctx.alloc(Dtype::i32, ctx.max_reqs + 1, 1, "query_start_loc");
  idx_mapping = ctx.alloc(Dtype::i32, ctx.max_reqs, 1, "idx_mapping");
  query_len = ctx.alloc(Dtype::i32, ctx.max_reqs, 1, "query_len");
  query_start_cpu_ = staging.twin(query_start, "query_start_loc_cpu");
  idx_mapping_cpu_ = staging.twin(idx_mapping, "idx_mapping_cpu");
  query_len_cpu_ = staging.twin(query_len, "query_len_cpu");
  if (group_.reorder_threshold == 0) return;
  attention_split = ctx.alloc(Dtype::i32, 2, 1, "attention_split");
  seq_lens = ctx.alloc(Dtype::i32, ctx.max_reqs, 1, "seq_lens");
  attention_split_cpu_ = staging.twin(attention_split, "attention_split_cpu");
}

void StepInputs::clear_split() {
  // The forwards before the first step's metadata (graph capture) put every row on the prefill path.
  if (group_.reorder_threshold > 0) ctx_.upload(attention_split, std::vector<int32_t>{0, 0});
}

void StepInputs::upload_batch(const SchedulerOutput& so) {
  std::vector<int32_t> qs{0}, idx, qlen;
  for (const ScheduledRequest& r : so.requests) {
    qs.push_back(qs.back() + r.num_tokens);
    idx.push_back(r.idx);
    qlen.push_back(r.num_tokens);
  }
  staging_.put_rows(query_start, query_start_cpu_, 0, qs);
  staging_.put_rows(idx_mapping, idx_mapping_cpu_, 0, idx);
  staging_.put_rows(query_len, query_len_cpu_, 0, qlen);
  if (group_.reorder_threshold > 0) upload_split(so);
}

void StepInputs::upload_split(const SchedulerOutput& so) {
  const AttentionSplit split = split_decodes_and_prefills(so, group_.reorder_threshold);
  staging_.put_rows(attention_split, attention_split_cpu_, 0,
                    std::vector<int32_t>{split.num_decodes, split.num_decode_tokens});
  if (!ctx_.observed() || split.num_decodes == 0) return;
  std::vector<int64_t> requests;
  for (int32_t b = 0; b < split.num_decodes; ++b) {
    const ScheduledRequest& r = so.requests[static_cast<size_t>(b)];
    requests.insert(requests.end(), {r.id, r.num_tokens});
  }
  publish(ctx_.rt, Probe{ctx_.rank, so.step, -1},
          core::AttentionSplitProbe{group_.reorder_threshold, split.num_decode_tokens, split.num_decodes, requests});
}

kn::RowInputs StepInputs::row_inputs(const RequestTables& tables) const {
  return kn::RowInputs{span_of<int32_t>(input_ids), span_of<int64_t>(positions),          span_of<int64_t>(slots),
                       span_of<int32_t>(row_req),   span_of<int32_t>(tables.block_table), ctx_.max_blocks,
                       ctx_.cfg.model.block_size};
}

void StepInputs::prepare(const SchedulerOutput& so, int32_t padded_rows, const RequestTables& tables,
                         WriteCheck& check) {
  const auto n = static_cast<int32_t>(so.requests.size());
  kn::PrepareInputsKernel k{n,
                            so.num_tokens,
                            span_of<int32_t>(query_start),
                            span_of<int32_t>(idx_mapping),
                            span_of<int32_t>(tables.num_computed),
                            span_of<int32_t>(tables.prefill_len),
                            span_of<int32_t>(tables.prompt),
                            ctx_.cfg.max_prefill(),
                            span_of<int64_t>(tables.last_sampled),
                            span_of<int64_t>(tables.draft_tokens),
                            std::max(ctx_.k, 1),
                            span_of<int32_t>(tables.block_table),
                            ctx_.max_blocks,
                            ctx_.cfg.model.block_size,
                            !ctx_.cfg.faults.uncleared_padding,
                            span_of<int32_t>(input_ids),
                            span_of<int64_t>(positions),
                            span_of<int64_t>(slots),
                            span_of<bool>(is_padding),
                            span_of<int32_t>(row_req),
                            padded_rows};
  const bool padded = padded_rows > so.num_tokens;
  const std::vector<core::Buffer> checked = {input_ids, positions, is_padding};
  if (ctx_.observed() && padded) check.poison(checked, so.num_tokens, padded_rows);
  ctx_.run("prepare_inputs", "", k, n + 1);
  if (group_.reorder_threshold > 0 && n > 0)
    ctx_.run(
        "decode_seq_lens", "",
        kn::DecodeSeqLensKernel{span_of<int32_t>(query_start), span_of<int64_t>(positions), span_of<int32_t>(seq_lens)},
        n);
  if (!ctx_.observed()) return;
  if (padded) check.restore(checked, so.num_tokens, padded_rows);
  probe_rows(so, padded_rows, check);
}

// The rows as the kernel left them: each request's inputs, and the padding rows a graph will read
// (R10) with whether the kernel stored them this step.
void StepInputs::probe_rows(const SchedulerOutput& so, int32_t padded_rows, const WriteCheck& check) {
  std::vector<int64_t> ids, decode;
  std::vector<int32_t> qs{0};
  for (const auto& r : so.requests) {
    ids.push_back(r.id);
    decode.push_back(r.decode() ? 1 : 0);
    qs.push_back(qs.back() + r.num_tokens);
  }
  const int64_t used = so.num_tokens;
  read_back(
      ctx_.dev, ctx_.main,
      {input_ids.rows(0, padded_rows), positions.rows(0, padded_rows), is_padding.rows(0, padded_rows),
       slots.rows(0, padded_rows), check.flags()},
      [&rt = ctx_.rt, rank = ctx_.rank, step = so.step, ids, decode, qs, used, padded_rows,
       stride = check.stride()](const HostRows& h) {
        std::vector<int64_t> slot_rows;
        for (size_t r = 0; r < ids.size(); ++r) {
          std::vector<int64_t> row_ids;
          for (int32_t i = qs[r]; i < qs[r + 1]; ++i) {
            row_ids.push_back(h.at<int32_t>(0, i));
            core::KvSlotRow{ids[r], h.at<int64_t>(1, i), h.at<int64_t>(3, i)}.append_to(slot_rows);
          }
          publish(rt, Probe{rank, step, ids[r]},
                  core::InputsBuiltProbe{decode[r] != 0, h.at<int64_t>(1, qs[r]), row_ids});
        }
        publish(rt, Probe{rank, step, -1}, core::KvSlotsProbe{core::KvWriter::target, slot_rows});
        if (padded_rows == used) return;
        std::vector<int64_t> pad;
        for (int64_t i = used; i < padded_rows; ++i)
          core::PreparedPaddingRow{h.at<int32_t>(0, i), h.at<int64_t>(1, i), h.at<uint8_t>(2, i) != 0 ? 1 : 0,
                                   h.at<int64_t>(3, i), unwritten_at(h, 4, 3, stride, i - used)}
              .append_to(pad);
        publish(rt, Probe{rank, step, -1}, core::PaddingRowsProbe{core::PaddingKernel::prepare_inputs, used, pad});
      });
}

}  // namespace ppspec::engine
