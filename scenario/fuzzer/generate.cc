#include "scenario/fuzzer/generate.h"

#include <algorithm>
#include <set>

#include "engine/config.h"
#include "scenario/fuzzer/draw.h"
#include "scenario/serving_case.h"

namespace ppspec::fuzzer {
namespace {

void pick_shape(ServingCase& c, const Space& s) {
  // Drawn only where the space allows replicas, so that other spaces draw what they always drew.
  if (s.dp.hi > 1) c.dp = pick(s.dp);
  c.pp = pick(s.pp);
  c.tp = pick(s.tp);
  scenario::size_model_to_topology(c);  // past 4 stages, or a TP that does not divide 8 lanes
  c.k = pick(s.k);
  c.feedback = *rc::gen::elementOf(s.feedback);
  c.max_num_batched_tokens = std::max(pick(s.max_num_batched_tokens), c.k + 1);
  c.max_num_seqs = pick(s.max_num_seqs);
  // Every replica an equal share of the request slots, at least one.
  if (c.dp > 1) c.max_num_seqs = std::max(c.dp, c.max_num_seqs / c.dp * c.dp);
  c.warmup_steps = pick(s.warmup_steps);
  if (maybe(s.graphs)) {
    // Decode graphs of whole verification blocks, up to the budget; at least one size.
    const int block = c.k + 1;
    const int most = std::max(1, c.max_num_batched_tokens / block);
    std::set<int> sizes;
    const int n = *rc::gen::inRange(1, 4);
    for (int i = 0; i < n; ++i) sizes.insert(block * *rc::gen::inRange(1, most + 1));
    c.capture_sizes.assign(sizes.begin(), sizes.end());
  }
}

// A KV cache between one request at its longest and what the workload can fill: the scheduler
// preempts (it shrinks to the smallest cache, the most preemptions).
void pick_kv_cache(ServingCase& c) {
  const auto [least, enough] = scenario::kv_bounds(c);
  if (least >= enough) return;
  c.num_blocks = *rc::gen::inRange(least, std::min(enough, least + 8));
  // Without chunked prefill a resumed request is one prefill of its prompt and output.
  if (!c.chunked_prefill) c.max_num_batched_tokens = std::max(c.max_num_batched_tokens, c.prompt_max + c.output_max);
}

// The case's model's layers: ModelConfig's default 4, or one a stage past 4 stages.
int layers_of(const ServingCase& c) { return c.layers > 0 ? c.layers : engine::ModelConfig{}.layers; }

// Prefix caching over shared system prompts: small blocks so that prompts of fuzzing sizes fill a
// few, a shared prefix up to the longest prompt (a prompt inside it is hit whole), a few groups.
void pick_prefix_cache(ServingCase& c) {
  c.enable_prefix_caching = true;
  c.block_size = *rc::gen::element(2, 4, 8, 16);
  c.shared_prefix = *rc::gen::inRange(0, c.prompt_max + 1);
  c.prefix_groups = *rc::gen::inRange(1, 4);
}

// Recurrent layers: each of the model's layers with probability 1/2, at least one (it shrinks
// towards layer 0 alone), so that at pp >= 2 they fall on one stage or on several.
void pick_recurrent(ServingCase& c) {
  const int layers = layers_of(c);
  for (int l = 0; l < layers; ++l)
    if (*rc::gen::arbitrary<bool>()) c.recurrent_layers.push_back(l);
  if (c.recurrent_layers.empty()) c.recurrent_layers.push_back(*rc::gen::inRange(0, layers));
}

// EAGLE taps: where the space allows, half the cases give none (EAGLE-3's default low, middle and
// high layers, which the engine derives from the model's depth); the others each of the model's
// layers with probability 1/2, at least one (it shrinks towards layer 0 alone), so that at pp >= 3
// taps ride the activations and go straight to the last stage.
void pick_eagle(ServingCase& c, const Space& s) {
  const int layers = layers_of(c);
  c.eagle = true;
  if (maybe(s.eagle_default_taps)) return;  // the default taps
  for (int l = 0; l < layers; ++l)
    if (*rc::gen::arbitrary<bool>()) c.taps.push_back(l);
  if (c.taps.empty()) c.taps.push_back(*rc::gen::inRange(0, layers));
  if (c.taps.size() > engine::kMaxTaps) c.taps.resize(engine::kMaxTaps);  // past 4 layers: the drafter fuses 4
}

void pick_workload(ServingCase& c, const Space& s) {
  c.num_requests = pick(s.requests);
  c.prompt_min = pick(s.prompt);
  c.prompt_max = std::min(s.prompt.hi, c.prompt_min + *rc::gen::inRange(0, 17));
  c.output_min = pick(s.output);
  c.output_max = std::min(s.output.hi, c.output_min + *rc::gen::inRange(0, 17));
  c.chunked_prefill = s.chunked_prefill && !maybe(true);  // shrinks to chunked prefill on
  if (!c.chunked_prefill) c.max_num_batched_tokens = std::max(c.max_num_batched_tokens, c.prompt_max);
  c.temperature = *rc::gen::elementOf(s.temperature);
  c.workload_seed = *rc::gen::inRange<uint64_t>(1, 1000);
  if (maybe(s.poisson)) {
    c.poisson = true;
    c.mean_gap_us = *rc::gen::inRange(10, 500);
  }
  if (maybe(s.aborts)) {
    c.abort_every = *rc::gen::inRange(1, 4);
    c.abort_after = *rc::gen::inRange(1, c.output_max + 1);
    c.abort_in_flight = maybe(true);
  }
  if (maybe(s.stop_token)) c.stop_token = *rc::gen::inRange(0, 512);
  // A cap close to the longest request: some requests end at max_model_len.
  if (maybe(s.length_cap))
    c.max_model_len = std::max(8, c.prompt_max + c.k + 2 + *rc::gen::inRange(0, c.output_max + 1));
  if (maybe(s.prefix_caching)) pick_prefix_cache(c);
  if (!c.enable_prefix_caching && maybe(s.recurrent)) pick_recurrent(c);
  if (maybe(s.lookahead)) c.max_concurrent_batches = c.pp + 1;  // before the cache: it needs K more slots
  // The engine core sizes a request's next step from the budget its last step returned: never ahead.
  // Nor with replicas: each would decide its own (the loader refuses it).
  if (c.k >= 2 && c.max_concurrent_batches == 0 && c.dp == 1) c.adaptive_budget = maybe(s.adaptive_budget);
  // vLLM's adaptive verification is the DSpark proposer's.
  if (c.k >= 1 && !c.adaptive_budget && maybe(s.eagle)) pick_eagle(c, s);
  if (maybe(s.preemption)) pick_kv_cache(c);
  if (maybe(s.priority)) {
    c.scheduling_policy = engine::SchedulingPolicy::priority;
    c.priority_levels = *rc::gen::inRange(1, 5);
  }
}

// A prefill instance beside the decode instance, where the loader allows one; the model grows to
// the larger of the two shapes.
void pick_disaggregation(ServingCase& c, const Space& s) {
  if (c.dp > 1 || c.enable_prefix_caching || !c.recurrent_layers.empty() || !maybe(s.disaggregation)) return;
  c.disaggregated = true;
  c.num_blocks = 0;  // no preemption (the loader refuses it with disaggregation)
  c.prefill_pp = pick(s.pp);
  c.prefill_tp = pick(s.tp);
  scenario::size_model_to_topology(c);
  // A taps list drawn over the model's layers before it grew stays valid: layers only grow.
  c.abort_while_loading = maybe(c.abort_every > 0);  // the aborted requests leave while their KV loads
}

}  // namespace

rc::Gen<ServingCase> gen_serving_case(const Space& space, const std::vector<std::string>& faults) {
  return rc::gen::exec([space, faults] {
    ServingCase c;
    pick_shape(c, space);
    pick_workload(c, space);
    c.module_loading = *rc::gen::elementOf(space.module_loading);
    c.faults = faults;
    c.seed = *rc::gen::inRange<uint64_t>(1, 1u << 20);
    c.pct_depth = pick(space.pct_depth);
    // Drawn last, and only from a list of several, so that every earlier draw stays what it was.
    c.jitter = space.jitter.size() > 1 ? *rc::gen::elementOf(space.jitter) : space.jitter.front();
    pick_disaggregation(c, space);           // after everything: spaces without it draw what they always drew
    c.triton_mla = maybe(space.triton_mla);  // last: the same for it
    if (maybe(space.stop_strings)) pick_stop_strings(c);  // and then these
    c.pin_memory = maybe(space.pin_memory);               // and then this
    return c;
  });
}

}  // namespace ppspec::fuzzer
