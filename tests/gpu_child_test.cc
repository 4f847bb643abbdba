// `--backend gpu` never turns a GPU run that gave no verdict into a pass: a child that dies, writes
// nothing, writes no verdict or a finding without one is a failure of the run (exit 3), with how it
// ended; a child that says the scenario does not fit is bad input (exit 2). The children here are
// stand-ins (shell scripts), so this runs without a GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gpu_jobs/gpu_backend.h"
#include "report/report.h"
#include "tests/scratch.h"

namespace ppspec::testing {
namespace {

// A stand-in for `ppspec gpu-child` that writes `result` (JSON text) to the --result path, or
// nothing when `result` is empty, then exits with `status`.
std::string fake_child(const std::string& name, const std::string& result, int status) {
  const auto path = scratch_path("ppspec_fake_child_" + name + ".sh").string();
  std::ofstream out(path);
  out << "#!/bin/sh\n";
  if (!result.empty())
    out << "while [ $# -gt 0 ]; do if [ \"$1\" = --result ]; then printf '%s' '" << result
        << "' > \"$2\"; fi; shift; done\n";
  out << "exit " << status << "\n";
  out.close();
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

gpu_jobs::GpuOutcome run_with(const std::string& child) {
  setenv("PPSPEC_EXE", child.c_str(), 1);
  report::RunRecord rec;
  gpu_jobs::GpuRunOptions opts;
  opts.hang_timeout = core::kSec;
  const gpu_jobs::GpuOutcome o =
      gpu_jobs::run_on_gpu(gpu_jobs::GpuJob{"scenario.toml", "fake", core::ModuleLoading::lazy, core::kSec}, opts, rec);
  unsetenv("PPSPEC_EXE");
  return o;
}

TEST(GpuChild, ARunWithoutAVerdictIsAFailureSayingHowItEndedNeverAPass) {
  struct Case {
    const char* name;
    std::string result;
    int status;
    const char* says;
  };
  const Case cases[] = {
      {"dies", "", 1, "ended (exit 1) without a result"},
      {"garbage", "{not json", 0, "unreadable result"},
      {"no_verdict", R"({"findings": []})", 0, "recorded no verdict"},
      {"unknown_verdict", R"({"verdict": "fine"})", 0, "recorded no verdict"},
      {"finding_without_verdict", R"({"verdict": "pass", "findings": [{"summary": "x"}]})", 0, "recorded no verdict"},
      {"cuda_error", R"({"error": "CUDA error 700: an illegal memory access"})", 0, "illegal memory access"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const gpu_jobs::GpuOutcome o = run_with(fake_child(c.name, c.result, c.status));
    EXPECT_EQ(o.failure, gpu_jobs::GpuFailure::failed);
    EXPECT_NE(o.error.find(c.says), std::string::npos) << o.error;
  }
}

TEST(GpuChild, AScenarioThatDoesNotFitIsBadInputAndAVerdictIsAVerdict) {
  gpu_jobs::GpuOutcome o = run_with(fake_child(
      "too_few",
      R"({"error": "the scenario has 4 ranks and needs one GPU per rank; this machine has 2", "bad_input": true})", 0));
  EXPECT_EQ(o.failure, gpu_jobs::GpuFailure::bad_input);
  EXPECT_NE(o.error.find("this machine has 2"), std::string::npos) << o.error;
  o = run_with(fake_child("hang", R"({"verdict": "hang", "findings": [{"verdict": "hang", "summary": "stuck"}]})", 0));
  EXPECT_EQ(o.failure, gpu_jobs::GpuFailure::none) << o.error;
}

}  // namespace
}  // namespace ppspec::testing
