#include "engine/draft_budget.h"

#include <algorithm>

#include "core/assert.h"
#include "kernels/row.h"

namespace ppspec::engine {

DraftBudget::DraftBudget(RankContext& c) : ctx_(c) {
  PPSPEC_ASSERT(c.last && c.k >= 2 && c.cfg.spec.adaptive_budget);
  budget_ = c.alloc(core::Dtype::i32, 1, 1, "draft.budget");
  host_budget_.assign(1, 0);
}

int32_t DraftBudget::budget_for(int64_t estimate, int k) {
  PPSPEC_ASSERT(k >= 1);
  // The toy's confidence head scores cluster around 0.5: estimates from 3/8 to 5/8 spread over 1..K.
  const int64_t pick = 1 + (estimate - kOne * 3 / 8) * 4 * k / kOne;
  return static_cast<int32_t>(std::clamp<int64_t>(pick, 1, k));
}

void DraftBudget::observe(const core::Buffer& confidence, int32_t drafted, int32_t per_request) {
  PPSPEC_ASSERT(drafted > 0 && per_request >= 1 && confidence.count() >= int64_t{drafted} * per_request);
  observed_.resize(static_cast<size_t>(drafted) * static_cast<size_t>(per_request));
  observed_requests_ = drafted;
  observed_stride_ = per_request;
  ctx_.dev.download(ctx_.main, observed_.data(), confidence.rows(0, int64_t{drafted} * per_request));
}

// The estimate moves a quarter of the way to the mean confidence last observed, perturbed per rank
// and step (the rank-local part: a few percent of the range).
void DraftBudget::fold(int64_t step) {
  if (observed_requests_ == 0) return;
  int64_t sum = 0;
  for (int32_t r = 0; r < observed_requests_; ++r)
    sum += observed_[static_cast<size_t>(r) * static_cast<size_t>(observed_stride_)];
  const int64_t mean = sum / observed_requests_;
  const uint64_t z = kernels::mix64(ctx_.cfg.model.checkpoint_seed * 0x9E3779B97F4A7C15ULL ^
                                    static_cast<uint64_t>(ctx_.rank) << 40U ^ static_cast<uint64_t>(step));
  const int64_t drift = static_cast<int64_t>(z % 4097U) - 2048;
  estimate_ = std::clamp<int64_t>((3 * estimate_ + mean + drift) / 4, 0, kOne - 1);
  observed_requests_ = 0;
}

int32_t DraftBudget::decide(int64_t step, core::Communicator* tp) {
  fold(step);
  const int32_t mine = budget_for(estimate_, ctx_.k);
  if (tp == nullptr || ctx_.cfg.faults.local_adaptive_budget) return mine;
  // vLLM #56831's fix: tp rank 0's pick is the stage's; the host needs it to size the draft block.
  ctx_.upload(budget_, std::vector<int32_t>{mine});
  tp->broadcast(budget_, 0, ctx_.main, core::Label{"tp.draft_budget", step});
  ctx_.dev.download(ctx_.main, host_budget_.data(), budget_);
  ctx_.dev.stream_sync(ctx_.main);
  const int32_t agreed = host_budget_[0];
  PPSPEC_ASSERT(agreed >= 1 && agreed <= ctx_.k, "rank{} received a draft budget of {} (K = {})", ctx_.rank, agreed,
                ctx_.k);
  return agreed;
}

}  // namespace ppspec::engine
