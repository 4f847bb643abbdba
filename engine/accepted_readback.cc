#include "engine/accepted_readback.h"

#include "core/assert.h"
#include "engine/probe.h"

namespace ppspec::engine {

AcceptedReadback::AcceptedReadback(RankContext& ctx)
    : ctx_(ctx),
      pinned_(ctx.dev.alloc_host(core::Dtype::i32, core::Shape{ctx.max_reqs, 1}, "num_accepted_cpu")),
      d2h_(ctx.dev.stream("d2h")),
      sampled_(ctx.dev.event("accepted_sampled")),
      copied_(ctx.dev.event("accepted_copied")) {}

void AcceptedReadback::issue(const SchedulerOutput& so, const FeedbackBuffers& slot) {
  const auto n = static_cast<int64_t>(so.requests.size());
  PPSPEC_ASSERT(!pending_, "step {} copies accepted counts while step {}'s were never read", so.step, copying_.step);
  PPSPEC_ASSERT(n > 0 && n <= ctx_.max_reqs, "{} rows of accepted counts", n);
  ctx_.dev.record(sampled_, ctx_.main);
  ctx_.dev.stream_wait(d2h_, sampled_);
  // num_sampled, the first n counts (engine/pp_handler.h counts_view), non_blocking=True.
  ctx_.dev.copy_to_host(d2h_, pinned_.rows(0, n), slot.counts.slice(0, 0, n));
  ctx_.dev.record(copied_, d2h_);
  copying_ = AcceptedCounts{so.step, {}, {}};
  for (const ScheduledRequest& r : so.requests) copying_.req_ids.push_back(r.id);
  pending_ = true;
}

void AcceptedReadback::read(int64_t step) {
  if (!pending_) return;
  pending_ = false;
  // vLLM #36013: without this the host reads whatever the DMA has landed so far.
  if (!ctx_.cfg.faults.pinned_read_without_sync) ctx_.dev.event_sync(copied_);
  const auto n = static_cast<int64_t>(copying_.req_ids.size());
  const auto counts = ctx_.dev.host_read<int32_t>(pinned_.rows(0, n));
  last_ = std::move(copying_);
  last_.accepted.assign(counts.begin(), counts.end());
  PPSPEC_ASSERT(last_.accepted.size() == last_.req_ids.size(), "{} accepted counts read for {} rows",
                last_.accepted.size(), last_.req_ids.size());
  if (!ctx_.observed()) return;
  std::vector<int64_t> rows;
  for (size_t i = 0; i < last_.req_ids.size(); ++i)
    rows.insert(rows.end(), {last_.req_ids[i], int64_t{last_.accepted[i]}});
  publish(ctx_.rt, Probe{ctx_.rank, last_.step, -1}, core::AcceptedReadbackProbe{step, rows});
}

}  // namespace ppspec::engine
