// Every detector both ways: the bug present and caught with the right verdict and report, and the
// bug absent with nothing reported.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "tests/harness.h"
#include "tests/test_util.h"

namespace ppspec::testing {
namespace {

using core::Verdict;

const std::string kScenarios = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/programs/";

// rank 0 issues `call` while its recv of `x` spins; rank 1 sends `x` after 100 us (independent
// of rank 0) or only after rank 0's `y` (dependent).
std::string in_flight(const char* call, bool partner_posted_first) {
  return fmt::format(R"(
kind = "program"
ranks = 2
streams = ["main", "side"]
[runtime]
runtime_connect = false
[[communicator]]
name = "c"
ranks = [0, 1]
[rank.0]
ops = [ {{ op = "recv", comm = "c", peer = 1, stream = "side", label = "x" }},
        {{ op = "sleep", us = {} }},
        {},
        {{ op = "stream_sync", stream = "side" }} ]
[rank.1]
ops = [ {{ op = "send", comm = "c", peer = 0, stream = "main", label = "x" }}, {{ op = "stream_sync", stream = "main" }} ]
[expect]
verdict = "pass"
)",
                     partner_posted_first ? 500 : 0, call);
}

TEST(Detectors, DeviceSyncWhileAKernelAwaitsAnUnpostedPartnerIsAHazard) {
  auto bad = run_toml(in_flight(R"({ op = "device_sync" })", false));
  EXPECT_EQ(bad.verdict, Verdict::pass) << "this schedule survives: the partner does not depend on rank 0";
  EXPECT_TRUE(has_note(bad, "device-sync-in-flight"));
  auto fine = run_toml(in_flight(R"({ op = "device_sync" })", true));
  EXPECT_EQ(fine.verdict, Verdict::pass);
  EXPECT_FALSE(has_note(fine, "device-sync-in-flight")) << "the partner was already posted: no hazard";
}

TEST(Detectors, MallocWhileAKernelAwaitsAnUnpostedPartnerIsAHazard) {
  auto bad = run_toml(in_flight(R"({ op = "malloc", bytes = 4096 })", false));
  EXPECT_TRUE(has_note(bad, "malloc-in-flight"));
  auto fine = run_toml(in_flight(R"({ op = "malloc", bytes = 4096 })", true));
  EXPECT_FALSE(has_note(fine, "malloc-in-flight"));
}

TEST(Detectors, EagerSendNobodyReceivesIsUnmatchedAtExit) {
  const std::string prog = R"(
kind = "program"
ranks = 2
[runtime]
eager_bytes = 1048576
[[communicator]]
name = "c"
ranks = [0, 1]
[rank.0]
ops = [ { op = "send", comm = "c", peer = 1, label = "a" }, %s { op = "stream_sync", stream = "main" } ]
[rank.1]
ops = [ { op = "recv", comm = "c", peer = 0, label = "a" }, { op = "stream_sync", stream = "main" } ]
[expect]
verdict = "pass"
)";
  auto with = [&](const char* extra) {
    std::string s = prog;
    s.replace(s.find("%s"), 2, extra);
    return s;
  };
  auto bad = run_toml(with(R"({ op = "send", comm = "c", peer = 1, label = "b" },)"));
  ASSERT_EQ(bad.verdict, Verdict::fifo_misalignment);
  EXPECT_EQ(bad.findings[0].kind, "unmatched");
  EXPECT_TRUE(bad.findings[0].involves_rank(0));
  EXPECT_TRUE(bad.findings[0].involves_rank(1));
  EXPECT_NE(bad.findings[0].summary.find("'b'"), std::string::npos) << bad.findings[0].summary;
  EXPECT_EQ(run_toml(with("")).verdict, Verdict::pass);
}

// A deadlock through an event wait: tests/reports_test.cc (the report names the event and its lines).

TEST(Detectors, DeadlockThroughTheContextLock) {
  const auto p = loader::load_program_file(kScenarios + "context_lock_deadlock.toml");
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    program::SimRunOptions o;
    o.seed = seed;
    auto r = program::run_on_sim(p, o);
    ASSERT_EQ(r.verdict, Verdict::deadlock);
    EXPECT_NE(r.findings[0].summary.find("rank0.sender → context lock → rank0.loader → module load → rank0.side"),
              std::string::npos)
        << r.findings[0].summary;
    EXPECT_FALSE(r.findings[0].dot.empty());
  }
}

TEST(Detectors, WellMatchedScenariosReportNothingButTheirExpectedHazards) {
  for (const char* name : {"lazy_load_preloaded.toml", "lazy_load_eager.toml", "send_before_recv_eager.toml"}) {
    const auto p = loader::load_program_file(kScenarios + name);
    program::SimRunOptions o;
    auto r = program::run_on_sim(p, o);
    EXPECT_EQ(r.verdict, Verdict::pass) << name;
    EXPECT_TRUE(r.findings.empty()) << name;
    for (const auto& n : r.notes) EXPECT_EQ(n.kind, "cross-communicator-order") << name << ": " << n.summary;
  }
}

TEST(Detectors, AChannelReceiverWaitsForTheActorsThatSendOnThatChannel) {
  // The engine core waits for rank 1's next output; rank 1 waits for a receive whose sender, rank 0,
  // waits for the engine's next command. The cycle runs through rank 1, the only sender on "out" —
  // not through rank 0, which could send but never has.
  Harness h(2);
  h.comm("c", {0, 1});
  auto b1 = h.buffer(1, 4);
  h.actor(-1, [&] {
    h.rt.channel("worker0").send(1);
    (void)h.rt.channel("out").recv();
    (void)h.rt.channel("out").recv();
  }, "engine");
  h.actor(0, [&] {
    h.rt.comm_init("c", 0);
    (void)h.rt.channel("worker0").recv();
    (void)h.rt.channel("worker0").recv();
  });
  h.actor(1, [&] {
    auto& c = h.rt.comm_init("c", 1);
    h.rt.channel("out").send(1);
    auto s = h.rt.device(1).stream("main");
    c.recv(b1, 0, s, core::Label{"act"});
    h.rt.device(1).stream_sync(s);
  });
  const auto r = h.run();
  ASSERT_EQ(r.verdict, Verdict::deadlock);
  const std::string& cycle = r.findings[0].summary;
  EXPECT_NE(cycle.find("rank1.host → connect → rank0.host → channel recv → engine → channel recv → rank1.host"),
            std::string::npos)
      << cycle;
  EXPECT_EQ(cycle.find("engine → channel recv → rank0.host"), std::string::npos) << cycle;
}

}  // namespace
}  // namespace ppspec::testing
