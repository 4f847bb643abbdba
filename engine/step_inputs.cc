#include "engine/step_inputs.h"

#include <algorithm>

#include "engine/readback.h"
#include "engine/span_of.h"
#include "kernels/prepare_inputs.h"

namespace ppspec::engine {

namespace kn = ppspec::kernels;

StepInputs::StepInputs(RankContext& ctx) : ctx_(ctx) {
  using core::Dtype;
  input_ids = ctx.alloc(Dtype::i32, ctx.max_rows, 1, "input_ids");
  positions = ctx.alloc(Dtype::i64, ctx.max_rows, 1, "positions");
  slots = ctx.alloc(Dtype::i64, ctx.max_rows, 1, "slot_mapping");
  is_padding = ctx.alloc(Dtype::u8, ctx.max_rows, 1, "is_padding");
  row_req = ctx.alloc(Dtype::i32, ctx.max_rows, 1, "row_req");
  query_start = ctx.alloc(Dtype::i32, ctx.max_reqs + 1, 1, "query_start_loc");
  idx_mapping = ctx.alloc(Dtype::i32, ctx.max_reqs, 1, "idx_mapping");
  query_len = ctx.alloc(Dtype::i32, ctx.max_reqs, 1, "query_len");
}

void StepInputs::upload_batch(const SchedulerOutput& so) {
  std::vector<int32_t> qs{0}, idx, qlen;
  for (const ScheduledRequest& r : so.requests) {
    qs.push_back(qs.back() + r.num_tokens);
    idx.push_back(r.idx);
    qlen.push_back(r.num_tokens);
  }
  ctx_.upload(query_start, qs);
  ctx_.upload(idx_mapping, idx);
  ctx_.upload(query_len, qlen);
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
