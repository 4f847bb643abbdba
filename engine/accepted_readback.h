// The last stage's per-request accepted counts, read back on the host one step later through
// pinned memory (vLLM's num_accepted_tokens_cpu, which the host reads in the next execute_model to
// build its metadata, and which an adaptive draft budget reads). Async scheduling avoids host
// syncs, so the copy is non-blocking and the read must wait for it explicitly: sample_tokens(T)
// copies the counts on a stream of its own, after an event on main, and records an event after
// the copy; execute_model(T + 1) synchronises on that event, then reads (the fix of vLLM #36013).
// The step's own stream_sync(main) does not cover that stream, as in vLLM, where the copy and the
// output's readback are unordered.
//
// On the rank that reads back step outputs (the last stage, tp rank 0), with K > 0 and pp > 1.
// Simplification: vLLM copies in every configuration; pp = 1 is left out so that its traces stay
// as they were (the integrator may widen it).
#pragma once

#include <cstdint>
#include <vector>

#include "core/runtime.h"
#include "engine/messages.h"
#include "engine/pp_handler.h"
#include "engine/rank_context.h"

namespace ppspec::engine {

// What the host read: the copied step and, per row of its batch, the request and what it accepted
// (its num_sampled: accepted drafts + the bonus token).
struct AcceptedCounts {
  int64_t step = -1;
  std::vector<int64_t> req_ids;
  std::vector<int32_t> accepted;
};

class AcceptedReadback {
 public:
  explicit AcceptedReadback(RankContext& ctx);
  static bool wanted(const RankContext& ctx) { return ctx.last && ctx.tp_rank == 0 && ctx.k > 0 && ctx.pp > 1; }

  // sample_tokens(T), after the sampler wrote the slot's counts on main.
  void issue(const SchedulerOutput& so, const FeedbackBuffers& slot);
  // execute_model(step), before its forward: the previous copy, if any, read on the host.
  void read(int64_t step);
  const AcceptedCounts& last() const { return last_; }

 private:
  RankContext& ctx_;
  core::Buffer pinned_;  // [max_reqs, 1] i32, pinned host memory
  core::Stream d2h_;
  core::DeviceEvent sampled_;  // on main, after the sampler
  core::DeviceEvent copied_;   // on d2h, after the copy
  bool pending_ = false;
  AcceptedCounts copying_;  // the copy in flight: its step and requests (accepted still empty)
  AcceptedCounts last_;
};

}  // namespace ppspec::engine
