// How the engine learns what the device did, on the simulator (the GPU tests run the same code on
// GPUs): a host function runs at its place on the stream and sees the downloads before it; a write
// check tells the rows a kernel stored from those it did not, and gives the latter their old bytes
// back, so that checking never changes what a run computes.
#include <gtest/gtest.h>

#include <vector>

#include "engine/checkpoint.h"
#include "engine/rank_context.h"
#include "engine/readback.h"
#include "engine/span_of.h"
#include "engine/write_check.h"
#include "kernels/request_tables.h"
#include "sim/sim_runtime.h"

namespace ppspec::testing {
namespace {

// Runs `body` as rank 0's host thread of a one-rank simulated run, with a sink so probes are live.
struct OneRank : core::EventSink {
  void on_event(const core::Event&) override {}
  template <typename Body>
  core::RunResult run(Body body) {
    sim::SimRuntime rt(1, sim::SimConfig{}, sim::make_policy(core::StrategySpec{}, 1), 1);
    rt.events().subscribe(this);
    rt.spawn(core::ActorSpec{"rank0.host", 0}, [&] { body(rt); });
    return rt.run();
  }
};

TEST(DeviceMemory, AHostFunctionRunsInStreamOrderAndSeesTheDownloadsBeforeIt) {
  OneRank one;
  std::vector<int64_t> seen;
  const core::RunResult r = one.run([&](core::Runtime& rt) {
    core::Device& dev = rt.device(0);
    const core::Stream s = dev.stream("main");
    const core::Buffer b = dev.alloc(core::Dtype::i64, core::Shape{4, 1}, "b");
    dev.upload(s, b, std::vector<uint8_t>(32, 7));
    engine::read_back(dev, s, {b}, [&](const engine::HostRows& h) {
      const auto v = h.get<int64_t>(0);
      seen.assign(v.begin(), v.end());
    });
    dev.upload(s, b, std::vector<uint8_t>(32, 9));  // after the host function: not what it saw
    EXPECT_TRUE(seen.empty()) << "the host function runs when the stream reaches it, not at the call";
    dev.stream_sync(s);
  });
  ASSERT_EQ(r.verdict, core::Verdict::pass);
  ASSERT_EQ(seen.size(), 4u);
  for (int64_t x : seen) EXPECT_EQ(x, 0x0707070707070707);
}

TEST(DeviceMemory, AWriteCheckFlagsExactlyTheRowsAKernelDidNotStoreAndRestoresThem) {
  engine::EngineConfig cfg;
  const engine::Checkpoint ckpt = engine::make_checkpoint(cfg.model);
  OneRank one;
  std::vector<int64_t> values;
  std::vector<uint8_t> flags;
  const core::RunResult r = one.run([&](core::Runtime& rt) {
    engine::RankContext ctx(rt, 0, cfg, ckpt, "engine");
    engine::WriteCheck check(ctx, 8);
    const core::Buffer b = ctx.alloc(core::Dtype::i64, 8, 1, "rows");
    const core::Buffer idx = ctx.alloc(core::Dtype::i32, 3, 1, "idx");
    const core::Buffer drafts = ctx.alloc(core::Dtype::i64, 3, 1, "drafts");
    ctx.upload(b, std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7});  // stale values
    ctx.upload(idx, std::vector<int32_t>{2, 3, 4});
    ctx.upload(drafts, std::vector<int64_t>{100, 101, 102});
    check.poison({b}, 2, 8);
    // A scatter that stores rows 2..4 only, as a prepare kernel that skips padding rows would.
    ctx.run("set_draft_tokens", "",
            kernels::SetDraftTokensKernel{1, engine::span_of<int32_t>(idx), engine::span_of<int64_t>(drafts),
                                          engine::span_of<int64_t>(b)},
            3);
    check.restore({b}, 2, 8);
    engine::read_back(ctx.dev, ctx.main, {b, check.flags()}, [&](const engine::HostRows& h) {
      values.assign(h.get<int64_t>(0).begin(), h.get<int64_t>(0).end());
      flags.assign(h.get<uint8_t>(1).begin(), h.get<uint8_t>(1).begin() + 6);
    });
    ctx.dev.stream_sync(ctx.main);
  });
  ASSERT_EQ(r.verdict, core::Verdict::pass);
  // Rows 2..4 stored by the kernel (not flagged); rows 5..7 not stored: flagged, and stale again.
  EXPECT_EQ(values, (std::vector<int64_t>{0, 1, 100, 101, 102, 5, 6, 7}));
  EXPECT_EQ(flags, (std::vector<uint8_t>{0, 0, 0, 1, 1, 1}));
}

}  // namespace
}  // namespace ppspec::testing
