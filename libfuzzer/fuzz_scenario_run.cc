// Fuzz target: a scenario loaded and then run on the simulator, under budgets small enough that an
// input takes milliseconds. A run may end in any verdict (a deadlock or a step-limit is a finding
// about the scenario, not about ppspec); a crash, a sanitizer report, an internal error or any
// other exception is a bug (libfuzzer/README.md).
//
// A serving scenario's workload is shrunk to a few short requests and its warmup and batch to a few
// steps and sequences: every check of the loader still holds for the smaller values (each is monotone
// in them), so the shrunk scenario is one the loader accepts too. Anything else too large for the
// budgets — a model, a topology, a program — is skipped, not shrunk: shrinking it could break what
// the loader checked. A reproducer of this target is therefore replayed with the target, not with
// `ppspec run`, which would run the scenario unshrunk.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <variant>

#include "libfuzzer/scenario_input.h"
#include "program/runner.h"
#include "serving/runner.h"

namespace ppspec::fuzz {
namespace {

// Scheduling decisions and virtual time a run may take before its verdict is step-limit.
constexpr uint64_t kProgramStepsMax = 20'000;
constexpr uint64_t kServingStepsMax = 200'000;
constexpr core::Time kTimeMax = 10 * core::kSec;

// Programs: every host thread and stream is a fiber with its own stack.
constexpr int kRanksMax = 8;
constexpr size_t kThreadsMax = 16;
constexpr size_t kStreamsMax = 8;
constexpr size_t kCommsMax = 16;
constexpr size_t kOpsMax = 512;

void cap_runtime(core::WorldConfig& cfg, uint64_t steps_max) {
  cfg.max_steps = std::min(cfg.max_steps, steps_max);
  cfg.max_time = std::min(cfg.max_time, kTimeMax);
}

bool small_enough(const program::Program& p) {
  if (p.num_ranks > kRanksMax || p.streams.size() > kStreamsMax || p.comms.size() > kCommsMax) return false;
  size_t threads = 0, ops = 0;
  for (const auto& rank : p.ranks) {
    threads += rank.size();
    for (const program::ThreadProgram& t : rank) ops += t.ops.size();
  }
  return threads <= kThreadsMax && ops <= kOpsMax;
}

// Serving: the workload and the batch, shrunk (see the top of the file).
constexpr int kRequestsMax = 4;
constexpr int kOutputMax = 16;
constexpr int kSeqsMax = 8;
constexpr int kWarmupStepsMax = 3;

void shrink(engine::EngineConfig& c) {
  engine::WorkloadConfig& w = c.workload;
  w.num_requests = std::min(w.num_requests, kRequestsMax);
  w.output_max = std::min(w.output_max, kOutputMax);
  w.output_min = std::min(w.output_min, w.output_max);
  c.serving.max_num_seqs = std::min(c.serving.max_num_seqs, kSeqsMax);
  c.serving.warmup_steps = std::min(c.serving.warmup_steps, kWarmupStepsMax);
}

// The engine's buffers and the toy model grow with these; the oracles run the scenario up to three
// times (as written, at pp = 1, without graphs).
bool small_enough(const engine::EngineConfig& c) {
  const engine::ModelConfig& m = c.model;
  const engine::ServingConfig& s = c.serving;
  return c.runtime_ranks() <= 4 && m.vocab <= 1024 && m.layers <= 8 && m.lanes <= 64 && m.experts <= 16 &&
         m.block_size <= 64 && m.num_blocks <= 4096 && m.max_model_len <= 4096 && c.workload.prompt_max <= 128 &&
         s.max_num_batched_tokens <= 1024 && (s.capture_sizes.empty() || s.capture_sizes.back() <= 1024);
}

void run(program::Program& p) {
  if (!small_enough(p)) return;
  cap_runtime(p.config, kProgramStepsMax);
  sim::RunConfig opts;
  opts.seed = p.explore.seed;
  opts.strategy = p.explore.strategy;
  (void)program::run_on_sim(p, opts);
}

void run(serving::ServingScenario& s) {
  if (!small_enough(s.config)) return;
  shrink(s.config);
  cap_runtime(s.runtime, kServingStepsMax);
  sim::RunConfig opts;
  opts.seed = s.seed;
  opts.strategy = s.strategy;
  (void)serving::run_on_sim(s, opts);
}

}  // namespace
}  // namespace ppspec::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto scenario = ppspec::fuzz::load_scenario(data, size);
  if (scenario) std::visit([](auto& s) { ppspec::fuzz::run(s); }, *scenario);
  return 0;
}
