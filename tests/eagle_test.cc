// The EAGLE drafter (kernels/eagle.h, engine/eagle_taps.h): its default taps, and the drafter
// reference proven both ways over one real run's events: with the taps the engine drafted from it
// stays quiet over every proposal; told of other taps (a tap of another layer, as a shifted index
// would give) it names the first proposal. The transport's fault is
// scenarios/regressions/untagged_aux_relay.toml and its twin.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/config.h"
#include "scenario/serving_loader.h"
#include "serving/runner.h"
#include "tests/test_util.h"
#include "verify/monitors/drafter_reference.h"
#include "verify/monitors/serving_monitors.h"

namespace ppspec::testing {
namespace {

TEST(EagleTaps, TheDefaultIsTheLowMiddleAndHighLayer) {
  engine::EngineConfig c;
  c.spec.k = 3;
  c.spec.method = engine::DraftMethod::eagle;
  c.model.layers = 4;
  EXPECT_EQ(engine::eagle_taps(c), (std::vector<int>{0, 2, 3}));
  c.model.layers = 1;
  EXPECT_EQ(engine::eagle_taps(c), (std::vector<int>{0}));
  c.spec.taps = {3, 1};
  EXPECT_EQ(engine::eagle_taps(c), (std::vector<int>{1, 3}));
  EXPECT_EQ(c.draft_forwards(), 3);  // K forwards per propose (a DSpark drafter runs one)
  c.spec.method = engine::DraftMethod::dspark;
  EXPECT_EQ(c.draft_forwards(), 1);
}

struct ReferenceAt {
  verify::DrafterReference monitor;
  std::vector<core::Finding> found;
  explicit ReferenceAt(const verify::ServingFacts& facts)
      : monitor(facts, [this](core::Finding f) { found.push_back(std::move(f)); }) {}
};

TEST(EagleDrafterReference, TheEnginesTapsPassAnotherLayersTapIsNamed) {
  const serving::ServingScenario s = committed_serving("pp2_tp2_eagle.toml");
  ASSERT_TRUE(s.config.eagle());
  const engine::Checkpoint ckpt = engine::make_checkpoint(s.config.model);
  const verify::ServingFacts right = verify::serving_facts(s.config, ckpt);
  ASSERT_EQ(right.eagle_taps, (std::vector<int>{0, 2, 3}));
  verify::ServingFacts shifted = right;
  shifted.eagle_taps = {0, 1, 3};  // layer 1 for layer 2: what the engine did not draft from
  ReferenceAt quiet(right);
  ReferenceAt named(shifted);
  sim::RunConfig opts;
  opts.sinks = {&quiet.monitor, &named.monitor};
  const serving::ServingRun run = serving::simulate(s.config, s.runtime, opts);
  ASSERT_TRUE(run.completed);
  EXPECT_EQ(run.result.verdict, core::Verdict::pass);
  EXPECT_GT(quiet.monitor.proposals_checked(), 100u);
  EXPECT_TRUE(quiet.found.empty()) << quiet.found[0].summary;
  ASSERT_FALSE(named.found.empty());
  EXPECT_EQ(core::to_string(named.found[0].kind), "drafter-oracle");
  // Every tap carries the same context lane: a tap of another layer differs in its digest, which
  // steers one forward in 16, so the chain goes wrong at the first steered draft.
  EXPECT_NE(named.found[0].details[0].find("a tap of another layer or row"), std::string::npos)
      << named.found[0].details[0];
  EXPECT_GT(run.stats.acceptance_rate(), 0.3);  // right taps draft the context lane's tokens
}

}  // namespace
}  // namespace ppspec::testing
