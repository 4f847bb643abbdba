// Runs a program scenario over the runtime interface: one actor per declared host thread, each
// issuing its rank's operations in order.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/event.h"
#include "core/runtime.h"
#include "core/verdict.h"
#include "program/program.h"
#include "sim/nccl_observer.h"
#include "sim/policy.h"

namespace ppspec::program {

// Declares the program's communicators, streams and buffers on `rt` and spawns its actors.
// The caller runs `rt`. `rt` must outlive nothing of `p`: `p` must outlive the run.
void install(const Program& p, core::Runtime& rt);

struct SimRunOptions {
  uint64_t seed = 1;
  sim::StrategySpec strategy;
  std::optional<std::vector<uint32_t>> replay;  // a recorded schedule instead of the strategy
  std::vector<core::EventSink*> sinks;
  bool record_decisions = true;
  sim::NcclObserver* nccl_observer = nullptr;  // what NCCL's profiler interface would be told; null: none
};

// Runs the program on the simulator.
core::RunResult run_on_sim(const Program& p, const SimRunOptions& opts);

}  // namespace ppspec::program
