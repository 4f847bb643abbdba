// The NCCL profiler plugin in processes of their own, as a job's ranks (tests/nccl_profiler_driver.cc
// plays NCCL to it): every operation recorded and completed, a trace per rank that `check` reads,
// a double post named with its rank, graph replays posted, a watcher reached over TCP or a folder,
// and what goes wrong said once and never fatal: an address that cannot be reached, a folder that
// cannot be made, a flood beyond the slot pool, NCCL unloading the plugin, an interface NCCL does
// not know, the watcher's --abort.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "core/finding_kinds.h"
#include "tests/scratch.h"
#include "tools/export_command.h"
#include "tools/show_command.h"
#include "watch/job_files.h"
#include "watch/line_sources.h"
#include "watch/watcher.h"

namespace ppspec::testing {
namespace {

namespace fs = std::filesystem;

struct Ran {
  int code;
  std::string out;
};

// Runs the driver as rank `rank` of a job with `env`, waiting for it.
Ran drive(const std::string& env, int rank, const std::string& script,
          const std::string& plugin = PPSPEC_NCCL_PROFILER_PATH) {
  const std::string cmd = fmt::format("{} PPSPEC_RANK={} {} {} {} 2>&1", env, rank, PPSPEC_DRIVER, plugin, script);
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), out};
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path job_dir(const std::string& name) {
  const fs::path d = scratch_path("nccl_profiler_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Both ranks of a job, one after the other (they share nothing but the folder).
watch::JobCheck two_ranks(const fs::path& dir, const std::string& script) {
  for (int r = 0; r < 2; ++r) {
    const Ran ran = drive("PPSPEC_TRACE_DIR=" + dir.string(), r, script);
    EXPECT_EQ(ran.code, 0) << ran.out;
  }
  return watch::check_plugin_traces(watch::plugin_trace_files({dir.string()}));
}

TEST(NcclProfiler, AJobOfTwoRanksWritesATracePerRankThatChecksClean) {
  const fs::path dir = job_dir("clean");
  const watch::JobCheck job = two_ranks(dir, "steps 5");
  EXPECT_EQ(job.result.verdict, core::Verdict::pass);
  EXPECT_EQ(job.ranks, 2u);
  // Each step: a send or a recv on 'act' per rank, three broadcasts per rank on 'bcast'.
  EXPECT_EQ(job.posted, 40u);
  EXPECT_EQ(job.completed, job.posted);
  size_t traces = 0;
  for (const auto& f : fs::directory_iterator(dir)) {
    const std::string text = read(f.path());
    EXPECT_NE(text.find("\"interface\":6"), std::string::npos)
        << "the driver loads ncclProfiler_v6 first, as NCCL 2.29 does";
    EXPECT_NE(text.find("{\"ppspec_nccl_profiler_end\":1,\"disabled\":false}"), std::string::npos)
        << "the exit handler's trailer";
    ++traces;
  }
  EXPECT_EQ(traces, 2u);
}

TEST(NcclProfiler, ADoublePostedBroadcastIsNamedWithItsRank) {
  const watch::JobCheck job = two_ranks(job_dir("extra"), "extra 5");
  ASSERT_EQ(job.result.verdict, core::Verdict::fifo_misalignment);
  const core::Finding& f = job.result.findings.front();
  EXPECT_EQ(f.culprit.rank, 1) << f.summary;
  EXPECT_EQ(f.culprit.comm, "bcast");
  EXPECT_EQ(f.culprit.what, core::Blame::extra) << f.summary;
}

// `show`, `export --perfetto` and `export --flight-recorder` read a job's plugin traces as `check`
// does: the job merged, the double post the finding they centre on and mark.
TEST(NcclProfiler, ShowAndExportReadAJobsTraces) {
  const fs::path dir = job_dir("show");
  two_ranks(dir, "extra 5");
  std::ostringstream out, err;
  tools::ShowArgs show;
  show.input = dir.string();
  EXPECT_EQ(tools::show_command(show, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("rank 1 posts an extra broadcast"), std::string::npos) << out.str();
  tools::ExportArgs perfetto;
  perfetto.input = dir.string();
  perfetto.out = scratch_path("nccl_profiler_show.json").string();
  EXPECT_EQ(tools::export_command(perfetto, out, err), 0) << err.str();
  EXPECT_NE(read(perfetto.out).find("\"traceEvents\""), std::string::npos);
  tools::ExportArgs dumps = perfetto;
  dumps.flight_recorder = true;
  dumps.out = scratch_path("nccl_profiler_show_dumps").string();
  EXPECT_EQ(tools::export_command(dumps, out, err), 0) << err.str();
  EXPECT_TRUE(fs::exists(fs::path(dumps.out) / "json" / "nccl_trace_rank_1.json"));
}

TEST(NcclProfiler, GraphReplaysArePostedOperationsOfTheirCapture) {
  const fs::path dir = job_dir("graph");
  const watch::JobCheck job = two_ranks(dir, "graph");
  EXPECT_EQ(job.result.verdict, core::Verdict::pass);
  EXPECT_EQ(job.posted, 6u) << "three replays on each rank";
  for (const auto& f : fs::directory_iterator(dir)) {
    const std::string text = read(f.path());
    EXPECT_EQ(count(text, "\"ev\":\"op_captured\""), 1u) << text;
    EXPECT_EQ(count(text, "\"replay_of\":0"), 3u) << text;
  }
}

TEST(NcclProfiler, AFloodBeyondTheSlotPoolIsAnIncompleteTraceNeverAPass) {
  const watch::JobCheck job = two_ranks(job_dir("flood"), "flood 3000");
  EXPECT_NE(job.result.verdict, core::Verdict::pass);
  bool incomplete = false;
  for (const auto* list : {&job.result.findings, &job.result.notes})
    for (const core::Finding& f : *list) incomplete = incomplete || f.kind == core::FindingKind::incomplete_trace;
  EXPECT_TRUE(incomplete);
}

TEST(NcclProfiler, AWatcherAddressThatCannotBeReachedLeavesTheTraceLocalSayingSoOnce) {
  const fs::path dir = job_dir("unreachable");
  const Ran ran = drive(fmt::format("PPSPEC_WATCH=127.0.0.1:1 PPSPEC_TRACE_DIR={}", dir.string()), 0, "steps 3");
  EXPECT_EQ(ran.code, 0) << ran.out;
  EXPECT_EQ(count(ran.out, "cannot reach the watcher at 127.0.0.1:1"), 1u) << ran.out;
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}), 1);
}

TEST(NcclProfiler, AFolderThatCannotBeMadeTurnsThePluginOffWithOneLine) {
  const Ran ran = drive("PPSPEC_TRACE_DIR=/proc/ppspec-cannot-be-made", 0, "steps 3");
  EXPECT_EQ(ran.code, 0) << ran.out;
  EXPECT_EQ(count(ran.out, "ppspec-nccl-profiler: disabled:"), 1u) << ran.out;
  EXPECT_NE(ran.out.find("driver rank 0: done"), std::string::npos) << ran.out;
}

TEST(NcclProfiler, NcclUnloadingThePluginAfterItsLastFinalizeLeavesTheTrailer) {
  const fs::path dir = job_dir("unload");
  const Ran ran = drive("PPSPEC_TRACE_DIR=" + dir.string(), 0, "unload");
  EXPECT_EQ(ran.code, 0) << ran.out;
  const std::string text = read(fs::directory_iterator(dir)->path());
  EXPECT_NE(text.find("ppspec_nccl_profiler_end"), std::string::npos) << text;
}

TEST(NcclProfiler, APluginOfAnInterfaceNcclDoesNotKnowIsNotLoaded) {
  const Ran ran = drive("", 0, "v99", PPSPEC_NCCL_PROFILER_FUTURE_PATH);
  EXPECT_NE(ran.out.find("no ncclProfiler_v6 or _v5"), std::string::npos) << ran.out;
}

TEST(NcclProfiler, TheRanksPublishToAWatcherListeningOnTheirAddress) {
  watch::SocketInbox inbox("127.0.0.1:0");
  watch::Watcher w;
  const fs::path dir = job_dir("tcp");
  const std::string env = fmt::format("PPSPEC_WATCH=127.0.0.1:{} PPSPEC_TRACE_DIR={}", inbox.port(), dir.string());
  std::thread ranks([&] {
    for (int r = 0; r < 2; ++r) EXPECT_EQ(drive(env, r, "extra 4").code, 0);
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::vector<watch::WatchReport> reports;
  while (!(w.all_ended() && w.counts().sources == 2) && std::chrono::steady_clock::now() < deadline) {
    inbox.poll(w, 50);
    for (auto& r : w.take_reports()) reports.push_back(std::move(r));
  }
  ranks.join();
  ASSERT_TRUE(w.all_ended()) << w.counts().sources << " sources";
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports.front().kind, watch::WatchReport::Kind::misalignment);
  EXPECT_EQ(w.result().verdict, core::Verdict::fifo_misalignment);
  EXPECT_EQ(w.dropped_lines(), 0u);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator{}), 2) << "the local traces too";
}

TEST(NcclProfiler, TheWatchersAbortStopsTheJob) {
  const fs::path dir = job_dir("abort");
  const auto start = std::chrono::steady_clock::now();
  std::thread later([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    watch::FolderInbox(dir.string()).request_abort();
  });
  const Ran ran = drive("PPSPEC_WATCH=" + dir.string(), 0, "slow");
  later.join();
  EXPECT_EQ(ran.code, 128 + SIGABRT) << ran.out;
  EXPECT_NE(ran.out.find("the watcher asked this job to stop"), std::string::npos) << ran.out;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

}  // namespace
}  // namespace ppspec::testing
