// A GPU run happens in a forked child that hands its result back (runs/gpu_jobs/gpu_backend.h,
// result_codec.h). Its result must read in the parent exactly as the child had it; and a child that
// gave no result is never a pass: one that dies, writes nothing, writes no verdict or a finding
// without one is a failure of the run (exit 3) saying how it ended; one that says the scenario does
// not fit is bad input (exit 2). The children here are stand-ins and simulated runs, so this runs
// without a GPU.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "runs/gpu_jobs/gpu_backend.h"
#include "runs/gpu_jobs/result_codec.h"
#include "report/report.h"
#include "report/serving_figures.h"
#include "runs/execute.h"
#include "scenario/scenario.h"

namespace ppspec::testing {
namespace {

const std::string kSource = PPSPEC_SOURCE_DIR;

scenario::Loaded committed(const std::string& path) { return scenario::load_scenario(kSource + "/" + path); }

// A stand-in child that writes `text` as its result (nothing when empty), then exits with `status`.
gpu_jobs::ChildBody writes(std::string text, int status = 0) {
  return [text, status](const std::string& path) {
    if (!text.empty()) std::ofstream(path) << text;
    _exit(status);
  };
}

gpu_jobs::GpuOutcome run_with(const gpu_jobs::ChildBody& body) {
  static const scenario::Loaded loaded = committed("scenarios/programs/single_rank_graph.toml");
  gpu_jobs::GpuRunOptions opts;
  opts.hang_timeout = core::kSec;
  return gpu_jobs::run_in_child(loaded, opts, body);
}

TEST(GpuChild, ARunWithoutAVerdictIsAFailureSayingHowItEndedNeverAPass) {
  struct Case {
    const char* name;
    gpu_jobs::ChildBody body;
    const char* says;
  };
  const Case cases[] = {
      {"dies", writes("", 1), "ended (exit 1) without a result"},
      {"killed", [](const std::string&) { raise(SIGKILL); }, "ended (signal 9) without a result"},
      {"throws", [](const std::string&) { throw std::runtime_error("x"); }, "ended (exit 4) without a result"},
      {"garbage", writes("{not json"), "unreadable result"},
      {"no_verdict", writes(R"({"kind": "program", "result": {"findings": []}})"), "recorded no verdict"},
      {"unknown_verdict", writes(R"({"kind": "program", "result": {"verdict": "fine"}})"), "recorded no verdict"},
      {"other_kind", writes(R"({"kind": "serving", "result": {"verdict": "pass"}})"), "recorded no verdict"},
      {"cuda_error", writes(R"({"error": "CUDA error 700: an illegal memory access"})"), "illegal memory access"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const gpu_jobs::GpuOutcome o = run_with(c.body);
    EXPECT_EQ(o.failure, gpu_jobs::GpuFailure::failed);
    EXPECT_FALSE(o.executed.has_value());
    EXPECT_NE(o.error.find(c.says), std::string::npos) << o.error;
  }
}

TEST(GpuChild, AFindingWithoutAVerdictOrOfAnUnknownKindMakesTheResultUnreadable) {
  core::RunResult r;
  r.verdict = core::Verdict::hang;
  core::Finding f;
  f.verdict = core::Verdict::hang;
  f.kind = core::FindingKind::watchdog;
  r.findings.push_back(f);
  const nlohmann::json good = gpu_jobs::encode(runs::Executed{r});
  EXPECT_EQ(run_with(writes(good.dump())).failure, gpu_jobs::GpuFailure::none);
  for (const char* field : {"verdict", "kind"}) {
    SCOPED_TRACE(field);
    nlohmann::json bad = good;
    bad["result"]["findings"][0][field] = "fine";
    const gpu_jobs::GpuOutcome o = run_with(writes(bad.dump()));
    EXPECT_EQ(o.failure, gpu_jobs::GpuFailure::failed);
    EXPECT_NE(o.error.find("recorded no verdict"), std::string::npos) << o.error;
  }
}

TEST(GpuChild, AScenarioThatDoesNotFitIsBadInputAndAVerdictIsAVerdict) {
  gpu_jobs::GpuOutcome o = run_with(writes(
      gpu_jobs::encode_error("the scenario has 4 ranks and needs one GPU per rank; this machine has 2", true).dump()));
  EXPECT_EQ(o.failure, gpu_jobs::GpuFailure::bad_input);
  EXPECT_NE(o.error.find("this machine has 2"), std::string::npos) << o.error;
  core::RunResult hung;
  hung.verdict = core::Verdict::hang;
  o = run_with(writes(gpu_jobs::encode(runs::Executed{hung}).dump()));
  ASSERT_EQ(o.failure, gpu_jobs::GpuFailure::none) << o.error;
  EXPECT_EQ(o.executed->result().verdict, core::Verdict::hang);
  EXPECT_GT(o.wall_ms, 0);
}

// The whole result a report reads, as JSON: findings, notes, figures, coverage.
nlohmann::json as_reported(const runs::Executed& e) {
  report::RunRecord rec;
  rec.result = e.result();
  if (const serving::ServingRun* s = e.serving()) rec.serving = report::figures_of(*s, serving::ServingScenario{});
  return report::to_json(rec);
}

// A simulated run through the codec reads back exactly: its encoding, every request record, and
// its report. Scenarios with stops, aborts, preemption, chunked prefill, prefix caching, a failing
// monitor (a finding with a culprit) and a program that deadlocks.
TEST(GpuChild, EveryResultRoundTripsThroughTheCodecExactly) {
  for (const char* path :
       {"scenarios/serving/pp2_stop_and_abort.toml", "scenarios/serving/pp2_temperature.toml",
        "scenarios/serving/pp2_chunked_prefill.toml", "scenarios/serving/pp2_preempt.toml",
        "scenarios/serving/pp2_prefix_cache_eviction.toml", "scenarios/regressions/stale_drafts.toml",
        "scenarios/regressions/double_post_drafts.toml", "scenarios/programs/lazy_load_deadlock.toml"}) {
    SCOPED_TRACE(path);
    const scenario::Loaded loaded = committed(path);
    const runs::Executed run = runs::execute(loaded.scenario, runs::RunChoices{});
    const nlohmann::json j = gpu_jobs::encode(run);
    const runs::Executed back = gpu_jobs::decode(nlohmann::json::parse(j.dump()), loaded.scenario);
    EXPECT_EQ(gpu_jobs::encode(back), j);
    EXPECT_EQ(as_reported(back), as_reported(run));
    if (run.serving() == nullptr) continue;
    const auto& requests = run.serving()->requests;
    ASSERT_EQ(back.serving()->requests.size(), requests.size());
    for (size_t i = 0; i < requests.size(); ++i)
      EXPECT_EQ(back.serving()->requests[i].spec.prompt, requests[i].spec.prompt);
  }
}

TEST(GpuChild, AnInconsistentRecordOrARequestOutsideTheWorkloadIsRefused) {
  const scenario::Loaded loaded = committed("scenarios/serving/pp2_stop_and_abort.toml");
  const nlohmann::json j = gpu_jobs::encode(runs::execute(loaded.scenario, runs::RunChoices{}));
  nlohmann::json broken = j;
  ASSERT_FALSE(broken["requests"][0]["output"].empty());
  broken["requests"][0]["output_time"] = nlohmann::json::array();
  EXPECT_THROW(gpu_jobs::decode(broken, loaded.scenario), std::runtime_error);
  broken = j;
  broken["requests"][0]["id"] = 1 << 30;
  EXPECT_THROW(gpu_jobs::decode(broken, loaded.scenario), std::runtime_error);
}

// The child is this process forked: it runs the scenario this process loaded, and the parent reads
// its result as the child had it (here a simulated run stands in for the GPUs).
TEST(GpuChild, TheForkedChildRunsTheLoadedScenarioAndItsResultReadsAsItHadIt) {
  const scenario::Loaded loaded = committed("scenarios/serving/pp2_stop_and_abort.toml");
  const runs::Executed here = runs::execute(loaded.scenario, runs::RunChoices{});
  const gpu_jobs::GpuOutcome o = gpu_jobs::run_in_child(loaded, {}, [&](const std::string& path) {
    std::ofstream(path) << gpu_jobs::encode(runs::execute(loaded.scenario, runs::RunChoices{})).dump();
  });
  ASSERT_EQ(o.failure, gpu_jobs::GpuFailure::none) << o.error;
  EXPECT_EQ(gpu_jobs::encode(*o.executed), gpu_jobs::encode(here));
}

TEST(GpuChild, WithoutGpusTheRealChildSaysWhatIsMissingAsBadInput) {
  const scenario::Loaded loaded = committed("scenarios/serving/pp1_k5.toml");
  const gpu_jobs::GpuOutcome o = gpu_jobs::run_on_gpus(loaded, {});
  if (o.failure == gpu_jobs::GpuFailure::none) GTEST_SKIP() << "this machine has a GPU";
  EXPECT_EQ(o.failure, gpu_jobs::GpuFailure::bad_input) << o.error;
  const bool says = o.error.find("built without the GPU backend") != std::string::npos ||
                    o.error.find("needs one GPU per rank; this machine has 0") != std::string::npos;
  EXPECT_TRUE(says) << o.error;
}

}  // namespace
}  // namespace ppspec::testing
