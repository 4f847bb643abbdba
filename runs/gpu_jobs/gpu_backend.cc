#include "runs/gpu_jobs/gpu_backend.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.h"
#include "runs/gpu_jobs/result_codec.h"

namespace ppspec::gpu_jobs {
namespace {

// What a child must set before CUDA and NCCL start, and how long it may hang.
struct ChildSettings {
  core::ModuleLoading module_loading = core::ModuleLoading::lazy;
  bool runtime_connect = true;  // NCCL_RUNTIME_CONNECT, read by NCCL at its first call
  core::Time hang_timeout = 0;
};

// A GPU run reads only the part of [runtime] that holds on every backend (core::RuntimeConfig).
ChildSettings settings_of(const scenario::Scenario& sc, const GpuRunOptions& opts) {
  if (const auto* p = std::get_if<program::Program>(&sc)) {
    const core::RuntimeConfig& rt = p->config;
    return {rt.module_loading, rt.runtime_connect, opts.hang_timeout.value_or(runs::gpu_hang_timeout(*p))};
  }
  const auto& s = std::get<serving::ServingScenario>(sc);
  const core::RuntimeConfig& rt = s.runtime;
  return {rt.module_loading, rt.runtime_connect, opts.hang_timeout.value_or(runs::gpu_hang_timeout(s))};
}

// CUDA's module loading and NCCL's connection and NVLink multicast settings of the job. CUDA reads
// CUDA_MODULE_LOADING once, when it starts: hence a child per scenario.
void set_child_environment(const ChildSettings& s) {
  setenv("CUDA_MODULE_LOADING", s.module_loading == core::ModuleLoading::eager ? "EAGER" : "LAZY", 1);
  setenv("NCCL_NVLS_ENABLE", "0", 1);  // NVLink multicast can take shared GPUs out of service
  // runtime_connect = false: NCCL connects collectives' channels at init; p2p peers are connected at
  // first contact whatever this says (NCCL's p2pTaskAppend marks them for a preconnect).
  setenv("NCCL_RUNTIME_CONNECT", s.runtime_connect ? "1" : "0", 1);
}

// Written whole, then renamed: the parent never reads half a result.
void write_result(const std::string& path, const nlohmann::json& j) {
  std::ofstream out(path + ".tmp");
  out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  out.close();
  std::rename((path + ".tmp").c_str(), path.c_str());
}

GpuOutcome failed(GpuFailure how, std::string error) { return GpuOutcome{how, std::move(error), std::nullopt, 0}; }

// Waits for the child; false when it outlived `deadline` (then it is killed and reaped).
bool reap(pid_t pid, std::chrono::steady_clock::time_point deadline, int& status) {
  for (;;) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) return true;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// The child's result, or why there is none.
GpuOutcome read_outcome(const std::string& path, const std::string& ended, const scenario::Scenario& sc) {
  std::ifstream in(path);
  if (!in) return failed(GpuFailure::failed, fmt::format("the GPU run ended ({}) without a result", ended));
  nlohmann::json j;
  try {
    in >> j;
  } catch (const nlohmann::json::exception& e) {
    return failed(GpuFailure::failed,
                  fmt::format("the GPU run ended ({}) with an unreadable result: {}", ended, e.what()));
  }
  if (j.is_object() && j.contains("error")) {
    const bool bad = j.value("bad_input", false);
    return failed(bad ? GpuFailure::bad_input : GpuFailure::failed, j.value("error", std::string("(no message)")));
  }
  try {
    GpuOutcome out;
    out.executed = decode(j, sc);
    return out;
  } catch (const std::exception& e) {
    return failed(GpuFailure::failed,
                  fmt::format("the GPU run ended ({}) and recorded no verdict: {}", ended, e.what()));
  }
}

}  // namespace

GpuRunOptions gpu_run_options(std::string trace, std::optional<double> hang_timeout_s) {
  GpuRunOptions o;
  o.trace = std::move(trace);
  if (hang_timeout_s) o.hang_timeout = static_cast<core::Time>(*hang_timeout_s * core::kSec);
  return o;
}

ChildBody child_run(const scenario::Loaded& loaded, const GpuRunOptions& opts) {
  return [&loaded, opts](const std::string& result_path) {
    runs::RunChoices c;
    c.target = runs::Target::gpus;
    c.gpu.trace = opts.trace;
    c.gpu.hang_timeout = opts.hang_timeout;
    c.gpu.scenario_hash = loaded.hash;
    // A hang, an error or a verdict NCCL forced ends this process from another thread.
    c.gpu.ended = [&](const runs::Executed& e) { write_result(result_path, encode(e)); };
    c.gpu.failed = [&](const std::string& error) { write_result(result_path, encode_error(error, false)); };
    try {
      write_result(result_path, encode(runs::execute(loaded.scenario, c)));
    } catch (const runs::NotRunnableHere& e) {
      write_result(result_path, encode_error(e.what(), true));
    } catch (const core::InputError& e) {
      write_result(result_path, encode_error(e.what(), true));
    } catch (const std::exception& e) {
      write_result(result_path, encode_error(e.what(), false));
    }
  };
}

GpuOutcome run_on_gpus(const scenario::Loaded& loaded, const GpuRunOptions& opts) {
  return run_in_child(loaded, opts, child_run(loaded, opts));
}

GpuOutcome run_in_child(const scenario::Loaded& loaded, const GpuRunOptions& opts, const ChildBody& body) {
  const ChildSettings settings = settings_of(loaded.scenario, opts);
  const std::string name = scenario::exploration_of(loaded.scenario).name;
  const auto result_path =
      (std::filesystem::temp_directory_path() / fmt::format("ppspec-gpu-{}-{}.json", getpid(), name)).string();
  std::filesystem::remove(result_path);
  // What this process has buffered must not be written twice, by the child as well.
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) return failed(GpuFailure::failed, fmt::format("cannot start a child process: {}", std::strerror(errno)));
  if (pid == 0) {
    set_child_environment(settings);
    try {
      body(result_path);
    } catch (...) {
      _exit(4);  // a body that throws wrote no result: the parent says how the child ended
    }
    _exit(0);
  }
  // The child's watchdog ends a hang; this deadline only guards against a stuck watchdog.
  const auto deadline = t0 + std::chrono::nanoseconds(settings.hang_timeout) + std::chrono::seconds(120);
  int status = 0;
  const bool reaped = reap(pid, deadline, status);
  const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!reaped) {
    std::filesystem::remove(result_path);
    return failed(GpuFailure::failed, "the GPU run outlived its watchdog by 120 s and was killed");
  }
  const std::string ended =
      WIFEXITED(status) ? fmt::format("exit {}", WEXITSTATUS(status)) : fmt::format("signal {}", WTERMSIG(status));
  GpuOutcome out = read_outcome(result_path, ended, loaded.scenario);
  std::filesystem::remove(result_path);
  out.wall_ms = wall_ms;
  return out;
}

bool gpu_backend_built() { return runs::gpus_built(); }

}  // namespace ppspec::gpu_jobs
