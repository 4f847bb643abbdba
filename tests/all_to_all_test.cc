// Communicator::all_to_all (equal splits, as PyTorch's all_to_all_single) on
// the simulator: one test per rule of DESIGN §3 that applies to it, each proven
// both ways where it is a detector.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/span.h"
#include "tests/harness.h"

namespace ppspec::testing {
namespace {

using core::EventKind;
using core::kMs;
using core::kUs;
using core::Label;
using core::Verdict;

// Element e of chunk j of rank r's send buffer: it says where it came from and
// where it goes.
float a2a_value(int r, int j, int64_t e) { return static_cast<float>(1000 * r + 100 * j + e); }

struct A2aBuffers {
  std::vector<core::Buffer> send, recv;
};

A2aBuffers a2a_buffers(Harness& h, int ranks, int64_t chunk) {
  A2aBuffers b;
  for (int r = 0; r < ranks; ++r) {
    b.send.push_back(h.buffer(r, chunk * ranks));
    b.recv.push_back(h.buffer(r, chunk * ranks));
    auto s = b.send.back().host<float>();
    for (int j = 0; j < ranks; ++j)
      for (int64_t e = 0; e < chunk; ++e) s[static_cast<size_t>(j * chunk + e)] = a2a_value(r, j, e);
    for (float& x : b.recv.back().host<float>()) x = -1;
  }
  return b;
}

// Chunk i of rank r's receive buffer holds chunk r of rank i's send buffer.
void expect_exchanged(const A2aBuffers& b, int ranks, int64_t chunk) {
  for (int r = 0; r < ranks; ++r) {
    auto got = b.recv[static_cast<size_t>(r)].host<float>();
    for (int i = 0; i < ranks; ++i)
      for (int64_t e = 0; e < chunk; ++e)
        EXPECT_EQ(got[static_cast<size_t>(i * chunk + e)], a2a_value(i, r, e))
            << "rank" << r << " chunk " << i << " elem " << e;
  }
}

std::vector<core::RankId> a2a_members(int n) {
  std::vector<core::RankId> v;
  for (int r = 0; r < n; ++r) v.push_back(r);
  return v;
}

// Every rank posts one all_to_all on "c" (optionally inside a group) and syncs.
void a2a_exchange_once(int ranks, int64_t chunk, bool grouped) {
  Harness h(ranks);
  h.comm("c", a2a_members(ranks));
  const A2aBuffers b = a2a_buffers(h, ranks, chunk);
  for (int r = 0; r < ranks; ++r)
    h.actor(r, [&h, &b, r, grouped] {
      auto& c = h.rt.comm_init("c", r);
      auto s = h.rt.device(r).stream("main");
      if (grouped) h.rt.group_start();
      c.all_to_all(b.send[static_cast<size_t>(r)], b.recv[static_cast<size_t>(r)], s, Label{"dispatch"});
      if (grouped) h.rt.group_end();
      h.rt.device(r).stream_sync(s);
    });
  ASSERT_EQ(h.run().verdict, Verdict::pass);
  expect_exchanged(b, ranks, chunk);
}

TEST(AllToAll, DataLandsInRankOrderedChunksOnOneTwoAndFourRanks) {
  for (int ranks : {1, 2, 4}) {
    SCOPED_TRACE(ranks);
    a2a_exchange_once(ranks, 3, false);
  }
}

TEST(AllToAll, InsideAGroupItRunsAtGroupEndAndMovesTheSameData) {
  a2a_exchange_once(2, 2, true);
  a2a_exchange_once(4, 1, true);
}

TEST(AllToAll, R1_TheCallReturnsOnceEnqueued) {
  auto cfg = exact_config();
  cfg.runtime_connect = false;  // connected at init: the first collective only enqueues
  Harness h(2, cfg);
  h.comm("c", {0, 1});
  const A2aBuffers b = a2a_buffers(h, 2, 4);
  core::Time returned = -1, synced = -1;
  h.actor(0, [&] {
    auto& c = h.rt.comm_init("c", 0);
    auto s = h.rt.device(0).stream("main");
    const core::Time t0 = h.rt.now();
    c.all_to_all(b.send[0], b.recv[0], s, Label{"x"});
    returned = h.rt.now() - t0;
    h.rt.device(0).stream_sync(s);
    synced = h.rt.now() - t0;
  });
  h.actor(1, [&] {
    auto& c = h.rt.comm_init("c", 1);
    h.rt.sleep(1 * kMs);
    c.all_to_all(b.send[1], b.recv[1], h.rt.device(1).stream("main"), Label{"x"});
    h.rt.device(1).stream_sync(h.rt.device(1).stream("main"));
  });
  ASSERT_EQ(h.run().verdict, Verdict::pass);
  EXPECT_LT(returned, 10 * kUs) << "an enqueued all_to_all does not wait for its partner";
  EXPECT_GE(synced, 1 * kMs) << "the stream sync waits for the late member";
}

TEST(AllToAll, R2_ItStartsAfterEarlierWorkOnItsStream) {
  for (bool behind_kernel : {true, false}) {
    Harness h(2);
    h.comm("c", {0, 1});
    const A2aBuffers b = a2a_buffers(h, 2, 2);
    for (int r = 0; r < 2; ++r)
      h.actor(r, [&h, &b, r, behind_kernel] {
        auto& c = h.rt.comm_init("c", r);
        auto s = h.rt.device(r).stream("main");
        if (r == 0 && behind_kernel) {
          core::KernelLaunch k;
          k.kernel = core::KernelRef{"k", ""};
          k.duration = 2 * kMs;
          h.rt.device(0).launch(s, k);
        }
        c.all_to_all(b.send[static_cast<size_t>(r)], b.recv[static_cast<size_t>(r)], s, Label{"a2a"});
        h.rt.device(r).stream_sync(s);
      });
    ASSERT_EQ(h.run().verdict, Verdict::pass);
    const int started = h.rec.find(EventKind::op_started, "a2a", 0);
    const int done1 = h.rec.find(EventKind::op_completed, "a2a", 1);
    ASSERT_GE(started, 0);
    ASSERT_GE(done1, 0);
    const core::Time t_start = h.rec.times[static_cast<size_t>(started)];
    const core::Time t_done1 = h.rec.times[static_cast<size_t>(done1)];
    if (behind_kernel) {
      EXPECT_GE(t_start, 2 * kMs) << "rank 0's all_to_all waits for the kernel before it";
      EXPECT_GE(t_done1, 2 * kMs) << "rank 1's spins until rank 0's starts";
    } else {
      EXPECT_LT(t_done1, 2 * kMs) << "nothing before it: it completes at once";
    }
  }
}

constexpr const char* kA2aOp = R"({ op = "all_to_all", comm = "ep", dtype = "f32", count = 4, label = "dispatch" })";

// Two members of "ep": rank 0 posts an all_to_all of 4 f32 per peer, rank 1
// `rank1_ops`.
std::string a2a_pair_program(const std::string& rank1_ops) {
  return fmt::format(R"(
kind = "program"
ranks = 2
[[communicator]]
name = "ep"
ranks = [0, 1]
[rank.0]
ops = [ {}, {{ op = "stream_sync", stream = "main" }} ]
[rank.1]
ops = [ {} ]
[expect]
verdict = "pass"
)",
                     kA2aOp, rank1_ops);
}

std::string a2a_then_sync(const std::string& op) { return op + R"(, { op = "stream_sync", stream = "main" })"; }

TEST(AllToAll, R3_ItPairsPositionallyAndAMismatchedKindCountOrDtypeIsNamed) {
  ASSERT_EQ(run_toml(a2a_pair_program(a2a_then_sync(kA2aOp))).verdict, Verdict::pass);
  struct Case {
    std::string op, reason;
  };
  for (const Case& k :
       {Case{R"({ op = "all_reduce", comm = "ep", dtype = "f32", count = 8, label = "dispatch" })",
             "kind all_reduce vs all_to_all"},
        Case{R"({ op = "all_to_all", comm = "ep", dtype = "f32", count = 3, label = "dispatch" })", "count 6 vs 8"},
        Case{R"({ op = "all_to_all", comm = "ep", dtype = "i32", count = 4, label = "dispatch" })",
             "dtype i32 vs f32"}}) {
    const auto r = run_toml(a2a_pair_program(a2a_then_sync(k.op)));
    ASSERT_EQ(r.verdict, Verdict::fifo_misalignment) << k.op;
    const std::string text = all_text(r.findings[0]);
    EXPECT_NE(text.find(k.reason), std::string::npos) << text;
    EXPECT_NE(text.find("'ep'"), std::string::npos) << "the communicator is named\n" << text;
  }
}

TEST(AllToAll, R11_AMemberThatNeverPostsItIsADeadlockNamingTheCommunicator) {
  // Connected at init (NCCL_RUNTIME_CONNECT=0): rank 0 is stuck in the all_to_all itself, not
  // in the first contact's connection setup.
  std::string prog = a2a_pair_program(R"({ op = "sleep", us = 10 })");
  prog.replace(prog.find("[[communicator]]"), 0, "[runtime]\nruntime_connect = false\n");
  const auto r = run_toml(prog);
  ASSERT_EQ(r.verdict, Verdict::deadlock);
  const std::string text = all_text(r.findings[0]);
  EXPECT_NE(text.find("all_to_all"), std::string::npos) << text;
  EXPECT_NE(text.find("'ep'"), std::string::npos) << text;
  EXPECT_TRUE(r.findings[0].involves_rank(1)) << "the member that never posted is named";
}

// One member: a kernel on `side` writes the send buffer, then all_to_all reads
// it on `main`, ordered by an event or not.
core::RunResult a2a_write_then_exchange(bool ordered) {
  auto cfg = exact_config();
  cfg.detect_races = true;
  cfg.module_loading = core::ModuleLoading::eager;  // no load drains the device
                                                    // (R8) to order things
  Harness h(1, cfg);
  h.comm("c", {0});
  const core::Buffer send = h.buffer(0, 4, core::Dtype::i64);
  const core::Buffer recv = h.buffer(0, 4, core::Dtype::i64);
  h.actor(0, [&] {
    auto& c = h.rt.comm_init("c", 0);
    auto& d = h.rt.device(0);
    const core::Stream main = d.stream("main"), side = d.stream("side");
    core::KernelLaunch l;
    l.kernel = core::KernelRef{"producer", ""};
    l.work = 1;
    l.body = [send] { kernels::Span<int64_t>(static_cast<int64_t*>(send.data()), send.count())[0] = 7; };
    d.launch(side, l);
    if (ordered) {
      const core::DeviceEvent e = d.event("produced");
      d.record(e, side);
      d.stream_wait(main, e);
    }
    c.all_to_all(send, recv, main, Label{"dispatch"});
    d.device_sync();
  });
  return h.run();
}

TEST(AllToAll, TheRaceDetectorSeesAStreamWriteRacingItsSendBuffer) {
  const auto raced = a2a_write_then_exchange(false);
  ASSERT_EQ(raced.verdict, Verdict::race);
  EXPECT_EQ(core::to_string(raced.findings.front().kind), "stream-race");
  EXPECT_EQ(a2a_write_then_exchange(true).verdict, Verdict::pass) << "the event orders the write before the exchange";
}

TEST(AllToAll, UnevenOrAliasedBuffersAreBadUsage) {
  Harness h(2);
  h.comm("c", {0, 1});
  const core::Buffer odd = h.buffer(0, 3), even = h.buffer(0, 4), small = h.buffer(0, 2);
  std::vector<std::string> errors;
  h.actor(0, [&] {
    auto& c = h.rt.comm_init("c", 0);
    auto s = h.rt.device(0).stream("main");
    for (auto [send, recv] : {std::pair{odd, even}, std::pair{even, small}, std::pair{even, even}}) {
      try {
        c.all_to_all(send, recv, s, Label{"x"});
      } catch (const std::invalid_argument& e) {
        errors.emplace_back(e.what());
      }
    }
  });
  h.actor(1, [&] { (void)h.rt.comm_init("c", 1); });
  (void)h.run();
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_NE(errors[0].find("not a multiple of the 2 members"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("needs 4"), std::string::npos) << errors[1];
  EXPECT_NE(errors[2].find("overlap"), std::string::npos) << errors[2];
}

}  // namespace
}  // namespace ppspec::testing
