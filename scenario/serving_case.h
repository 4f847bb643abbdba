// One generated serving case: every knob `ppspec fuzz` varies, with the schedule to run it under.
// A case is written out as a scenario file (the file is what runs: the loader checks it like any
// other), so a failure's reproducer is exactly the case that failed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/types.h"
#include "core/verdict.h"
#include "serving/scenario.h"

namespace ppspec::scenario {

struct ServingCase {
  // [topology], [spec]
  int dp = 1, pp = 1, tp = 1, k = 0;
  // [disaggregation]: a prefill instance of prefill_pp x prefill_tp beside the decode instance (pp x tp)
  bool disaggregated = false;
  int prefill_pp = 1, prefill_tp = 1;
  std::string feedback = "three-message";
  bool adaptive_budget = false;
  bool eagle = false;     // method = "eagle", with `taps`
  std::vector<int> taps;  // the EAGLE drafter's tapped layers (of the default 4)
  // [model]
  int vocab = 0;  // 0: the model's default (512); a stress workload's smaller one makes its stop token common
  int stop_token = -1;
  int max_model_len = 2048;
  int layers = 0, lanes = 0;  // 0: the model's default (4 layers, 8 lanes); from-vllm sizes them to pp and tp
  int num_blocks = 0;         // 0: enough; fewer than the workload can fill: preemption
  int block_size = 16;
  // [serving]
  std::vector<int> capture_sizes;
  int max_num_seqs = 4, max_num_batched_tokens = 64, warmup_steps = 2;
  bool chunked_prefill = true;
  int max_concurrent_batches = 0;  // 0: pp; pp + 1: async scheduling's lookahead batch
  bool enable_prefix_caching = false;
  engine::SchedulingPolicy scheduling_policy = engine::SchedulingPolicy::fcfs;
  bool pin_memory = false;            // inputs staged through reused pinned host buffers
  std::vector<int> recurrent_layers;  // [model] recurrent_layers (of the model's layers)
  bool triton_mla = false;            // [model] attention = "triton_mla"
  // [workload]
  int num_requests = 2, prompt_min = 4, prompt_max = 8, output_min = 4, output_max = 8;
  bool poisson = false;
  int mean_gap_us = 200;
  double temperature = 0;
  int greedy_every = 0;  // every Nth request greedy under temperature (0: none)
  uint64_t workload_seed = 1;
  int abort_every = 0, abort_after = 1;
  bool abort_in_flight = false;
  bool abort_while_loading = false;  // disaggregated only: the aborts reach requests whose KV loads
  int shared_prefix = 0, prefix_groups = 1;
  int priority_levels = 1;                // more than one under the priority policy only
  std::vector<std::string> stop_strings;  // [workload] stop_strings (of the model's text's letters)
  bool include_stop_str = false;          // [workload] include_stop_str_in_output
  // [runtime], [faults]
  core::ModuleLoading module_loading = core::ModuleLoading::eager;
  double jitter = 0.1;  // core::WorldConfig's default: no line written
  bool strict = true;   // hazards fail the case; a scenario fuzzed around keeps its own
  std::vector<std::string> faults;
  // [explore]: the schedule, and the deployment's knobs its author did not fix
  std::vector<serving::FreeAxis> free;
  uint64_t seed = 1;
  int pct_depth = 0;  // 0: random

  std::string strategy() const;  // "random" | "pct:D"
  // Requests times ranks: what shrinking minimises first.
  int size() const { return num_requests * dp * pp * tp; }
};

// What the file says it expects: pass, or the verdict and kind a failure had.
struct Expectation {
  core::Verdict verdict = core::Verdict::pass;
  std::string kind;
};

// The scenario file of a case; `description` says where it came from.
std::string to_toml(const ServingCase& c, const std::string& name, const std::string& description,
                    const Expectation& expect);

// The KV cache sizes a case can run with: the fewest (the null block and one request at its
// longest) and enough never to preempt (engine/scheduler.h's blocks_minimum and blocks_needed).
struct KvBounds {
  int least = 0, enough = 0;
};
KvBounds kv_bounds(const ServingCase& c);

// ppspec's model sized to the case's layout: a layer per stage at least, lanes that the TP ranks
// split evenly (the model's default, 4 layers of 8 lanes, where they do: `layers` and `lanes` stay 0).
void size_model_to_topology(ServingCase& c);

// One line: the knobs that make this case what it is.
std::string summary(const ServingCase& c);

}  // namespace ppspec::scenario
