#include "engine/request_tables.h"

#include <algorithm>

namespace ppspec::engine {

RequestTables::RequestTables(RankContext& ctx, InputStaging& staging) : ctx_(ctx), staging_(staging) {
  using core::Dtype;
  const int32_t n = ctx.max_reqs;
  last_sampled = ctx.alloc(Dtype::i64, n, 1, "last_sampled");
  draft_tokens = ctx.alloc(Dtype::i64, n, std::max(ctx.k, 1), "draft_tokens");
  num_computed = ctx.alloc(Dtype::i32, n, 1, "num_computed");
  prefill_len = ctx.alloc(Dtype::i32, n, 1, "prefill_len");
  total_len = ctx.alloc(Dtype::i32, n, 1, "total_len");
  output_base = ctx.alloc(Dtype::i32, n, 1, "output_base");
  prompt = ctx.alloc(Dtype::i32, n, ctx.cfg.max_prefill(), "prompt");
  block_table = ctx.alloc(Dtype::i32, n, ctx.max_blocks, "block_table");
  seeds = ctx.alloc(Dtype::i64, n, 1, "seeds");
  spread = ctx.alloc(Dtype::u32, n, 1, "spread");
  temperature = ctx.alloc(Dtype::f32, n, 1, "temperature");
  const std::array<std::pair<const core::Buffer*, const char*>, kTables> twins{{
      {&last_sampled, "last_sampled_cpu"},
      {&draft_tokens, "draft_tokens_cpu"},
      {&num_computed, "num_computed_cpu"},
      {&prefill_len, "prefill_len_cpu"},
      {&total_len, "total_len_cpu"},
      {&output_base, "output_base_cpu"},
      {&prompt, "prompt_cpu"},
      {&block_table, "block_table_cpu"},
      {&seeds, "seeds_cpu"},
      {&spread, "spread_cpu"},
      {&temperature, "temperature_cpu"},
  }};
  for (size_t t = 0; t < twins.size(); ++t) host_[t] = staging.twin(*twins[t].first, twins[t].second);
}

void RequestTables::admit(const SchedulerOutput& so) {
  for (const NewRequest& r : so.new_requests) {
    const int64_t i = r.idx;
    std::vector<int32_t> p = r.prompt;
    p.resize(static_cast<size_t>(ctx_.cfg.max_prefill()), 0);
    staging_.put_rows(prompt, host_[kPrompt], i, p);
    staging_.put_rows(num_computed, host_[kNumComputed], i, std::vector<int32_t>{r.num_computed});
    staging_.put_rows(prefill_len, host_[kPrefillLen], i, std::vector<int32_t>{static_cast<int32_t>(r.prompt.size())});
    staging_.put_rows(total_len, host_[kTotalLen], i, std::vector<int32_t>{static_cast<int32_t>(r.prompt.size())});
    staging_.put_rows(output_base, host_[kOutputBase], i, std::vector<int32_t>{r.num_output});
    staging_.put_rows(last_sampled, host_[kLastSampled], i, std::vector<int64_t>{0});
    staging_.put_rows(draft_tokens, host_[kDraftTokens], i,
                      std::vector<int64_t>(static_cast<size_t>(draft_tokens.shape().cols), 0));
    staging_.put_rows(seeds, host_[kSeeds], i, std::vector<int64_t>{r.seed});
    staging_.put_rows(spread, host_[kSpread], i, std::vector<uint32_t>{r.spread});
    staging_.put_rows(temperature, host_[kTemperature], i, std::vector<float>{static_cast<float>(r.spread) / 32.0f});
  }
  for (const ScheduledRequest& r : so.requests) {
    if (r.new_blocks.empty()) continue;
    const auto n = static_cast<int64_t>(r.new_blocks.size());
    if (staging_.pinned())
      staging_.write(host_[kBlockTable].slice(r.idx, r.first_new_block, n), r.new_blocks);
    else
      ctx_.upload(block_table.slice(r.idx, r.first_new_block, n), r.new_blocks);
  }
}

void RequestTables::commit(const SchedulerOutput& so) {
  if (!staging_.pinned() || so.requests.empty()) return;
  int32_t rows = 0;
  for (const ScheduledRequest& r : so.requests) rows = std::max(rows, r.idx + 1);
  PPSPEC_ASSERT(rows <= ctx_.max_reqs, "a batch's request slot {} past the table's {} rows", rows - 1, ctx_.max_reqs);
  staging_.copy(block_table.rows(0, rows), host_[kBlockTable].rows(0, rows));
}

}  // namespace ppspec::engine
