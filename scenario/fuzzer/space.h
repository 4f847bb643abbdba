// The configuration space `ppspec fuzz` draws serving scenarios from: a range per knob. The default
// is the whole space ppspec supports at fuzzing sizes; a SPACE.toml narrows it to a user's own
// deployment shape (scenarios/README.md, "Fuzzing spaces", documents the keys).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/types.h"
#include "scenario/serving_case.h"

namespace ppspec::fuzzer {

struct Range {
  int lo = 0;
  int hi = 0;
  bool contains(int v) const { return v >= lo && v <= hi; }
};

struct Space {
  // Data-parallel replicas: 1 unless a space asks for more, so that the cases every earlier
  // campaign drew stay the cases it draws.
  Range dp{1, 1};
  Range pp{1, 4};
  Range tp{1, 2};
  Range k{0, 16};
  Range requests{1, 6};
  Range prompt{1, 24};  // prompt lengths, tokens
  Range output{1, 32};  // max_tokens
  Range max_num_seqs{1, 8};
  Range max_num_batched_tokens{8, 128};
  Range warmup_steps{1, 9};  // past 2 pp: long warmups decode the warmup requests several times
  Range pct_depth{0, 3};     // 0: the random policy; d > 0: PCT of depth d
  // Which kinds of scenario a campaign generates (serving: 3 in 4 when both).
  bool servings = true, programs = true;
  // Each of these is drawn from the listed values.
  std::vector<std::string> feedback{"three-message", "single-payload"};
  std::vector<core::ModuleLoading> module_loading{core::ModuleLoading::eager, core::ModuleLoading::lazy,
                                                  core::ModuleLoading::jit};
  std::vector<double> temperature{0.0, 0.8};
  // [runtime] jitter: how much each simulated duration varies (seeded). The runtime's default only,
  // unless a space lists more, so that the cases every earlier campaign drew stay the cases it draws.
  std::vector<double> jitter{0.1};
  // Whether a case may use each edge: CUDA graphs, chunked prefill, aborts, a stop token, a
  // max_model_len close to prompt + output, poisson arrivals, a KV cache small enough to preempt.
  bool graphs = true, chunked_prefill = true, aborts = true, stop_token = true, length_cap = true, poisson = true;
  bool preemption = true;
  // Whether a case may run async scheduling's lookahead batch (max_concurrent_batches = pp + 1).
  bool lookahead = true;
  // Prefix caching with shared system prompts and a block size drawn from 2..16. Off unless a
  // space asks for it, so that the cases every earlier campaign drew stay the cases it draws.
  bool prefix_caching = false;
  // The adaptive draft budget (cases with K >= 2 and no lookahead batch). Off unless a space asks.
  bool adaptive_budget = false;
  // Recurrent layers (a non-empty set of the model's layers: 4, or one a stage past 4 stages): off
  // unless a space asks for it, for the same reason; never with prefix caching (the loader refuses
  // the combination).
  bool recurrent = false;
  // The EAGLE drafter with a non-empty set of the model's layers tapped, at most 4 (cases with K >= 1
  // and no adaptive budget): off unless a space asks for it.
  bool eagle = false;
  // Half the EAGLE cases give no taps (EAGLE-3's default low, middle and high layers, which the
  // engine derives from the model's depth): off unless a space asks for it.
  bool eagle_default_taps = false;
  // vLLM's priority scheduling policy, with requests of 1 to 4 priority levels: off unless a space
  // asks for it.
  bool priority = false;
  // Prefill/decode disaggregation: a prefill instance of pp and tp drawn from the same ranges (cases
  // with one replica, no prefix caching, no recurrent layers): off unless a space asks for it.
  bool disaggregation = false;
  // The target on TRITON_MLA (its batch split into a decode and a prefill path at the KV-cache
  // group's reorder threshold): off unless a space asks for it.
  bool triton_mla = false;
  // One to three stop strings of two to four letters of the model's text, kept in the output or
  // not: off unless a space asks for it.
  bool stop_strings = false;
  // Half the cases stage their inputs through reused pinned host buffers (`[serving] pin_memory`):
  // off unless a space asks for it.
  bool pin_memory = false;
  // A space centred on one serving scenario (`around = "FILE"`, `ppspec fuzz --around FILE`): each
  // case is that scenario's deployment as it stands, its workload, KV cache and schedule drawn from
  // the ranges above (scenario/fuzzer/around.h); none: the cases' deployments are drawn too.
  std::optional<scenario::ServingCase> around;
  std::string around_file;
};

// The hard limits a SPACE.toml must stay inside (what a fuzzing case can run in milliseconds).
Space space_limits();

// Reads a SPACE.toml: every key optional, each a [lo, hi] pair, a list or a boolean, inside
// space_limits(). Throws core::InputError with the file and line.
Space read_space(const std::string& file);
Space parse_space(const std::string& text, const std::string& file);

}  // namespace ppspec::fuzzer
