// The finish rules of one step's sampled tokens (engine/finish_rules.h), and the fault that
// tests the length cap first (SGLang #33758).
#include <gtest/gtest.h>

#include "engine/finish_rules.h"

namespace ppspec::engine {
namespace {

TEST(FinishRules, TokensAreKeptInOrderUpToTheCap) {
  const FinishRules rules{5, -1, false};
  const std::vector<int64_t> run{10, 11, 12};
  EXPECT_EQ(keep_sampled(rules, 0, run).count, 3);
  EXPECT_EQ(keep_sampled(rules, 0, run).reason, FinishReason::none);
  const KeptTokens at_cap = keep_sampled(rules, 3, run);  // room for two
  EXPECT_EQ(at_cap.count, 2);
  EXPECT_EQ(at_cap.reason, FinishReason::length);
}

TEST(FinishRules, AStopInsideTheRunWinsOverACapTheRunCrossesAfterIt) {
  const std::vector<int64_t> run{10, 11, 7, 20, 21, 22};  // SGLang #31599's example: stop 7, cap 5
  const KeptTokens right = keep_sampled(FinishRules{5, 7, false}, 0, run);
  EXPECT_EQ(right.count, 3) << "nothing after the stop";
  EXPECT_EQ(right.reason, FinishReason::stop);
  const KeptTokens fault = keep_sampled(FinishRules{5, 7, true}, 0, run);
  EXPECT_EQ(fault.count, 5) << "the fault keeps 20 and 21, sampled after the stop";
  EXPECT_EQ(fault.reason, FinishReason::length);
}

TEST(FinishRules, AStopPastTheCapIsCutAtTheCap) {
  const std::vector<int64_t> run{10, 11, 12, 7};
  for (bool fault : {false, true}) {
    const KeptTokens k = keep_sampled(FinishRules{3, 7, fault}, 0, run);
    EXPECT_EQ(k.count, 3);
    EXPECT_EQ(k.reason, FinishReason::length);
  }
}

TEST(FinishRules, AStopThatEndsTheBudgetIsAStop) {
  const KeptTokens k = keep_sampled(FinishRules{3, 7, false}, 1, std::vector<int64_t>{4, 7});
  EXPECT_EQ(k.count, 2);
  EXPECT_EQ(k.reason, FinishReason::stop);
}

}  // namespace
}  // namespace ppspec::engine
