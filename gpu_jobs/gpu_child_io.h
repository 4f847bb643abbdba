// What the GPU child processes share: how a result reaches the parent (a JSON file written
// atomically), and the serving child's entry point.
#pragma once

#include <nlohmann/json.hpp>
#include <functional>
#include <mutex>
#include <string>
#include <vector>
#include <toml++/toml.h>

#include "core/verdict.h"
#include "gpu_jobs/gpu_backend.h"
#include "traces/trace_format.h"

namespace ppspec::gpu_jobs {

// A list that host threads of a GPU run append to (CUDA's host-function thread among them).
template <typename T>
class LockedList {
 public:
  void add(T item) {
    std::lock_guard<std::mutex> lock(mu_);
    items_.push_back(std::move(item));
  }
  std::vector<T> snapshot() {
    std::lock_guard<std::mutex> lock(mu_);
    return items_;
  }

 private:
  std::mutex mu_;
  std::vector<T> items_;
};

// The header of a child's trace: the scenario as run on hardware, named by its file's hash.
inline traces::TraceHeader gpu_trace_header(const std::string& name, const std::string& file, core::ScenarioKind kind,
                                            uint64_t hash, uint64_t seed = 0) {
  traces::TraceHeader header;
  header.scenario = name;
  header.file = file;
  header.seed = seed;
  header.strategy = "hardware";
  header.backend = traces::TraceBackend::gpu;
  header.kind = kind;
  header.scenario_hash = hash;
  return header;
}

void write_result(const std::string& path, const nlohmann::json& j);
// Runs a child's body; what it throws becomes the result's error (a scenario that needs more GPUs
// than the machine has is bad input, exit 2 in the parent; anything else a failed run, exit 3).
void run_guarded(const std::string& result_path, const std::function<void()>& body);
nlohmann::json result_json(const core::RunResult& checked, core::Time wall, uint64_t ops);
// A serving scenario on the real backend (gpu_jobs/gpu_child_serving.cc).
int gpu_child_serving(const GpuChildArgs& args, const toml::table& root, uint64_t hash);

}  // namespace ppspec::gpu_jobs
