// The adaptive draft budget of one last-stage rank: vLLM's adaptive verification (PR #47808), in
// which the DSpark confidence head scores the drafts and, per step, the engine verifies only as many
// as the scores say will survive. Here the budget is batch-level: how many drafts (1..K) every
// request of the step drafts, and so verifies at its next step (the engine core schedules 1 + budget
// tokens for it). It is decided on the host, without a sync, from a *stale* estimate each rank keeps
// itself: an exponential average of the confidences of the requests it drafted for at earlier steps
// (vLLM: double-buffered stale confidences, EMA-smoothed).
//
// Rank-local state differs across ranks in real systems (floating-point reduction orders, an
// estimate updated on each rank); the model here is a seeded per-rank perturbation of every update.
// So the TP ranks of the last stage disagree now and then, and correct code decides on tp rank 0
// and broadcasts the budget over the stage's TP communicator (vLLM PR #56831's fix); the fault
// `local_adaptive_budget` runs each rank with its own pick.
//
// Simplifications: one budget per step for the whole batch (vLLM also allocates per request, on the
// GPU, from live values); the confidence of a request is its first query row's; the estimate is an
// integer average in 1/65536ths, so the host arithmetic is exact.
#pragma once

#include <cstdint>
#include <vector>

#include "core/runtime.h"
#include "engine/rank_context.h"

namespace ppspec::engine {

class DraftBudget {
 public:
  static constexpr int64_t kOne = 65536;  // confidence 1.0, in the estimate's fixed point

  explicit DraftBudget(RankContext& ctx);

  // The budget the rank's drafter runs step `step` with. `tp` is the stage's TP communicator
  // (nullptr at tp = 1): all TP ranks of the stage must call this for the same steps.
  int32_t decide(int64_t step, core::Communicator* tp);
  // The fixed-point confidences of the step's draft query block, `per_request` rows per request,
  // `drafted` requests: downloaded on the main stream (the step's closing stream sync covers the
  // copy) and folded into the estimate at the next decide().
  void observe(const core::Buffer& confidence, int32_t drafted, int32_t per_request);
  int64_t estimate() const { return estimate_; }

  // The budget an estimate picks: 1 + (estimate - 3/8) * 4K, within [1, K].
  static int32_t budget_for(int64_t estimate, int k);

 private:
  void fold(int64_t step);

  RankContext& ctx_;
  core::Buffer budget_;               // [1] i32: tp rank 0's pick, broadcast
  std::vector<int32_t> host_budget_;  // its download
  std::vector<int32_t> observed_;     // the last observed query block, [drafted * per_request]
  int32_t observed_requests_ = 0;
  int32_t observed_stride_ = 0;
  int64_t estimate_ = kOne / 2;
};

}  // namespace ppspec::engine
