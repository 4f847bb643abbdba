// What the two kinds of GPU run share (runs/execute_gpu_*.cc): a list host threads append to, the
// header of the trace a GPU run writes, and its result's figures.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "core/scenario_kind.h"
#include "core/verdict.h"
#include "traces/trace_format.h"

namespace ppspec::runs {

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

// The header of a GPU run's trace: the scenario as run on hardware, named by its file's hash.
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

// What a GPU run found, with how long it ran and how many operations it posted.
inline core::RunResult timed(core::RunResult r, core::Time wall, uint64_t ops) {
  r.stats.sim_time = wall;
  r.stats.ops_posted = ops;
  return r;
}

}  // namespace ppspec::runs
