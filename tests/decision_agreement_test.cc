// The adaptive draft budget: the pick an estimate makes, and the decision agreement monitor proven
// both ways, for the budget (ranks of the last stage that run one budget pass; two budgets at one
// step are named) and for the sample (ranks that keep one sample pass; two at one step are named).
// The end-to-end proofs are scenarios/regressions/local_adaptive_budget.toml and
// rank_local_sampling.toml, each with its fault-off twin.
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

TEST(DecisionAgreement, OneSamplePassesTwoAtAStepAreNamed) {
  testing::Fixture<verify::DecisionAgreement> fx;  // pp 2, tp 2: ranks 2 and 3 are the last stage
  for (int64_t step = 5; step < 9; ++step)
    for (core::RankId r : {3, 2}) {
      fx.send(EventKind::tokens_sampled, r, step, 7, {40 + step, 50 + step}, 1);  // 1 of 2 drafts accepted
      fx.send(EventKind::tokens_sampled, r, step, 8, {60 + step}, 0);             // a prefill's first token
    }
  EXPECT_TRUE(fx.found.empty());
  // The same tokens with another accepted count is another decision too.
  fx.send(EventKind::tokens_sampled, 2, 9, 8, {70}, 2);
  fx.send(EventKind::tokens_sampled, 3, 9, 8, {70}, 1);
  ASSERT_EQ(fx.found.size(), 1u);
  EXPECT_EQ(fx.found[0].verdict, core::Verdict::stage_divergence);
  EXPECT_EQ(core::to_string(fx.found[0].kind), "sample-disagreement");
  EXPECT_EQ(fx.found[0].engine_step, 9);
  EXPECT_EQ(fx.found[0].summary,
            "request 8's sample of engine step 9 disagrees across the last stage's TP ranks: rank2 kept [70] (0 of 2 "
            "drafts accepted), rank3 kept [70] (0 of 1 drafts accepted)");
  fx.send(EventKind::tokens_sampled, 2, 10, 7, {1, 2}, 0);
  fx.send(EventKind::tokens_sampled, 3, 10, 7, {1, 3}, 0);
  EXPECT_EQ(fx.found.size(), 1u);  // the first disagreement is the finding
}

// A recorded trace may repeat a rank's probe or carry one of an earlier stage: read, not an
// internal error, and judged only against another last-stage rank.
TEST(DecisionAgreement, ARepeatedOrForeignSampleIsReadWithoutAnError) {
  testing::Fixture<verify::DecisionAgreement> fx;
  fx.send(EventKind::tokens_sampled, 3, 0, -1, {5}, 0);
  fx.send(EventKind::tokens_sampled, 3, 0, -1, {6}, 0);  // rank3 again
  fx.send(EventKind::tokens_sampled, 0, 0, -1, {7}, 0);  // stage 0 samples nothing
  EXPECT_TRUE(fx.found.empty());
  fx.send(EventKind::tokens_sampled, 2, 0, -1, {8}, 0);
  EXPECT_EQ(fx.found.size(), 1u);
}

TEST(DecisionAgreement, ATokenDifferenceIsNamedWithEachRanksSample) {
  testing::Fixture<verify::DecisionAgreement> fx;
  fx.send(EventKind::tokens_sampled, 3, 4, 1, {507}, 0);
  fx.send(EventKind::tokens_sampled, 2, 4, 1, {305}, 0);
  ASSERT_EQ(fx.found.size(), 1u);
  EXPECT_EQ(fx.found[0].summary,
            "request 1's sample of engine step 4 disagrees across the last stage's TP ranks: rank3 kept [507] (no "
            "drafts verified), rank2 kept [305] (no drafts verified)");
  ASSERT_EQ(fx.found[0].sites.size(), 2u);
  EXPECT_EQ(fx.found[0].sites[0].rank, 3);
  EXPECT_EQ(fx.found[0].sites[1].rank, 2);
}

}  // namespace
}  // namespace ppspec
