// Tests on real GPUs (ctest label `gpu`). Each skips cleanly when this machine has fewer GPUs than
// it needs; on a machine without GPUs every one of them skips.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "scenario/scenario.h"
#include "runs/gpu_jobs/gpu_backend.h"
#include "report/report.h"
#include "traces/trace_reader.h"
#include "verify/dumps/trace_check.h"
#include "tests/scratch.h"

namespace ppspec::testing {
namespace {

// Built here, run on a GPU machine: the paths can be given there.
std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}
const std::string kScenarios = env_or("PPSPEC_SOURCE_DIR", PPSPEC_SOURCE_DIR) + "/scenarios/programs/";

// Counted in a child process: CUDA initialised in this one would not survive the fork of every
// GPU run (runs/gpu_jobs/gpu_backend.h).
int gpus() {
  static const int n = [] {
    const pid_t pid = fork();
    if (pid == 0) {
      int count = 0;
      if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
      _exit(count);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 0;
  }();
  return n;
}

#define NEED_GPUS(n)                                                                             \
  do {                                                                                           \
    if (gpus() < (n)) GTEST_SKIP() << "needs " << (n) << " GPU(s); this machine has " << gpus(); \
  } while (0)

struct GpuRun {
  bool ran = false;
  gpu_jobs::GpuFailure failure = gpu_jobs::GpuFailure::none;
  std::string error;
  report::RunRecord rec;
};

GpuRun run(const std::string& name, double hang_timeout_s = 5, const std::string& trace = "") {
  GpuRun g;
  const scenario::Loaded loaded = scenario::load_scenario(kScenarios + name);
  gpu_jobs::GpuRunOptions o;
  o.hang_timeout = static_cast<core::Time>(hang_timeout_s * core::kSec);
  o.trace = trace;
  const gpu_jobs::GpuOutcome out = gpu_jobs::run_on_gpus(loaded, o);
  g.ran = out.failure == gpu_jobs::GpuFailure::none;
  g.failure = out.failure;
  g.error = out.error;
  g.rec.wall_ms = out.wall_ms;
  if (out.executed) g.rec.result = out.executed->result();
  return g;
}

std::string text(const core::Finding& f) {
  std::string s = f.summary + "\n";
  for (const auto& d : f.details) s += d + "\n";
  return s;
}

TEST(Gpu, OneGpu_PreloadedAndEagerPersistentKernelsComplete) {
  NEED_GPUS(1);
  for (const char* name : {"persistent_kernel_preloaded.toml", "persistent_kernel_eager.toml"}) {
    GpuRun g = run(name);
    ASSERT_TRUE(g.ran) << name << ": " << g.error;
    EXPECT_EQ(g.rec.result.verdict, core::Verdict::pass) << name;
  }
}

TEST(Gpu, OneGpu_LazyAndJitLoadsBehindThePersistentKernelHang) {
  NEED_GPUS(1);
  for (const char* name : {"persistent_kernel_lazy_deadlock.toml", "persistent_kernel_jit_deadlock.toml"}) {
    GpuRun g = run(name, 3);
    ASSERT_TRUE(g.ran) << name << ": " << g.error;
    ASSERT_EQ(g.rec.result.verdict, core::Verdict::hang) << name;
    const std::string dump = text(g.rec.result.findings.front());
    EXPECT_NE(dump.find("rank0.host"), std::string::npos) << dump;
    EXPECT_NE(dump.find("launch"), std::string::npos) << "the host is stuck in the launch (module load)\n" << dump;
    EXPECT_NE(dump.find("set_flag"), std::string::npos) << "the copier is stuck behind the context lock\n" << dump;
    EXPECT_LT(g.rec.wall_ms, 3000 + 15000) << "the watchdog ends the run promptly";
  }
}

TEST(Gpu, OneGpu_SingleRankGraphEventsAndNcclPass) {
  NEED_GPUS(1);
  const auto trace = scratch_path("ppspec_gpu_single_rank.jsonl").string();
  GpuRun g = run("single_rank_graph.toml", 10, trace);
  ASSERT_TRUE(g.ran) << g.error;
  EXPECT_EQ(g.rec.result.verdict, core::Verdict::pass);
  {
    traces::TraceReader reader(trace, {});
    EXPECT_EQ(reader.header().backend, traces::TraceBackend::gpu);
    int completed = 0;
    while (const core::Event* e = reader.next()) completed += e->kind == core::EventKind::op_completed;
    EXPECT_EQ(completed, 4) << "one all-reduce and three replayed ones complete";
  }
  traces::TraceReader reader(trace, {});
  EXPECT_EQ(verify::check_trace(reader).verdict, core::Verdict::pass);
}

TEST(Gpu, TooFewGpusIsAClearError) {
  if (gpus() >= 2) GTEST_SKIP() << "this machine has enough GPUs for every scenario";
  NEED_GPUS(1);
  GpuRun g = run("lazy_load_deadlock.toml");
  EXPECT_FALSE(g.ran);
  EXPECT_EQ(g.failure, gpu_jobs::GpuFailure::bad_input) << "a scenario that does not fit is bad input (exit 2)";
  EXPECT_NE(g.error.find("needs one GPU per rank"), std::string::npos) << g.error;
}

TEST(Gpu, TwoGpus_LazyAndJitLoadsHangWithADumpOfBothRanks) {
  NEED_GPUS(2);
  for (const char* name : {"lazy_load_deadlock.toml", "jit_load_deadlock.toml"}) {
    GpuRun g = run(name, 5);
    ASSERT_TRUE(g.ran) << g.error;
    ASSERT_EQ(g.rec.result.verdict, core::Verdict::hang) << name;
    const core::Finding& f = g.rec.result.findings.front();
    bool rank0_recv = false;
    bool rank1_pending = false;
    for (const auto& s : f.sites) {
      rank0_recv |= s.rank == 0 && s.comm == "bcast" && s.what.find("recv") != std::string::npos;
      rank1_pending |= s.rank == 1 && !s.comm.empty();
    }
    EXPECT_TRUE(rank0_recv) << text(f);
    EXPECT_TRUE(rank1_pending) << text(f);
  }
}

TEST(Gpu, TwoGpus_PreloadedAndEagerPass) {
  NEED_GPUS(2);
  for (const char* name : {"lazy_load_preloaded.toml", "lazy_load_eager.toml"}) {
    GpuRun g = run(name);
    ASSERT_TRUE(g.ran) << g.error;
    EXPECT_EQ(g.rec.result.verdict, core::Verdict::pass) << name;
  }
}

TEST(Gpu, TwoGpus_DoublePostTraceIsAMisalignment) {
  NEED_GPUS(2);
  const auto trace = scratch_path("ppspec_gpu_double_post.jsonl").string();
  GpuRun g = run("double_post_broadcast.toml", 5, trace);
  ASSERT_TRUE(g.ran) << g.error;
  traces::TraceReader reader(trace, {});
  const core::RunResult checked = verify::check_trace(reader);
  ASSERT_EQ(checked.verdict, core::Verdict::fifo_misalignment);
  EXPECT_EQ(core::to_string(checked.findings.front().kind), "collective-mismatch");
}

// `ppspec run --backend both --json FILE` with the ppspec binary: its exit status and records.
struct Both {
  int code = -1;
  nlohmann::json records;
};

Both run_both(const std::string& serving_file) {
  const std::string exe = env_or("PPSPEC_EXE", PPSPEC_BINARY);
  const std::string cmd = exe + " run --backend both --json --hang-timeout 20 " +
                          env_or("PPSPEC_SOURCE_DIR", PPSPEC_SOURCE_DIR) + "/scenarios/serving/" + serving_file;
  Both b;
  std::string text;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n = 0;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
    const int status = pclose(p);
    b.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  b.records = nlohmann::json::parse(text, nullptr, false);
  return b;
}

// The simulator's run, the GPUs' run, and their comparison: all as expected, and identical.
void expect_sim_equals_gpu(const std::string& file) {
  SCOPED_TRACE(file);
  const Both b = run_both(file);
  ASSERT_EQ(b.code, 0) << b.records.dump(2);
  ASSERT_TRUE(b.records.is_array() && b.records.size() == 3) << b.records.dump(2);
  EXPECT_EQ(b.records[1].at("strategy"), "gpu");
  EXPECT_EQ(b.records[1].at("verdict"), "pass");
  const nlohmann::json& cmp = b.records[2];
  EXPECT_EQ(cmp.at("strategy"), "sim = gpu");
  EXPECT_EQ(cmp.at("verdict"), "pass");
  ASSERT_EQ(cmp.at("notes").size(), 1u) << cmp.dump(2);
  EXPECT_EQ(cmp.at("notes")[0].at("summary").get<std::string>().rfind("identical: ", 0), 0u)
      << "tokens, drafts and operation sequences were all compared: " << cmp.dump(2);
}

TEST(GpuServing, OneGpu_ServingEqualsTheSimulatorTokenForTokenAndOpForOp) {
  NEED_GPUS(1);
  for (const char* f : {"pp1_k5.toml", "pp1_tp1_k0.toml"}) expect_sim_equals_gpu(f);
}

TEST(GpuServing, TwoGpus_PipelineAndTensorParallelServingEqualTheSimulator) {
  NEED_GPUS(2);
  for (const char* f : {"pp2_tp1_k5.toml", "pp1_tp2_k5.toml", "pp2_k5_single_payload.toml", "pp2_temperature.toml"})
    expect_sim_equals_gpu(f);
}

TEST(GpuServing, AServingScenarioNeedingMoreGpusIsBadInputSayingHowMany) {
  if (gpus() >= 4) GTEST_SKIP() << "this machine has 4 GPUs";
  NEED_GPUS(1);
  const Both b = run_both("pp2_tp2_k5.toml");
  EXPECT_EQ(b.code, 2) << "needs 4 GPUs";
}

}  // namespace
}  // namespace ppspec::testing
