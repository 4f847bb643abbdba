// The adaptive draft budget: the pick an estimate makes, and the decision agreement monitor proven
// both ways (ranks of the last stage that run one budget pass; two budgets at one step are named).
// The end-to-end proofs are scenarios/regressions/local_adaptive_budget.toml and its fault-off twin.
#include <gtest/gtest.h>

#include "engine/draft_budget.h"
#include "tests/monitor_fixture.h"
#include "verify/monitors/decision_agreement.h"

namespace ppspec {
namespace {

using core::EventKind;
using engine::DraftBudget;

TEST(DraftBudgetPick, OneToKFromTheEstimate) {
  constexpr int64_t kEighth = DraftBudget::kOne / 8;
  EXPECT_EQ(DraftBudget::budget_for(0, 4), 1);  // never below 1
  EXPECT_EQ(DraftBudget::budget_for(3 * kEighth + kEighth / 2 - 1, 4), 1);
  EXPECT_EQ(DraftBudget::budget_for(3 * kEighth + kEighth / 2, 4), 2);
  EXPECT_EQ(DraftBudget::budget_for(4 * kEighth, 4), 3);
  EXPECT_EQ(DraftBudget::budget_for(4 * kEighth + kEighth / 2, 4), 4);
  EXPECT_EQ(DraftBudget::budget_for(DraftBudget::kOne - 1, 4), 4);  // never past K
}

TEST(DecisionAgreement, OneBudgetPassesTwoAtAStepAreNamed) {
  testing::Fixture<verify::DecisionAgreement> fx;  // pp 2, tp 2: ranks 2 and 3 are the last stage
  for (int64_t step = 5; step < 9; ++step)
    for (core::RankId r : {2, 3}) fx.send(EventKind::draft_budget, r, step, -1, {30000 + r}, 3);
  EXPECT_TRUE(fx.found.empty());
  fx.send(EventKind::draft_budget, 3, 9, -1, {32770}, 3);
  fx.send(EventKind::draft_budget, 2, 9, -1, {32760}, 2);
  ASSERT_EQ(fx.found.size(), 1u);
  EXPECT_EQ(fx.found[0].verdict, core::Verdict::fifo_misalignment);
  EXPECT_EQ(core::to_string(fx.found[0].kind), "decision-disagreement");
  EXPECT_EQ(fx.found[0].engine_step, 9);
  EXPECT_EQ(
      fx.found[0].summary,
      "the draft budget of engine step 9 disagrees across the last stage's TP ranks: rank3 drafts 3 per request, rank2 "
      "drafts 2");
  fx.send(EventKind::draft_budget, 3, 10, -1, {1}, 1);
  fx.send(EventKind::draft_budget, 2, 10, -1, {60000}, 4);
  EXPECT_EQ(fx.found.size(), 1u);  // the first disagreement is the finding
}

}  // namespace
}  // namespace ppspec
