// The simulator's costs grow linearly with the size of the world: scheduling steps with the
// number of host threads, memory with the pairs of ranks that actually communicate, and a deadlock
// report stays readable however many fibers are stuck (kFindingListMax per list).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "sim/sim_runtime.h"
#include "tests/harness.h"

namespace ppspec::testing {
namespace {

using core::Verdict;

// Each test takes under 0.3 s in the default build and under 2 s under the sanitizers (measured
// on 2 busy cores), so both builds run the same sizes.
constexpr int kThreads = 6500;  // past the ~6,500 threads where N^2/2 steps hit the 20M step budget
constexpr int kRanks = 1024;    // the loader's largest world

// Scheduling steps per fiber that a linear cost stays under (about 4 per thread and 11 per rank
// today; an N^2 cost is in the thousands per fiber at these sizes).
constexpr uint64_t kStepsPerFiberMax = 20;

// A deadlock report's size bound, whatever the size of the world: kFindingListMax entries per list
// of the details, and a Graphviz graph of at most ~180 lines (32 nodes, 16 chain waits, 64 other
// waits, their terminals).
constexpr size_t kDetailLinesMax = 4 * sim::kFindingListMax;
constexpr size_t kDotLinesMax = 200;

struct ScaleRun {
  core::RunResult result;
  size_t p2p_channels = 0;     // over every communicator: made at the first post between two ranks
  size_t p2p_connections = 0;  // made at first contact
};

ScaleRun run_program(const std::string& toml, core::StrategySpec strategy = {}) {
  const program::Program p = program_from(toml);
  sim::SimRuntime rt(p.num_ranks, sim::sim_config(p.config), sim::make_policy(strategy, 1), 1);
  program::install(p, rt);
  ScaleRun r;
  r.result = rt.run();
  for (const auto& c : rt.comms().comms()) {
    r.p2p_channels += c->channels.size();
    r.p2p_connections += rt.comms().connections().pairs_used(*c);
  }
  return r;
}

std::string threads_on_one_rank(int threads) {
  std::string s = "kind = \"program\"\nranks = 1\n";
  for (int t = 0; t < threads; ++t)
    s += fmt::format("[rank.0.thread.t{}]\nops = [ {{ op = \"sleep\", us = 1 }} ]\n", t);
  return s + "[expect]\nverdict = \"pass\"\n";
}

// `ranks` ranks in one communicator "w"; rank r runs ops(r) (a TOML array body).
template <typename Ops>
std::string one_communicator(int ranks, std::string_view runtime, std::string_view verdict, Ops ops) {
  std::string s = fmt::format(
      "kind = \"program\"\nranks = {}\n[runtime]\n{}\n[[communicator]]\nname = \"w\"\nranks = [", ranks, runtime);
  for (int r = 0; r < ranks; ++r) s += fmt::format("{}{}", r ? ", " : "", r);
  s += "]\n";
  for (int r = 0; r < ranks; ++r) s += fmt::format("[rank.{}]\nops = [ {} ]\n", r, ops(r));
  return s + fmt::format("[expect]\nverdict = \"{}\"\n", verdict);
}

std::string all_reduce_unless(int ranks, int silent_rank, std::string_view runtime = "") {
  return one_communicator(ranks, runtime, silent_rank < 0 ? "pass" : "deadlock", [silent_rank](int r) {
    return r == silent_rank ? std::string("{ op = \"sleep\", us = 1 }")
                            : std::string("{ op = \"all_reduce\", comm = \"w\" }");
  });
}

size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

bool mentions(const core::Finding& f, std::string_view text) {
  if (f.summary.find(text) != std::string::npos) return true;
  return std::any_of(f.details.begin(), f.details.end(),
                     [&](const std::string& d) { return d.find(text) != std::string::npos; });
}

void expect_bounded(const core::Finding& f) {
  EXPECT_LE(f.details.size(), kDetailLinesMax) << all_text(f);
  EXPECT_LE(f.sites.size(), 2 * sim::kFindingListMax);
  EXPECT_LE(lines(f.dot), kDotLinesMax) << f.dot;
  EXPECT_LT(f.summary.size(), 4096u);
}

// ---- scheduling: N threads of one rank released through one host channel ----

TEST(Scale, ThreadsOfOneRankCostLinearSchedulingSteps) {
  // Each send used to wake every waiting receiver: N^2/2 steps, a false step-limit at ~6,500.
  const ScaleRun r = run_program(threads_on_one_rank(kThreads));
  ASSERT_EQ(r.result.verdict, Verdict::pass);
  EXPECT_LT(r.result.stats.sched_steps, kStepsPerFiberMax * kThreads) << r.result.stats.sched_steps;
}

TEST(Scale, ThreadsOfOneRankCostLinearStepsUnderPct) {
  const ScaleRun r = run_program(threads_on_one_rank(kThreads / 4), core::StrategySpec{core::StrategySpec::Kind::pct});
  ASSERT_EQ(r.result.verdict, Verdict::pass);
  EXPECT_LT(r.result.stats.sched_steps, kStepsPerFiberMax * (kThreads / 4)) << r.result.stats.sched_steps;
}

// ---- communicators: memory for the pairs that talk, time linear in the members ----

TEST(Scale, AllReduceOverAThousandMembersMakesNoPairwiseState) {
  // n^2 channels at declaration made this 4.2 GB and 10 s for 1,024 members.
  const ScaleRun r = run_program(all_reduce_unless(kRanks, -1));
  ASSERT_EQ(r.result.verdict, Verdict::pass);
  EXPECT_EQ(r.result.stats.pairs, 1u);
  EXPECT_EQ(r.p2p_channels, 0u);
  EXPECT_EQ(r.p2p_connections, 0u);
  EXPECT_LT(r.result.stats.sched_steps, kStepsPerFiberMax * kRanks) << r.result.stats.sched_steps;
}

TEST(Scale, CommInitOverAThousandMembersIsLinearUnderPct) {
  // Every arrival woke every member already waiting: under PCT, which reruns the highest-priority
  // waiter each time, that was n^2/2 steps.
  const ScaleRun r = run_program(all_reduce_unless(kRanks, -1), core::StrategySpec{core::StrategySpec::Kind::pct});
  ASSERT_EQ(r.result.verdict, Verdict::pass);
  EXPECT_LT(r.result.stats.sched_steps, kStepsPerFiberMax * kRanks) << r.result.stats.sched_steps;
}

TEST(Scale, ARingOverAThousandMembersMakesOneChannelPerNeighbour) {
  const ScaleRun r = run_program(one_communicator(kRanks, "", "pass", [](int rank) {
    return fmt::format(
        "{{ op = \"group_start\" }}, {{ op = \"send\", comm = \"w\", peer = {} }}, "
        "{{ op = \"recv\", comm = \"w\", peer = {} }}, {{ op = \"group_end\" }}",
        (rank + 1) % kRanks, (rank + kRanks - 1) % kRanks);
  }));
  ASSERT_EQ(r.result.verdict, Verdict::pass);
  EXPECT_EQ(r.result.stats.pairs, static_cast<uint64_t>(kRanks));
  EXPECT_EQ(r.p2p_channels, static_cast<size_t>(kRanks));     // rank -> rank + 1, of n^2 possible
  EXPECT_EQ(r.p2p_connections, static_cast<size_t>(kRanks));  // {rank, rank + 1}
  EXPECT_LT(r.result.stats.sched_steps, kStepsPerFiberMax * kRanks) << r.result.stats.sched_steps;
}

// ---- deadlock reports: bounded, however many fibers are stuck ----

TEST(Scale, OneSilentRankAmongAThousandGivesABoundedReport) {
  for (std::string_view runtime : {"", "runtime_connect = false"}) {
    SCOPED_TRACE(runtime);
    const ScaleRun r = run_program(all_reduce_unless(kRanks, 0, runtime));
    ASSERT_EQ(r.result.verdict, Verdict::deadlock);
    const core::Finding& f = r.result.findings.front();
    EXPECT_EQ(core::to_string(f.kind), "stuck");
    EXPECT_TRUE(mentions(f, "rank0 has not")) << all_text(f);
    EXPECT_TRUE(mentions(f, "and rank0 has no running host thread left to do it")) << all_text(f);
    EXPECT_TRUE(mentions(f, fmt::format("… and {} more", kRanks - 2 - sim::kFindingListMax))) << all_text(f);
    expect_bounded(f);
    EXPECT_TRUE(f.involves_rank(0));
  }
}

TEST(Scale, HalfTheRanksSilentGivesABoundedReport) {
  // 512 waiters x 512 silent ranks: the old report listed every pair (525,323 lines, 43 MB).
  const ScaleRun r = run_program(one_communicator(kRanks, "", "deadlock", [](int rank) {
    return rank % 2 == 0 ? std::string("{ op = \"sleep\", us = 1 }")
                         : std::string("{ op = \"all_reduce\", comm = \"w\" }");
  }));
  ASSERT_EQ(r.result.verdict, Verdict::deadlock);
  const core::Finding& f = r.result.findings.front();
  EXPECT_TRUE(mentions(
      f, fmt::format("… and {} more ranks with no host thread left are awaited", kRanks / 2 - sim::kFindingListMax)))
      << all_text(f);
  expect_bounded(f);
}

TEST(Scale, ACycleThroughAThousandRanksIsSummarised) {
  // Each rank waits in stream_sync on a recv from its right neighbour, which posts its send after
  // its own stream_sync: one cycle through every host thread and stream.
  // A grouped ring exchange both ways first connects every neighbour pair (R1), as real programs do.
  const ScaleRun r = run_program(one_communicator(kRanks, "", "deadlock", [](int rank) {
    const int right = (rank + 1) % kRanks, left = (rank + kRanks - 1) % kRanks;
    return fmt::format(
        "{{ op = \"group_start\" }}, {{ op = \"send\", comm = \"w\", peer = {1} }}, {{ op = \"recv\", comm = \"w\", "
        "peer = {0} }}, "
        "{{ op = \"send\", comm = \"w\", peer = {0} }}, {{ op = \"recv\", comm = \"w\", peer = {1} }}, {{ op = "
        "\"group_end\" }}, "
        "{{ op = \"recv\", comm = \"w\", peer = {0} }}, {{ op = \"stream_sync\", stream = \"main\" }}, "
        "{{ op = \"send\", comm = \"w\", peer = {1} }}",
        right, left);
  }));
  ASSERT_EQ(r.result.verdict, Verdict::deadlock);
  const core::Finding& f = r.result.findings.front();
  EXPECT_EQ(core::to_string(f.kind), "cycle");
  EXPECT_TRUE(mentions(f, fmt::format("{} fibers are stuck; they wait for each other in a cycle", 2 * kRanks)));
  EXPECT_TRUE(mentions(f, fmt::format("… and {} more fibers in the cycle", 2 * kRanks - sim::kFindingListMax)));
  // The link that closes the cycle is shown though it lies past the shown part.
  EXPECT_TRUE(mentions(f, fmt::format("rank{} has not posted send #1 rank0->rank{}", 0, kRanks - 1))) << all_text(f);
  expect_bounded(f);
}

TEST(Scale, AThousandReceiversOnASilentChannelGiveABoundedReport) {
  // Nobody ever sent on the channel, so any host thread may send: each receiver waits for all the
  // others, N^2 waits that the report used to draw one by one.
  Harness h(1);
  for (int t = 0; t < kThreads / 4; ++t)
    h.actor(
        0, [&h] { (void)h.rt.channel("silent").recv(); }, fmt::format("rank0.t{}", t));
  const core::RunResult r = h.run();
  ASSERT_EQ(r.verdict, Verdict::deadlock);
  const core::Finding& f = r.findings.front();
  EXPECT_EQ(core::to_string(f.kind), "cycle");
  EXPECT_TRUE(mentions(f, "may send the message")) << all_text(f);
  expect_bounded(f);
}

TEST(Scale, AStepLimitAmongManyThreadsNamesABoundedFew) {
  sim::SimConfig cfg = exact_config();
  cfg.max_steps = 10000;
  Harness h(1, cfg);
  const int threads = 200;
  for (int t = 0; t < threads; ++t)
    h.actor(
        0,
        [&h] {
          for (;;) h.rt.sleep(core::kUs);
        },
        fmt::format("rank0.t{}", t));
  const core::RunResult r = h.run();
  ASSERT_EQ(r.verdict, Verdict::step_limit);
  const core::Finding& f = r.findings.front();
  EXPECT_EQ(f.sites.size(), sim::kFindingListMax);
  EXPECT_TRUE(mentions(f, fmt::format("… and {} more host threads still running", threads - sim::kFindingListMax)))
      << all_text(f);
}

}  // namespace
}  // namespace ppspec::testing
