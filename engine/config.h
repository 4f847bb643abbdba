// A serving scenario's configuration (DESIGN §6, scenarios/README.md): topology, model, speculative
// decoding, graphs, scheduler limits, workload. The runtime it runs on is configured by whoever
// runs it (serving::ServingScenario::runtime for the simulator): the engine knows no runtime.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/types.h"
#include "engine/faults.h"

namespace ppspec::engine {

// The most ranks (dp x pp x tp) a serving scenario may have: the simulator's happens-before state
// grows with ranks squared (one request, one core: 256 ranks 4 s and 340 MB, 512 ranks 15 s and
// 1.4 GB; docs/evidence/serving-rank-costs/).
inline constexpr int kRanksMax = 1024;

// dp replicas of a pp x tp engine (vLLM's data_parallel_size): replica r holds the global ranks
// first_rank + [r * pp * tp, (r + 1) * pp * tp), numbered within it as at dp = 1 (stage-major).
// first_rank is 0 but for a disaggregated prefill instance, whose ranks follow the decode
// instance's in the runtime (engine/disaggregation.h).
struct Topology {
  int dp = 1;
  int pp = 1;
  int tp = 1;
  int first_rank = 0;
  int ranks() const { return dp * pp * tp; }
  int replica_ranks() const { return pp * tp; }
  int rank_of(int stage, int tp_rank, int replica = 0) const {
    return first_rank + replica * pp * tp + stage * tp + tp_rank;
  }
  bool holds(int rank) const { return rank >= first_rank && rank < first_rank + ranks(); }
  int replica_of(int rank) const { return (rank - first_rank) / (pp * tp); }
  int stage_of(int rank) const { return ((rank - first_rank) % (pp * tp)) / tp; }
  int tp_rank_of(int rank) const { return (rank - first_rank) % tp; }
};

// The target's attention backend (vLLM's --attention-backend): `varlen`, one causal kernel over every
// query row (FlashAttention's varlen path); `triton_mla`, vLLM's TRITON_MLA, whose metadata builder
// splits the batch at its KV-cache group's reorder threshold into a decode path (one query row per
// request) and a prefill path (engine/attention_groups.h, kernels/mla_attention.h).
enum class AttentionBackend : uint8_t { varlen, triton_mla };

struct ModelConfig {
  int vocab = 512;
  int layers = 4;
  int lanes = 8;  // deep lanes, split over TP
  int block_size = 16;
  int num_blocks = 0;       // KV cache blocks per rank; 0: enough for the workload
  double alpha = 0.7;       // probability that a token follows the context lane: the drafter's acceptance
  int64_t stop_token = -1;  // -1: no stop token
  int max_model_len = 2048;
  uint64_t checkpoint_seed = 1;
  int experts = 8;  // the drafter's MoE layer
  int topk = 2;
  // Recurrent (Mamba/GatedDeltaNet-like) layers, by index: each keeps a per-request state over its
  // lanes in place of a KV cache (kernels/recurrent.h); empty: none. Sorted, unique, in [0, layers).
  std::vector<int> recurrent_layers;
  AttentionBackend attention = AttentionBackend::varlen;
  bool is_recurrent(int layer) const {
    for (int l : recurrent_layers)
      if (l == layer) return true;
    return false;
  }
};

enum class Feedback : uint8_t { three_message, single_payload };

// How the last stage drafts: DSpark (vLLM's DFlash proposer: one block-parallel forward over a query
// block, from the target's context lane) or EAGLE (vLLM's EagleProposer / EAGLE-3: K autoregressive
// forwards from the hidden states of tapped target layers, which under PP live on earlier stages).
enum class DraftMethod : uint8_t { dspark, eagle };
inline constexpr int kMaxTaps = 4;  // tapped layers an EAGLE drafter fuses (EAGLE-3 taps three)

struct SpecConfig {
  int k = 0;  // draft tokens per step; 0: no speculative decoding
  Feedback feedback = Feedback::three_message;
  // vLLM's adaptive verification (enable_adaptive_verification, PR #47808): per step the last stage
  // picks how many of the K drafts each request drafts and verifies next (1..K), from a confidence
  // estimate each rank keeps itself (engine/draft_budget.h); tp rank 0 decides and broadcasts it.
  bool adaptive_budget = false;
  DraftMethod method = DraftMethod::dspark;
  // EAGLE: the target layers whose outputs the drafter fuses, sorted and unique (at most kMaxTaps);
  // empty: the default, EAGLE-3's low, middle and high layer (engine::eagle_taps).
  std::vector<int> taps;
};

// vLLM's --scheduling-policy: which waiting request is admitted first and which running request a
// preemption takes (engine/scheduler.cc).
enum class SchedulingPolicy : uint8_t { fcfs, priority };

struct ServingConfig {
  std::vector<int> capture_sizes;  // sorted; multiples of K+1 when K > 0; empty: eager only
  int max_num_seqs = 16;
  int max_num_batched_tokens = 256;
  bool chunked_prefill = true;
  int warmup_steps = 2;  // synthetic steps before serving
  // Batches the engine core keeps in flight (vLLM max_concurrent_batches); 0: pp. pp + 1 is async
  // scheduling's lookahead (vLLM's MRV2 with PP; at pp = 1 the one-step overlap): a request's
  // next step is scheduled, with draft placeholders, while its previous step is still in flight.
  int max_concurrent_batches = 0;
  // vLLM's automatic prefix caching (engine/block_pool.h): full blocks of computed tokens are
  // cached by content and position, and a new or resumed request whose prefill begins with cached
  // blocks reuses them and computes only what follows.
  bool enable_prefix_caching = false;
  SchedulingPolicy scheduling_policy = SchedulingPolicy::fcfs;
  // vLLM's pin_memory: the step's host-built inputs are staged through reused pinned host buffers
  // and copied without blocking (engine/input_staging.h); false: pageable copies.
  bool pin_memory = false;
};

enum class Arrival : uint8_t { burst, poisson };

struct WorkloadConfig {
  int num_requests = 8;
  int prompt_min = 4;
  int prompt_max = 16;
  int output_min = 16;
  int output_max = 32;
  Arrival arrival = Arrival::burst;
  double mean_gap_us = 200;  // poisson arrivals
  double temperature = 0;
  // Every Nth request (the 1st, the N+1st, ...) samples greedily whatever the temperature: under
  // temperature sampling, a share of requests the golden oracle can check token by token. 0: none.
  int greedy_every = 0;
  uint64_t seed = 1;
  int abort_every = 0;  // every Nth request is aborted ...
  int abort_after = 8;  // ... once it has this many output tokens
  // ... and the abort reaches the engine core while the request's next step is in flight, the
  // oldest batch in flight: the core frees it at that schedule, before the step's output returns
  // (the generation counters' case: earlier stages still adopt that step's feedback pp steps
  // later), and its blocks stay fenced until the step returns.
  bool abort_in_flight = false;
  // Disaggregation only: the aborts reach the decode instance while the request's KV is still
  // being pulled (a client that leaves before its first token), at the engine core's first
  // schedule after its pulls were posted; abort_after does not apply to them.
  bool abort_while_loading = false;
  // Shared system prompts: the first `shared_prefix` tokens of every prompt are one of
  // `prefix_groups` common prefixes (request i has prefix i % prefix_groups), drawn from the
  // workload seed; the rest of each prompt, its length and everything else are drawn as without.
  int shared_prefix = 0;
  int prefix_groups = 1;
  // Request priorities (vLLM's `priority`, lower runs first): each request's is drawn in
  // [0, priority_levels) from a stream of its own, so nothing else a workload draws moves. More
  // than one level needs the priority policy (vLLM refuses a priority under FCFS).
  int priority_levels = 1;
  // Stop strings (vLLM's SamplingParams.stop), of every request: the front end ends a request whose
  // output text completes one (engine/stop_strings.h). At most kMaxStopStrings, each of 1 to
  // kMaxStopStringLength letters of the model's text (engine/detokenizer.h).
  std::vector<std::string> stop_strings;
  bool include_stop_str_in_output = false;
};

// Prefill/decode disaggregation (vLLM's KV connector; engine/disaggregation.h): a prefill instance
// of its own pp x tp computes each prompt and its first token, and the decode instance, the
// scenario's topology, pulls the prompt's KV from it and serves the rest.
struct Disaggregation {
  bool enabled = false;
  Topology prefill;  // dp 1; first_rank: the decode instance's rank count
  // Set in the prefill instance's own configuration (engine::prefill_instance_config) only: it
  // runs the prefill side, and its peer is the decode instance's topology.
  bool prefill_side = false;
  Topology decode;
};

// Which instance a configuration runs: the whole serving system, or one side of a disaggregated one.
enum class Instance : uint8_t { aggregated, prefill, decode };

struct EngineConfig {
  Topology topology;
  Disaggregation disagg;
  ModelConfig model;
  SpecConfig spec;
  ServingConfig serving;
  WorkloadConfig workload;
  Faults faults;

