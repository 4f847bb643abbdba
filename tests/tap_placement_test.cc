// The EAGLE tap placement monitor both ways, over hand-made eagle_taps probes at pp 2 over the
// 4-layer target (stage 0 holds layers 0 and 1, stage 1 layers 2 and 3) tapped at 0, 1 and 3: each
// stage filling its own taps from their own layers, once, passes; a tap filled from another layer,
// not filled, or filled by a stage that does not hold it is named with the stage and the layers. The
// end-to-end proof is scenarios/regressions/tap_local_layer_index.toml and its fault-off twin.
#include <gtest/gtest.h>

#include "engine/config.h"
#include "tests/monitor_fixture.h"
#include "verify/monitors/tap_placement.h"

namespace ppspec::testing {
namespace {

using core::EventKind;

struct Taps : Fixture<verify::TapPlacement> {
  Taps() {
    facts.model = std::make_shared<engine::ModelConfig>();  // 4 layers
    facts.eagle_taps = {0, 1, 3};
    monitor = std::make_unique<verify::TapPlacement>(facts, [this](core::Finding f) { found.push_back(std::move(f)); });
  }
  // A forward of `rank` that digested these (tap, layer) pairs.
  void forward(core::RankId rank, int64_t step, std::vector<int64_t> pairs) {
    const auto n = static_cast<int64_t>(pairs.size() / 2);
    send(EventKind::eagle_taps, rank, step, -1, std::move(pairs), n);
  }
};

TEST(TapPlacement, EachStageFillingItsOwnTapsFromTheirLayersPasses) {
  Taps fx;
  ASSERT_EQ(fx.facts.model->layers, 4);
  for (int64_t step = 0; step < 4; ++step) {
    for (core::RankId r : {0, 1}) fx.forward(r, step, {0, 0, 1, 1});
    for (core::RankId r : {2, 3}) fx.forward(r, step, {3, 3});
  }
  EXPECT_TRUE(fx.found.empty()) << fx.found[0].summary;
}

TEST(TapPlacement, ATapFromAnotherLayerIsNamedWithTheLocalIndexShape) {
  Taps fx;
  fx.forward(0, 0, {0, 0, 1, 1});
  fx.forward(3, 0, {3, 2});  // layer 2 is index 0 within stage 1, and 0 is a tapped layer
  ASSERT_EQ(fx.found.size(), 1u);
  const core::Finding& f = fx.found[0];
  EXPECT_EQ(f.verdict, core::Verdict::output_divergence);
  EXPECT_EQ(core::to_string(f.kind), "tap-placement");
  EXPECT_EQ(f.summary,
            "rank3 (stage 1, layers 2..3) filled EAGLE's tap of layer 3 from layer 2's output at engine step 0");
  ASSERT_EQ(f.details.size(), 2u);
  EXPECT_NE(f.details[1].find("vLLM #36151"), std::string::npos);
}

TEST(TapPlacement, AMissingTapAndATapOfAnotherStageAreNamed) {
  {
    Taps fx;
    fx.forward(2, 5, {});
    ASSERT_EQ(fx.found.size(), 1u);
    EXPECT_EQ(fx.found[0].summary,
              "rank2 (stage 1, layers 2..3) digested no layer's output into EAGLE's tap of layer 3 at engine step 5");
  }
  {
    Taps fx;
    fx.forward(1, 5, {0, 0, 1, 1, 3, 3});
    ASSERT_EQ(fx.found.size(), 1u);
    EXPECT_EQ(fx.found[0].summary,
              "rank1 (stage 0, layers 0..1) filled EAGLE's tap of layer 3, a layer it does not hold, from layer 3's "
              "output at engine step 5");
    EXPECT_EQ(fx.found[0].details.size(), 1u);  // not the local-index shape
  }
}

}  // namespace
}  // namespace ppspec::testing
