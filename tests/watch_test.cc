// The watcher, fed lines as the ranks write them: a misalignment the moment its second member
// posts, calls NCCL never launched said at a stall, bad lines dropped and counted (and exit 2 from
// `check`, strict), and the simulator-driven proof (verify/fidelity/plugin_differential.h) on every
// committed program scenario and on generated programs of a seed the rules were not written on.
#include <gtest/gtest.h>

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "core/finding_kinds.h"
#include "verify/fidelity/plugin_differential.h"
#include "tests/command_test.h"
#include "tests/scratch.h"
#include "tools/check_command.h"
#include "watch/watcher.h"

namespace ppspec::testing {
namespace {

namespace fs = std::filesystem;

std::string header(int rank) {
  return fmt::format(R"({{"ppspec_nccl_profiler":1,"rank":{},"host":"h","pid":1,"clock":"harness"}})", rank);
}
std::string init(const std::string& comm, int rank) {
  return fmt::format(R"({{"ev":"comm_init","t":1,"comm":"{}","name":"bcast","ranks":2,"comm_rank":{},"interface":5}})",
                     comm, rank);
}
std::string bcast(int op, int count, int64_t t) {
  return fmt::format(
      R"({{"ev":"op_posted","t":{},"comm":"00000000000000b1","op":{},"func":"broadcast","dtype":"i64","count":{},"root":1}})",
      t, op, count);
}

TEST(Watch, AMisalignmentIsReportedWhenItsSecondMemberPosts) {
  watch::Watcher w;
  const size_t r0 = w.add_source("rank0"), r1 = w.add_source("rank1");
  for (auto [s, rank] : {std::pair{r0, 0}, std::pair{r1, 1}}) {
    w.add_line(s, header(rank));
    w.add_line(s, init("00000000000000b1", rank));
  }
  w.add_line(r0, bcast(0, 10, 5));
  EXPECT_TRUE(w.take_reports().empty()) << "one member posted: nothing to compare yet";
  w.add_line(r1, bcast(0, 12, 7));
  const std::vector<watch::WatchReport> reports = w.take_reports();
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports.front().finding.kind, core::FindingKind::collective_mismatch);
  EXPECT_NE(reports.front().finding.summary.find("count 10 vs 12"), std::string::npos)
      << reports.front().finding.summary;
  EXPECT_TRUE(w.take_reports().empty()) << "said once";
}

TEST(Watch, ASendWhoseGroupNeverEndedIsACallNeverLaunchedAtTheStall) {
  watch::Watcher w;
  const size_t r0 = w.add_source("rank0");
  w.add_line(r0, header(0));
  w.add_line(r0, init("00000000000000b1", 0));
  EXPECT_FALSE(w.stall().has_value()) << "nothing in flight: an idle job has not stalled";
  w.add_line(
      r0,
      R"({"ev":"op_posted","t":9,"comm":"00000000000000b1","op":0,"func":"send","dtype":"f32","count":4,"group":3,"site":"job.py:12"})");
  const auto s = w.stall();
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->finding.kind, core::FindingKind::never_launched);
  EXPECT_EQ(s->finding.sites.front().rank, 0);
  EXPECT_EQ(s->finding.sites.front().origin, "job.py:12");
}

TEST(Watch, BadLinesAreDroppedAndCountedNeverFatal) {
  watch::Watcher w;
  const size_t r0 = w.add_source("rank0");
  w.add_line(r0, R"({"ppspec_nccl_profiler":2,"rank":0,"host":"h","pid":1,"clock":"harness"})");
  w.add_line(r0, "GET / HTTP/1.1");
  w.add_line(r0, header(0));
  w.add_line(r0, R"({"ev":"op_completed","t":1,"comm":"00000000000000b1","op":7})");  // before its comm_init
  w.add_line(r0, init("00000000000000b1", 0));
  EXPECT_EQ(w.dropped_lines(), 3u);
  ASSERT_EQ(w.drop_reasons().size(), 3u);
  EXPECT_NE(w.drop_reasons()[0].find("written by version 2 of ppspec's NCCL profiler plugin"), std::string::npos)
      << w.drop_reasons()[0];
  EXPECT_EQ(w.counts().comms, 1u);
}