  // Derived limits the workers size their buffers with. Warmup's synthetic requests obey the
  // workload's limits (a prompt no longer than prompt_max, at most output_max tokens out), so
  // every buffer sized for the workload holds what warmup writes too.
  int max_prompt() const { return workload.prompt_max; }
  // Whether the KV cache is smaller than the workload can fill: then requests are preempted, and
  // a resumed one prefills its prompt and its output so far.
  bool may_preempt() const;
  // The KV blocks a rank needs so that no request is ever preempted (the null block included).
  int blocks_needed() const;
  // The longest prefill: a prompt, or a resumed request's prompt and output (all but its last token).
  int max_prefill() const { return may_preempt() ? workload.prompt_max + workload.output_max : workload.prompt_max; }
  int warmup_prompt_len() const { return workload.prompt_max < 3 ? workload.prompt_max : 3; }
  int warmup_max_tokens() const { return workload.output_max; }
  int max_blocks_per_req() const {
    // + K + 1: the last verification block; + K: the drafter's lookahead slots past it; scheduled
    // ahead, + K more: the drafts of the step in flight, counted as accepted.
    const int slack = (schedules_ahead() ? 3 : 2) * spec.k + 1;
    return (workload.prompt_max + workload.output_max + slack + model.block_size - 1) / model.block_size + 1;
  }
  int max_rows() const;  // rows of a step: the token budget, or the largest capture size
  int batches_in_flight() const {
    return serving.max_concurrent_batches > 0 ? serving.max_concurrent_batches : topology.pp;
  }
  // Whether a request's step may be scheduled while its previous one is in flight.
  bool schedules_ahead() const { return batches_in_flight() > topology.pp; }
  bool eagle() const { return spec.k > 0 && spec.method == DraftMethod::eagle; }
  // The drafter's forwards per propose: DSpark one, EAGLE K (each with the MoE layer's collectives).
  int draft_forwards() const { return eagle() ? spec.k : 1; }
  // A data-parallel replica's share of the request slots (vLLM: max_num_seqs is per DP engine;
  // here the scenario's is the whole system's, divided evenly).
  int replica_slots() const { return serving.max_num_seqs / topology.dp; }
  Instance instance() const {
    if (!disagg.enabled) return Instance::aggregated;
    return disagg.prefill_side ? Instance::prefill : Instance::decode;
  }
  // The runtime's ranks: the decode instance's (or the aggregated engine's), then the prefill instance's.
  int runtime_ranks() const {
    return topology.ranks() + (disagg.enabled && !disagg.prefill_side ? disagg.prefill.ranks() : 0);
  }
};

// Replica `replica`'s configuration: the system's, with its share of the request slots. Its
// workload is the requests whose id % dp == replica (engine::make_replica_workload).
EngineConfig replica_config(const EngineConfig& c);

// The EAGLE drafter's tapped layers: the configured ones, or EAGLE-3's default (vLLM taps layers 2,
// N/2 and N-3; the toy's models are shallow, so layers 0, N/2 and N-1), sorted and unique.
std::vector<int> eagle_taps(const EngineConfig& c);

}  // namespace ppspec::engine
