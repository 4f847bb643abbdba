#include "engine/data_parallel.h"

#include <algorithm>
#include <vector>

#include "core/assert.h"

namespace ppspec::engine {

DataParallel::DataParallel(RankContext& ctx, core::Communicator& group)
    : ctx_(ctx),
      group_(group),
      counts_(ctx.alloc(core::Dtype::i32, ctx.cfg.topology.dp, 1, "dp.num_tokens_across_dp")) {
  PPSPEC_ASSERT(group.size() == ctx.cfg.topology.dp, "a DP group of {} for dp = {}", group.size(), ctx.cfg.topology.dp);
  PPSPEC_ASSERT(group.rank() == ctx.cfg.topology.replica_of(ctx.rank), "replica {} is member {} of its DP group",
                ctx.cfg.topology.replica_of(ctx.rank), group.rank());
}

int32_t DataParallel::max_rows(int32_t rows, int64_t step, Forward forward) {
  PPSPEC_ASSERT(rows >= 0, "a forward of {} rows", rows);
  std::vector<int32_t> mine(static_cast<size_t>(group_.size()), 0);
  mine[static_cast<size_t>(group_.rank())] = rows;
  ctx_.upload(counts_, mine);
  const core::Label label{forward == Forward::target ? "dp.num_tokens" : "dp.draft_tokens", step};
  group_.all_reduce(counts_, core::ReduceOp::sum, ctx_.main, label);
  host_counts_.assign(mine.size(), 0);
  ctx_.dev.download(ctx_.main, host_counts_.data(), counts_);
  ctx_.dev.stream_sync(ctx_.main);
  PPSPEC_ASSERT(host_counts_[static_cast<size_t>(group_.rank())] == rows,
                "num_tokens_across_dp holds {} for this replica, which ran {}",
                host_counts_[static_cast<size_t>(group_.rank())], rows);
  return *std::max_element(host_counts_.begin(), host_counts_.end());
}

}  // namespace ppspec::engine
