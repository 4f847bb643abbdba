// An engine core that stops issuing steps (nothing in flight, nothing to arrive, waiting requests
// its schedule never admits) is a hang of the serving system, named by the scheduling-progress
// monitor from its engine_stalled probe, not an internal error of ppspec. The loader refuses the
// configurations that cause it (a prompt past the token budget without chunked prefill), as vLLM
// refuses them at start-up; built here directly, they are what a deployment whose check is wrong
// serves (vllm-rbln #957: a prompt past the usable pool, admitted and never scheduled).
#include <gtest/gtest.h>

#include "serving/runner.h"
#include "tests/test_util.h"

namespace ppspec::testing {
namespace {

TEST(EngineStall, ARequestTheScheduleNeverAdmitsStopsTheEngineCoreAndIsNamed) {
  serving::ServingScenario s = committed_serving("pp2_tp1_k5.toml");
  s.config.serving.chunked_prefill = false;
  s.config.serving.max_num_batched_tokens = s.config.workload.prompt_max - 1;  // the longest prompt never fits
  const serving::ServingRun run = serving::simulate(s.config, s.runtime, {});
  EXPECT_FALSE(run.completed);
  ASSERT_EQ(run.result.verdict, core::Verdict::hang);
  ASSERT_FALSE(run.result.findings.empty());
  const core::Finding& f = run.result.findings.front();
  EXPECT_EQ(core::to_string(f.kind), "starvation");
  EXPECT_NE(f.summary.find("the engine core stopped issuing steps after engine step"), std::string::npos) << f.summary;
  ASSERT_GE(f.details.size(), 2u);
  EXPECT_NE(f.details[1].find("the whole pool is free"), std::string::npos) << f.details[1];
  // Its first waiting request is one whose prompt is longer than the budget.
  bool longest = false;
  for (const engine::RequestRecord& r : run.requests)
    if (r.spec.id == f.request)
      longest = static_cast<int>(r.spec.prompt.size()) > s.config.serving.max_num_batched_tokens;
  EXPECT_TRUE(longest) << "request " << f.request;
}

TEST(EngineStall, TheSameDeploymentWithABudgetForTheLongestPromptCompletes) {
  serving::ServingScenario s = committed_serving("pp2_tp1_k5.toml");
  s.config.serving.chunked_prefill = false;
  s.config.serving.max_num_batched_tokens =
      std::max(s.config.serving.max_num_batched_tokens, s.config.workload.prompt_max);
  const serving::ServingRun run = serving::simulate(s.config, s.runtime, {});
  EXPECT_TRUE(run.completed);
  EXPECT_EQ(run.result.verdict, core::Verdict::pass);
}

}  // namespace
}  // namespace ppspec::testing
