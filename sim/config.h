// Parameters of one simulated world: the NCCL/CUDA behaviours a scenario can choose (R4, R5, R7,
// R8, R1) and the cost model that turns work into virtual time.
#pragma once

#include <cstdint>
#include <string>

#include "core/runtime_config.h"
#include "core/types.h"

namespace ppspec::sim {

// The most a simulated duration may vary (the loader's bound on [runtime] jitter): below 1, so that
// no duration jitters to zero or below.
inline constexpr double kMaxJitter = 0.9;

using core::Time;

struct CostModel {
  Time host_call = 1 * core::kUs;      // a runtime call on the host (launch, enqueue, record)
  Time kernel = 10 * core::kUs;        // a compute kernel with no explicit duration ...
  Time kernel_per_kwork = 0;           // ... plus this per 1024 elements of work
  Time comm_latency = 5 * core::kUs;   // a communication kernel once all partners are resident ...
  int64_t comm_bytes_per_us = 100000;  // ... plus bytes at this rate (100 GB/s)
  Time module_load = 50 * core::kUs;   // cuModuleLoad once the device has drained
  Time jit_compile = 2 * core::kMs;    // host-side compile before a JIT load
  Time comm_init = 100 * core::kUs;
  Time connect = 20 * core::kUs;  // first-contact connection setup (NCCL_RUNTIME_CONNECT)
  Time memcpy = 2 * core::kUs;
};

// Work items a stream holds before a host call that adds one blocks, as a CUDA launch blocks when
// the device's command queue is full: a host that posts forever without synchronising waits
// instead of growing the simulator's memory without bound.
inline constexpr uint64_t kStreamQueueMax = 1024;

// The rules every backend keeps (module loading, strictness, runtime connect: core::RuntimeConfig),
// and the simulator's own.
struct SimConfig : core::RuntimeConfig {
  core::Concurrency concurrency = core::Concurrency::ok;
  core::OnMismatch on_mismatch = core::OnMismatch::report;
  // A send this small may complete before its recv is posted, into a receiving side that exists
  // (R4). Today's hardware: 2 x H200, NCCL 2.28.9, measured up to 64 MiB (docs/evidence/fidelity-h200).
  int64_t eager_bytes = int64_t{64} << 20;
  int64_t unit_bytes = 8;             // protocol granularity: LL carries 8 data bytes per line (R5)
  uint64_t max_steps = 20'000'000;    // scheduling decisions before `step-limit`
  Time max_time = 3600 * core::kSec;  // virtual time before `step-limit`
  double jitter = 0.1;                // durations vary by up to ±10%, seeded
  bool record_decisions = true;       // keep the schedule for replay
  // Device memory: backed by host bytes (data and a shadow byte each) where the run reads data back
  // (serving); by size only otherwise (program scenarios), so a 32 GiB all-reduce costs nothing.
  bool backed_memory = true;
  int64_t memory_budget_bytes = int64_t{8} << 30;  // host bytes all backed buffers of a run may take
  // The race detector (sim/race_detector.h): every backed buffer's accesses checked against
  // happens-before. Serving runs turn it on; it keeps vector clocks for every stream.
  bool detect_races = false;
  // An exploration knob: every item on streams of this name ("side") takes `stream_delay` longer,
  // so that a race also shows in the outputs. Empty: none.
  std::string delayed_stream;
  Time stream_delay = 0;
  CostModel cost;
};

}  // namespace ppspec::sim
