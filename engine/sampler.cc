#include "engine/sampler.h"

#include "engine/readback.h"
#include "engine/span_of.h"
#include "kernels/post_update.h"
#include "kernels/rejection_sample.h"
#include "kernels/request_tables.h"

namespace ppspec::engine {

namespace kn = ppspec::kernels;

Sampler::Sampler(RankContext& ctx) : ctx_(ctx) {
  using core::Dtype;
  logit_start_ = ctx.alloc(Dtype::i32, ctx.max_reqs, 1, "logit_start");
  num_logits_ = ctx.alloc(Dtype::i32, ctx.max_reqs, 1, "num_logits");
  seeds_ = ctx.alloc(Dtype::i64, ctx.max_reqs, 1, "batch.seeds");
  out_index_ = ctx.alloc(Dtype::i64, ctx.max_reqs, 1, "batch.out_index");
  spread_ = ctx.alloc(Dtype::u32, ctx.max_reqs, 1, "batch.spread");
}

SampledRows Sampler::sample(const SchedulerOutput& so, FeedbackBuffers& slot, const RequestTables& tables,
                            const StepInputs& in, const TargetModel& model) {
  const auto n = static_cast<int32_t>(so.requests.size());
  // Which rows carry logits: every row of a decode request, the last row of a final prefill chunk.
  SampledRows out;
  std::vector<int32_t> start, count;
  int32_t row = 0;
  for (size_t i = 0; i < so.requests.size(); ++i) {
    const ScheduledRequest& r = so.requests[i];
    if (r.decode()) {
      start.push_back(row);
      count.push_back(r.num_tokens);
      out.any_drafts = out.any_drafts || r.num_tokens > 1;
    } else {
      start.push_back(r.produces_sample() ? row + r.num_tokens - 1 : row);
      count.push_back(r.produces_sample() ? 1 : 0);
    }
    if (r.produces_sample()) out.rows.push_back(static_cast<int32_t>(i));
    row += r.num_tokens;
  }
  ctx_.upload(logit_start_, start);
  ctx_.upload(num_logits_, count);
  ctx_.run("gather_sampling_params", "",
           kn::GatherSamplingParamsKernel{span_of<int32_t>(in.idx_mapping), span_of<int64_t>(tables.seeds),
                                          span_of<uint32_t>(tables.spread), span_of<int32_t>(tables.output_base),
                                          span_of<int32_t>(tables.total_len), span_of<int32_t>(tables.prefill_len),
                                          span_of<int64_t>(seeds_), span_of<uint32_t>(spread_),
                                          span_of<int64_t>(out_index_), rank_salt()},
           n);
  kn::RejectionSampleKernel rs{span_of<int32_t>(logit_start_),
                               span_of<int32_t>(num_logits_),
                               span_of<int32_t>(in.input_ids),
                               span_of<int64_t>(model.greedy),
                               span_of<uint32_t>(model.head_out),
                               span_of<int64_t>(seeds_),
                               span_of<int64_t>(out_index_),
                               span_of<uint32_t>(spread_),
                               ctx_.cfg.model.vocab,
                               ctx_.k + 1,
                               span_of<int64_t>(slot.sampled),
                               span_of<int32_t>(slot.counts),
                               span_of<int32_t>(slot.counts).sub(n, n)};
  ctx_.run("rejection_sample", "", rs, n);
  if (ctx_.observed()) probe_sampled(so, slot);
  return out;
}

int64_t Sampler::rank_salt() const {
  if (!ctx_.cfg.faults.rank_local_sampling) return 0;
  return static_cast<int64_t>(ctx_.tp_rank) * 0x5DEECE66DLL;
}

void Sampler::probe_sampled(const SchedulerOutput& so, const FeedbackBuffers& slot) {
  const auto n = static_cast<int64_t>(so.requests.size());
  std::vector<int64_t> ids;
  for (const auto& r : so.requests) ids.push_back(r.id);
  read_back(ctx_.dev, ctx_.main, {slot.sampled.rows(0, n), counts_view(slot, n)},
            [&rt = ctx_.rt, rank = ctx_.rank, step = so.step, ids, width = ctx_.k + 1](const HostRows& h) {
              const auto rows = static_cast<int64_t>(ids.size());
              for (int64_t r = 0; r < rows; ++r) {
                const int32_t sampled = h.at<int32_t>(1, r);
                if (sampled == 0) continue;
                const auto t = h.get<int64_t>(0).subspan(static_cast<size_t>(r * width), static_cast<size_t>(sampled));
                publish(rt, Probe{rank, step, ids[static_cast<size_t>(r)]},
                        core::TokensSampledProbe{t, h.at<int32_t>(1, rows + r)});
              }
            });
}

void Sampler::post_update(const SchedulerOutput& so, FeedbackBuffers& slot, RequestTables& tables,
                          const StepInputs& in) {
  const auto n = static_cast<int32_t>(so.requests.size());
  kn::PostUpdateKernel pk{span_of<int32_t>(in.idx_mapping),
                          span_of<int64_t>(slot.sampled),
                          span_of<int32_t>(slot.counts),
                          span_of<int32_t>(slot.counts).sub(n, n),
                          span_of<int32_t>(in.query_len),
                          {},
                          ctx_.k,
                          false,
                          span_of<int64_t>(tables.last_sampled),
                          span_of<int32_t>(tables.num_computed),
                          span_of<int32_t>(tables.total_len),
                          span_of<int64_t>(tables.draft_tokens)};
  ctx_.run("post_update", "last", pk, n);
}

}  // namespace ppspec::engine
