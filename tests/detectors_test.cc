// Every detector both ways: the bug present and caught with the right verdict and report, and the
// bug absent with nothing reported.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "tests/harness.h"
#include "tests/test_util.h"
#include "tests/command_test.h"

namespace ppspec::testing {
namespace {

using core::Verdict;

// The three blocking calls of R8 as program operations, with the hazard kind each notes.
struct BlockingCall {
  const char* kind;
  const char* op;
};
constexpr BlockingCall kBlockingCalls[] = {
    {"device-sync-in-flight", R"({ op = "device_sync" })"},
    {"malloc-in-flight", R"({ op = "malloc", bytes = 4096 })"},
    {"module-load-in-flight", R"({ op = "launch", kernel = "first_use", stream = "main" })"},  // lazy: it loads
};

// rank 0 makes `call` while its receive of x spins on the side stream; rank 1 posts the send of
// x at once, but on its main stream behind the receive of y, which rank 0 sends only after the
// call. Whether rank 1 has posted x by the time of the call is the schedule's choice; that the
// send cannot start before the call returns is the program's.
std::string partner_queued_behind_the_caller(const char* call) {
  return program_head(2, R"(["main", "side"])", "runtime_connect = false", {{"c", "[0, 1]"}}) + fmt::format(R"(
[rank.0]
ops = [ {{ op = "recv", comm = "c", peer = 1, stream = "side", label = "x" }},
        {},
        {{ op = "send", comm = "c", peer = 1, stream = "main", label = "y" }},
        {{ op = "stream_sync", stream = "side" }} ]
[rank.1]
ops = [ {{ op = "recv", comm = "c", peer = 0, stream = "main", label = "y" }},
        {{ op = "send", comm = "c", peer = 0, stream = "main", label = "x" }},
        {{ op = "stream_sync", stream = "main" }} ]
[expect]
verdict = "deadlock"
)",
                                                                                                            call);
}

// Both ranks end each of three steps with an all-reduce and then the call; rank 1 starts each
// step a little late, so that its all-reduce is often not posted yet when rank 0 makes the call.
std::string end_of_step(const char* call) {
  return program_head(2, "", "", {{"c", "[0, 1]"}}) + fmt::format(R"(
[rank.0]
repeat = 3
ops = [ {{ op = "all_reduce", comm = "c", label = "grad" }}, {} ]
[rank.1]
repeat = 3
ops = [ {{ op = "sleep", us = 4 }}, {{ op = "all_reduce", comm = "c", label = "grad" }}, {} ]
[expect]
verdict = "pass"
)",
                                                                  call, call);
}

TEST(Detectors, ABlockingCallWhosePartnerIsQueuedBehindWorkThatNeedsTheCallerIsAHazardUnderEverySchedule) {
  for (const BlockingCall& call : kBlockingCalls) {
    under_every_schedule(
        partner_queued_behind_the_caller(call.op), [&](const core::RunResult& r, const std::string& where) {
          ASSERT_EQ(r.verdict, Verdict::deadlock) << call.kind << " " << where;
          EXPECT_EQ(hazard_kinds(r), std::set<std::string>{call.kind}) << where;
          ASSERT_FALSE(r.notes.empty());
          const core::Finding& n = r.notes.front();
          EXPECT_NE(n.summary.find("rank0"), std::string::npos) << n.summary;
          EXPECT_NE(n.summary.find("recv f32[1] from rank1 'x' on 'c' #0"), std::string::npos) << n.summary;
          ASSERT_EQ(n.sites.size(), 2u);
          EXPECT_EQ(n.sites[0].actor, "rank0.host");
          EXPECT_EQ(n.sites[1].actor, "rank0.side");
        });
  }
}

TEST(Detectors, AnEndOfStepBlockingCallAfterACollectiveIsNoHazardUnderAnySchedule) {
  // The peer reaches its all-reduce without anything rank 0 does after the call: it is no hazard,
  // however far behind the peer is when the call is made.
  for (const BlockingCall& call : kBlockingCalls) {
    under_every_schedule(end_of_step(call.op), [&](const core::RunResult& r, const std::string& where) {
      EXPECT_EQ(r.verdict, Verdict::pass) << call.kind << " " << where;
      EXPECT_TRUE(hazard_kinds(r).empty()) << call.kind << " " << where << ": " << r.notes.front().summary;
    });
  }
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
  EXPECT_EQ(core::to_string(bad.findings[0].kind), "unmatched");
  EXPECT_TRUE(bad.findings[0].involves_rank(0));
  EXPECT_TRUE(bad.findings[0].involves_rank(1));
  EXPECT_NE(bad.findings[0].summary.find("'b'"), std::string::npos) << bad.findings[0].summary;
  EXPECT_EQ(run_toml(with("")).verdict, Verdict::pass);
}

// A deadlock through an event wait: tests/reports_test.cc (the report names the event and its lines).

TEST(Detectors, DeadlockThroughTheContextLock) {
  const auto p = scenario::load_program_file(kScenarios + "context_lock_deadlock.toml");
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    sim::RunConfig o;
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
    const auto p = scenario::load_program_file(kScenarios + name);
    sim::RunConfig o;
    auto r = program::run_on_sim(p, o);
    EXPECT_EQ(r.verdict, Verdict::pass) << name;
    EXPECT_TRUE(r.findings.empty()) << name;
    for (const auto& n : r.notes)
      EXPECT_EQ(core::to_string(n.kind), "cross-communicator-order") << name << ": " << n.summary;
  }
}

TEST(Detectors, AChannelReceiverWaitsForTheActorsThatSendOnThatChannel) {
  // The engine core waits for rank 1's next output; rank 1 waits for a receive whose sender, rank 0,
  // waits for the engine's next command. The cycle runs through rank 1, the only sender on "out" —
  // not through rank 0, which could send but never has.
  Harness h(2);
  h.comm("c", {0, 1});
  auto b1 = h.buffer(1, 4);
  h.actor(
      -1,
      [&] {
        h.rt.channel("worker0").send(1);
        (void)h.rt.channel("out").recv();
        (void)h.rt.channel("out").recv();
      },
      "engine");
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