TEST(Watch, CheckOfATraceOfAnotherPluginVersionIsExitTwoSayingWhy) {
  const fs::path dir = scratch_path("watch_other_version");
  fs::create_directories(dir);
  std::ofstream(dir / "rank0.h.1.jsonl")
      << R"({"ppspec_nccl_profiler":2,"rank":0,"host":"h","pid":1,"clock":"realtime"})" << '\n';
  tools::CheckArgs a;
  a.traces = {dir.string()};
  std::ostringstream out, err;
  EXPECT_EQ(tools::check_command(a, out, err), 2);
  EXPECT_NE(err.str().find("rank0.h.1.jsonl:1"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("written by version 2"), std::string::npos) << err.str();
}

TEST(Watch, CheckOfAJobThatRecordedNothingIsExitTwo) {
  const fs::path dir = scratch_path("watch_nothing");
  fs::create_directories(dir);
  std::ofstream(dir / "rank0.h.1.jsonl") << header(0) << '\n' << init("00000000000000b1", 0) << '\n';
  tools::CheckArgs a;
  a.traces = {dir.string()};
  std::ostringstream out, err;
  EXPECT_EQ(tools::check_command(a, out, err), 2);
  EXPECT_NE(err.str().find("no NCCL operation was recorded"), std::string::npos) << err.str();
}

// The simulator drives the real plugin on every committed program scenario: the watcher's verdict
// is the simulator's (plugin_differential.h says what "the same" is where NCCL tells a profiler less).
TEST(NcclProfilerDifferential, EveryProgramScenarioAgrees) {
  for (const auto& f : fs::directory_iterator(kScenarios)) {
    const fidelity::PluginCase c =
        fidelity::compare_on_plugin(f.path().string(), scratch_path("npd_" + f.path().stem().string()).string());
    EXPECT_TRUE(c.agree) << f.path() << ": " << c.why << "\n  simulator: " << c.sim_summary
                         << "\n  watcher: " << c.watch_summary;
  }
}

// The generated programs the differential once disagreed on (tests/nccl_profiler_differential/README.md).
TEST(NcclProfilerDifferential, ProgramsThatOnceDisagreedAgree) {
  size_t n = 0;
  for (const auto& f : fs::directory_iterator(kSource + "/tests/nccl_profiler_differential")) {
    if (f.path().extension() != ".toml") continue;
    ++n;
    const fidelity::PluginCase c =
        fidelity::compare_on_plugin(f.path().string(), scratch_path("npd_kept_" + f.path().stem().string()).string());
    EXPECT_TRUE(c.agree) << f.path() << ": " << c.why << "\n  simulator: " << c.sim_summary
                         << "\n  watcher: " << c.watch_summary;
  }
  EXPECT_EQ(n, 11u);
}

// Generated programs of a seed the agreement rules were not written against, through both plugin
// tables NCCL may load (v5 for NCCL 2.26-2.28, v6 from 2.29).
TEST(NcclProfilerDifferential, GeneratedProgramsOfAFreshSeedAgreeThroughBothInterfaces) {
  for (int interface : {5, 6}) {
    fidelity::PluginDifferentialOptions o;
    o.seed = 26;
    o.interface = interface;
    o.out = scratch_path(fmt::format("npd_generated_v{}", interface)).string();
    for (uint64_t i = 0; i < 40; ++i) {
      const fidelity::PluginCase c = fidelity::run_plugin_case(o, i);
      EXPECT_TRUE(c.agree) << c.name << " (" << c.disturbance << "): " << c.why << "\n  simulator: " << c.sim_summary
                           << "\n  watcher: " << c.watch_summary;
    }
  }
}

}  // namespace
}  // namespace ppspec::testing
