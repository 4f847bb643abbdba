// Decision agreement (`fifo-misalignment`, kind `decision-disagreement`): a decision that each rank
// makes on its own and that shapes what the ranks post must come out the same on every rank it
// binds. Today: the adaptive draft budget, which every TP rank of the last stage runs its draft
// block with (`draft_budget` probes, read from the draft kernel each rank launched); ranks with two
// budgets draft blocks of two sizes, relay different drafts to their TP columns, and post the
// confidence all-reduce with different counts. The monitor names the step where the budgets first
// part, before any collective pairs them up (vLLM PR #56831).
#pragma once

#include <map>

#include "verify/monitors/monitor.h"

namespace ppspec::verify {

class DecisionAgreement final : public Monitor {
 public:
  using Monitor::Monitor;
  void on_event(const core::Event& e) override;
  // The kinds on_event acts on; it returns at once on any other.
  KindSet kinds() const override { return kind_set({core::EventKind::draft_budget}); }

 private:
  struct Decision {
    core::RankId rank = -1;
    int64_t budget = 0;
    int64_t confidence = 0;
  };
  // By engine step: the first rank's budget. Steps are decided by every TP rank of the stage within
  // a few steps of one another: older ones are forgotten (at most kStepsKept are held).
  static constexpr size_t kStepsKept = 64;
  std::map<int64_t, Decision> first_;
};

}  // namespace ppspec::verify
