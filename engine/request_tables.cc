#include "engine/request_tables.h"

#include <algorithm>

namespace ppspec::engine {

RequestTables::RequestTables(RankContext& ctx) : ctx_(ctx) {
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
}

void RequestTables::admit(const SchedulerOutput& so) {
  for (const NewRequest& r : so.new_requests) {
    const int64_t i = r.idx;
    std::vector<int32_t> p = r.prompt;
    p.resize(static_cast<size_t>(ctx_.cfg.max_prefill()), 0);
    ctx_.upload(prompt.rows(i, 1), p);
    ctx_.upload(num_computed.rows(i, 1), std::vector<int32_t>{r.num_computed});
    ctx_.upload(prefill_len.rows(i, 1), std::vector<int32_t>{static_cast<int32_t>(r.prompt.size())});
    ctx_.upload(total_len.rows(i, 1), std::vector<int32_t>{static_cast<int32_t>(r.prompt.size())});
    ctx_.upload(output_base.rows(i, 1), std::vector<int32_t>{r.num_output});
    ctx_.upload(last_sampled.rows(i, 1), std::vector<int64_t>{0});
    ctx_.upload(draft_tokens.rows(i, 1), std::vector<int64_t>(static_cast<size_t>(draft_tokens.shape().cols), 0));
    ctx_.upload(seeds.rows(i, 1), std::vector<int64_t>{r.seed});
    ctx_.upload(spread.rows(i, 1), std::vector<uint32_t>{r.spread});
    ctx_.upload(temperature.rows(i, 1), std::vector<float>{static_cast<float>(r.spread) / 32.0f});
  }
  for (const ScheduledRequest& r : so.requests)
    if (!r.new_blocks.empty())
      ctx_.upload(block_table.slice(r.idx, r.first_new_block, static_cast<int64_t>(r.new_blocks.size())), r.new_blocks);
}

}  // namespace ppspec::engine
