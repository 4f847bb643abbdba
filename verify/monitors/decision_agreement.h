// Decision agreement: a decision that each TP rank of the last stage makes on its own must come out
// the same on every rank it binds.
// * The adaptive draft budget (`fifo-misalignment`, kind `decision-disagreement`), which every rank
//   runs its draft block with (`draft_budget` probes, read from the draft kernel each rank
//   launched): ranks with two budgets draft blocks of two sizes, relay different drafts to their TP
//   columns, and post the confidence all-reduce with different counts. Named at the step where the
//   budgets first part, before any collective pairs them up (vLLM PR #56831).
// * The sample (`stage-divergence`, kind `sample-disagreement`): each rank runs the rejection
//   sampler over the same logits and keeps its own tokens and accepted count (`tokens_sampled`
//   probes, read back from each rank's feedback slot). Ranks that keep different ones feed their TP
//   columns different tokens; named at the step of the sample, not where the columns' inputs part
//   later (SGLang PR #3060, vLLM #31154).
#pragma once

#include <map>
#include <utility>
#include <vector>

#include "verify/monitors/monitor.h"

namespace ppspec::verify {

class DecisionAgreement final : public Monitor {
 public:
  using Monitor::Monitor;
  void on_event(const core::Event& e) override;
  // The kinds on_event acts on; it returns at once on any other.
  KindSet kinds() const override { return kind_set({core::EventKind::draft_budget, core::EventKind::tokens_sampled}); }

 private:
  void on_budget(const core::Event& e);
  void on_sampled(const core::Event& e);

  struct Decision {
    core::RankId rank = -1;
    int64_t budget = 0;
    int64_t confidence = 0;
  };
  // By engine step: the first rank's budget. Steps are decided by every TP rank of the stage within
  // a few steps of one another: older ones are forgotten (at most kStepsKept are held).
  static constexpr size_t kStepsKept = 64;
  std::map<int64_t, Decision> first_;
  struct Sample {
    core::RankId rank = -1;
    std::vector<int64_t> tokens;  // the accepted drafts and the bonus token
    int64_t rejected = 0;
    int ranks = 1;  // how many of the stage's TP ranks reported it so far
  };
  // By (engine step, request): the first rank's sample, until every TP rank of the stage reported
  // it (at most kStepsKept steps are held).
  std::map<std::pair<int64_t, int64_t>, Sample> samples_;
};

}  // namespace ppspec::verify
