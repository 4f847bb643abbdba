#include "gpu_jobs/gpu_backend.h"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

extern char** environ;

namespace ppspec::gpu_jobs {
namespace {

core::Finding finding_from_json(const nlohmann::json& j) {
  core::Finding f;
  // A finding without a known verdict makes the whole result unreadable, never a pass.
  const auto v = core::parse_verdict(j.value("verdict", std::string()));
  if (!v) throw std::runtime_error("a finding without a verdict");
  f.verdict = *v;
  // So does one of a kind this build does not know (a child of another build); a kind left out is none.
  const std::string kind = j.value("kind", std::string());
  if (!kind.empty()) {
    const auto known = core::parse_finding_kind(kind);
    if (!known) throw std::runtime_error("a finding of no known kind");
    f.kind = *known;
  }
  f.time = j.value("time_ns", int64_t{0});
  f.sched_step = j.value("step", uint64_t{0});
  f.summary = j.value("summary", std::string());
  for (const auto& d : j.value("details", nlohmann::json::array())) f.details.push_back(d.get<std::string>());
  for (const auto& s : j.value("sites", nlohmann::json::array()))
    f.sites.push_back(core::Site{s.value("rank", -1), s.value("actor", std::string()), s.value("comm", std::string()),
                                 s.value("cseq", int64_t{-1}), s.value("what", std::string()),
                                 s.value("origin", std::string())});
  return f;
}

std::string self_exe() {
  // Tests run the ppspec binary as the child, not themselves.
  if (const char* exe = std::getenv("PPSPEC_EXE"); exe != nullptr && *exe != '\0') return exe;
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("ppspec") : p.string();
}

}  // namespace

namespace {

GpuOutcome failed(GpuFailure how, std::string error) { return GpuOutcome{how, std::move(error), {}}; }

// The child's verdict and findings into `r`; false when it recorded no verdict.
bool read_verdict(const nlohmann::json& j, core::RunResult& r) {
  if (!j.contains("verdict") || !j.at("verdict").is_string()) return false;
  const auto v = core::parse_verdict(j.at("verdict").get<std::string>());
  if (!v) return false;
  r.verdict = *v;
  try {
    for (const auto& f : j.value("findings", nlohmann::json::array())) r.findings.push_back(finding_from_json(f));
    for (const auto& f : j.value("notes", nlohmann::json::array())) r.notes.push_back(finding_from_json(f));
  } catch (const std::exception&) {
    return false;
  }
  r.stats.sim_time = j.value("wall_ns", int64_t{0});
  r.stats.ops_posted = j.value("ops_posted", uint64_t{0});
  r.stats.pairs = j.value("pairs", uint64_t{0});
  r.stats.events = j.value("events", uint64_t{0});
  return true;
}

}  // namespace

GpuRunOptions gpu_run_options(std::string trace, std::optional<double> hang_timeout_s) {
  GpuRunOptions o;
  o.trace = std::move(trace);
  if (hang_timeout_s) o.hang_timeout = static_cast<core::Time>(*hang_timeout_s * core::kSec);
  return o;
}

namespace {

// The child's environment: this process's, with CUDA's module loading and NCCL's connection and
// NVLink multicast settings of the job. CUDA reads CUDA_MODULE_LOADING once, when it starts: hence a
// child per scenario.
std::vector<std::string> child_environment(const GpuJob& job) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view kv(*e);
    if (kv.rfind("CUDA_MODULE_LOADING=", 0) == 0 || kv.rfind("NCCL_NVLS_ENABLE=", 0) == 0 ||
        kv.rfind("NCCL_RUNTIME_CONNECT=", 0) == 0)
      continue;
    env.emplace_back(kv);
  }
  env.push_back(
      fmt::format("CUDA_MODULE_LOADING={}", job.module_loading == core::ModuleLoading::eager ? "EAGER" : "LAZY"));
  env.push_back("NCCL_NVLS_ENABLE=0");  // NVLink multicast can take shared GPUs out of service
  // runtime_connect = false: NCCL connects collectives' channels at init; p2p peers are connected at
  // first contact whatever this says (NCCL's p2pTaskAppend marks them for a preconnect).
  env.push_back(fmt::format("NCCL_RUNTIME_CONNECT={}", job.runtime_connect ? 1 : 0));
  return env;
}

}  // namespace

GpuOutcome run_on_gpu(const GpuJob& job, const GpuRunOptions& opts, report::RunRecord& rec) {
  const auto result_path =
      (std::filesystem::temp_directory_path() / fmt::format("ppspec-gpu-{}-{}.json", getpid(), job.name)).string();
  std::filesystem::remove(result_path);
  const core::Time timeout = opts.hang_timeout.value_or(job.hang_timeout);
  std::vector<std::string> args = {self_exe(),
                                   "gpu-child",
                                   job.file,
                                   "--result",
                                   result_path,
                                   "--hang-timeout",
                                   fmt::format("{}", static_cast<double>(timeout) / core::kSec)};
  if (!opts.trace.empty()) args.insert(args.end(), {"--trace", opts.trace});
  std::vector<std::string> env = child_environment(job);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  const auto t0 = std::chrono::steady_clock::now();
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data()) != 0)
    return failed(GpuFailure::failed, fmt::format("cannot start {}", argv[0]));
  // The child's watchdog ends a hang; this deadline only guards against a stuck watchdog.
  const auto deadline = t0 + std::chrono::nanoseconds(timeout) + std::chrono::seconds(120);
  int status = 0;
  for (;;) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return failed(GpuFailure::failed, "the GPU run outlived its watchdog by 120 s and was killed");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  rec.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const std::string ended =
      WIFEXITED(status) ? fmt::format("exit {}", WEXITSTATUS(status)) : fmt::format("signal {}", WTERMSIG(status));
  std::ifstream in(result_path);
  if (!in) return failed(GpuFailure::failed, fmt::format("the GPU run ended ({}) without a result", ended));
  GpuOutcome out;
  try {
    in >> out.result;
  } catch (const nlohmann::json::exception& e) {
    return failed(GpuFailure::failed,
                  fmt::format("the GPU run ended ({}) with an unreadable result: {}", ended, e.what()));
  }
  std::filesystem::remove(result_path);
  if (out.result.contains("error")) {
    const bool bad = out.result.value("bad_input", false);
    return failed(bad ? GpuFailure::bad_input : GpuFailure::failed, out.result.at("error").get<std::string>());
  }
  if (!read_verdict(out.result, rec.result))
    return failed(GpuFailure::failed, fmt::format("the GPU run ended ({}) and recorded no verdict", ended));
  return out;
}

}  // namespace ppspec::gpu_jobs
