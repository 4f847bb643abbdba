// The runtime configuration a scenario states ([runtime]): the rules of every backend and the
// simulated world's own rules and costs (R4, R5, R7, R8, R1 and the cost model that turns work into
// virtual time). Scenarios hold it; the simulator reads all of it (sim/config.h), a GPU run only
// its RuntimeConfig part.
#pragma once

#include <cstdint>
#include <string>

#include "core/runtime_config.h"
#include "core/types.h"

namespace ppspec::core {

// The most a simulated duration may vary (the loader's bound on [runtime] jitter): below 1, so that
// no duration jitters to zero or below.
inline constexpr double kMaxJitter = 0.9;

struct CostModel {
  Time host_call = 1 * kUs;            // a runtime call on the host (launch, enqueue, record)
  Time kernel = 10 * kUs;              // a compute kernel with no explicit duration ...
  Time kernel_per_kwork = 0;           // ... plus this per 1024 elements of work
  Time comm_latency = 5 * kUs;         // a communication kernel once all partners are resident ...
  int64_t comm_bytes_per_us = 100000;  // ... plus bytes at this rate (100 GB/s)
  Time module_load = 50 * kUs;         // cuModuleLoad once the device has drained
  Time jit_compile = 2 * kMs;          // host-side compile before a JIT load
  Time comm_init = 100 * kUs;
  Time connect = 20 * kUs;  // first-contact connection setup (NCCL_RUNTIME_CONNECT)
  Time memcpy = 2 * kUs;
  bool operator==(const CostModel&) const = default;
};

// What a scenario's [runtime] says: the rules every backend keeps (module loading, strictness,
// runtime connect: RuntimeConfig, all a GPU run reads), and the simulated world's own rules and
// costs, which only the simulator reads (sim::SimConfig adds what a run chooses).
struct WorldConfig : RuntimeConfig {
  Concurrency concurrency = Concurrency::ok;
  OnMismatch on_mismatch = OnMismatch::report;
  // A send this small may complete before its recv is posted, into a receiving side that exists
  // (R4). Today's hardware: 2 x H200, NCCL 2.28.9, measured up to 64 MiB (docs/evidence/fidelity-h200).
  int64_t eager_bytes = int64_t{64} << 20;
  int64_t unit_bytes = 8;                          // protocol granularity: LL carries 8 data bytes per line (R5)
  uint64_t max_steps = 20'000'000;                 // scheduling decisions before `step-limit`
  Time max_time = 3600 * kSec;                     // virtual time before `step-limit`
  double jitter = 0.1;                             // durations vary by up to ±10%, seeded
  int64_t memory_budget_bytes = int64_t{8} << 30;  // host bytes all backed buffers of a run may take
  // The race detector (sim/race_detector.h): every backed buffer's accesses checked against
  // happens-before. Serving runs turn it on; it keeps vector clocks for every stream.
  bool detect_races = false;
  // An exploration knob: every item on streams of this name ("side") takes `stream_delay` longer,
  // so that a race also shows in the outputs. Empty: none.
  std::string delayed_stream;
  Time stream_delay = 0;
  CostModel cost;
  bool operator==(const WorldConfig&) const = default;
};

}  // namespace ppspec::core
