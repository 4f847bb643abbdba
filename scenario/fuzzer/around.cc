#include "scenario/fuzzer/around.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "core/assert.h"
#include "core/error.h"
#include "core/file_bytes.h"
#include "engine/config.h"
#include "scenario/fuzzer/draw.h"
#include "scenario/program_loader.h"
#include "scenario/serving_loader.h"
#include "scenario/toml_reader.h"

namespace ppspec::fuzzer {
namespace {

using scenario::ServingCase;

constexpr int kModelsOwnMaxLen = engine::ModelConfig{}.max_model_len;
using serving::kLongestFreePrompt;
constexpr int kRequestsMost = 256, kOutputMost = 1024;

// A key a case cannot carry: its table, its name (empty: the whole table) and how it is said.
struct Uncarried {
  std::string_view table, key, said;
};

// What a case cannot say: the model's own knobs, the oracles, the simulated world.
std::vector<Uncarried> uncarried(const serving::ServingScenario& s) {
  const engine::ModelConfig m = s.config.model, d;
  std::vector<Uncarried> keys;
  if (m.alpha != d.alpha) keys.push_back({"model", "alpha", "[model] alpha"});
  if (m.checkpoint_seed != d.checkpoint_seed) keys.push_back({"model", "checkpoint_seed", "[model] checkpoint_seed"});
  if (m.experts != d.experts || m.topk != d.topk) keys.push_back({"model", "experts", "[model] experts, topk"});
  if (!s.oracles.golden || !s.oracles.pp_invariance || !s.oracles.padding_invariance)
    keys.push_back({"oracles", "", "[oracles]"});
  core::WorldConfig carried = serving::serving_runtime_defaults();
  carried.module_loading = s.runtime.module_loading;
  carried.jitter = s.runtime.jitter;
  carried.strict = s.runtime.strict;
  if (!(s.runtime == carried))
    keys.push_back({"runtime", "", "[runtime] keys other than module_loading, jitter and strict"});
  const engine::WorkloadConfig& w = s.config.workload;
  if (w.arrival == engine::Arrival::poisson && w.mean_gap_us != std::floor(w.mean_gap_us))
    keys.push_back({"workload", "mean_gap_us", "[workload] mean_gap_us of a fraction of a microsecond"});
  return keys;
}

// The line of the first key refused in the scenario's `text` (0 without the text): its key's, or
// its table's, or the file's first.
int line_of_first(const std::vector<Uncarried>& keys, std::string_view text, const std::string& file) {
  if (text.empty()) return 0;
  const toml::table root = scenario::parse_toml_text(text, file);
  const toml::table* t = root[keys.front().table].as_table();
  if (t == nullptr) return 1;
  const toml::node* n = keys.front().key.empty() ? nullptr : t->get(keys.front().key);
  return scenario::line_of(n != nullptr ? *n : *t);
}

// Refused by name, at the line of the first: a fuzzing case keeps ppspec's defaults there.
void refuse_uncarried(const serving::ServingScenario& s, std::string_view text) {
  const std::vector<Uncarried> keys = uncarried(s);
  if (keys.empty()) return;
  std::vector<std::string_view> said;
  for (const Uncarried& k : keys) said.push_back(k.said);
  throw core::InputError(s.file, line_of_first(keys, text, s.file),
                         fmt::format("a space around this scenario cannot carry its {}: a fuzzing case keeps ppspec's "
                                     "defaults there; remove them from the scenario (or copy it without them)",
                                     fmt::join(said, ", ")));
}

void carry_deployment(const engine::EngineConfig& e, ServingCase& c) {
  const engine::ModelConfig d;
  c.dp = e.topology.dp, c.pp = e.topology.pp, c.tp = e.topology.tp;
  c.disaggregated = e.disagg.enabled;
  c.prefill_pp = e.disagg.prefill.pp, c.prefill_tp = e.disagg.prefill.tp;
  c.k = e.spec.k;
  c.feedback = e.spec.feedback == engine::Feedback::single_payload ? "single-payload" : "three-message";
  c.adaptive_budget = e.spec.adaptive_budget;
  c.eagle = e.spec.method == engine::DraftMethod::eagle;
  c.taps = e.spec.taps;
  c.vocab = e.model.vocab == d.vocab ? 0 : e.model.vocab;
  c.stop_token = static_cast<int>(e.model.stop_token);
  c.max_model_len = e.model.max_model_len;
  c.layers = e.model.layers == d.layers ? 0 : e.model.layers;
  c.lanes = e.model.lanes == d.lanes ? 0 : e.model.lanes;
  c.num_blocks = e.model.num_blocks;
  c.block_size = e.model.block_size;
  c.recurrent_layers = e.model.recurrent_layers;
  c.triton_mla = e.model.attention == engine::AttentionBackend::triton_mla;
  c.capture_sizes = e.serving.capture_sizes;
  c.max_num_seqs = e.serving.max_num_seqs;
  c.max_num_batched_tokens = e.serving.max_num_batched_tokens;
  c.chunked_prefill = e.serving.chunked_prefill;
  c.warmup_steps = e.serving.warmup_steps;
  c.max_concurrent_batches = e.serving.max_concurrent_batches;
  c.enable_prefix_caching = e.serving.enable_prefix_caching;
  c.scheduling_policy = e.serving.scheduling_policy;
  c.pin_memory = e.serving.pin_memory;
}

void carry_workload(const serving::ServingScenario& s, ServingCase& c) {
  const engine::WorkloadConfig& w = s.config.workload;
  c.num_requests = w.num_requests;
  c.prompt_min = w.prompt_min, c.prompt_max = w.prompt_max;
  c.output_min = w.output_min, c.output_max = w.output_max;
  c.poisson = w.arrival == engine::Arrival::poisson;
  c.mean_gap_us = static_cast<int>(std::lround(w.mean_gap_us));  // a burst does not read it
  c.temperature = w.temperature;
  c.greedy_every = w.greedy_every;
  c.workload_seed = w.seed;
  c.abort_every = w.abort_every, c.abort_after = w.abort_after, c.abort_in_flight = w.abort_in_flight;
  c.abort_while_loading = w.abort_while_loading;
  c.shared_prefix = w.shared_prefix, c.prefix_groups = w.prefix_groups;
  c.priority_levels = w.priority_levels;
  c.stop_strings = w.stop_strings, c.include_stop_str = w.include_stop_str_in_output;
}

}  // namespace

ServingCase case_of(const serving::ServingScenario& s, std::string_view text) {
  refuse_uncarried(s, text);
  ServingCase c;
  carry_deployment(s.config, c);
  carry_workload(s, c);
  c.module_loading = s.runtime.module_loading;
  c.jitter = s.runtime.jitter;
  c.strict = s.runtime.strict;
  for (const engine::FaultSwitch& f : engine::kFaultSwitches)
    if (s.config.faults.*f.field) c.faults.emplace_back(f.name);
  c.seed = s.seed;
  c.pct_depth = s.strategy.kind == core::StrategySpec::Kind::pct ? s.strategy.depth : 0;
  c.free = s.free;
  return c;
}

namespace {

bool is_free(const ServingCase& c, serving::FreeAxis axis) {
  return std::find(c.free.begin(), c.free.end(), axis) != c.free.end();
}

}  // namespace

Space limits_around(const ServingCase& centre) {
  Space s = space_limits();
  s.requests = {1, kRequestsMost};
  s.output = {1, kOutputMost};
  // A prompt leaves room for one verification block below max_model_len (the loader's rule).
  int longest =
      is_free(centre, serving::FreeAxis::max_model_len) ? kLongestFreePrompt : centre.max_model_len - centre.k - 2;
  if (!centre.chunked_prefill) longest = std::min(longest, centre.max_num_batched_tokens);
  s.prompt = {1, std::max(1, longest)};
  return s;
}

Space space_around(const std::string& file) {
  const std::string text = core::file_bytes_or_throw(file);
  const serving::ServingScenario scenario = scenario::parse_serving(text, file);
  Space s;
  s.around = case_of(scenario, text);
  s.around_file = file;
  const ServingCase& c = *s.around;
  const Space lim = limits_around(c);
  s.servings = true, s.programs = false;
  s.requests = {1, std::clamp(c.num_requests, 1, lim.requests.hi)};
  s.prompt = {1, std::clamp(c.prompt_max, 1, lim.prompt.hi)};
  s.output = {1, std::clamp(c.output_max, 1, lim.output.hi)};
  s.temperature = {0.0, c.temperature > 0 ? c.temperature : 0.8};
  s.jitter = {c.jitter};
  return s;
}

namespace {

// Lengths within the space's ranges, each range's spread drawn too (it shrinks to one length),
// prompts within `prompt`.
void draw_lengths(ServingCase& c, const Space& s, Range prompt) {
  c.num_requests = pick(s.requests);
  c.prompt_min = pick(prompt);
  c.prompt_max = c.prompt_min + *rc::gen::inRange(0, prompt.hi - c.prompt_min + 1);
  c.output_min = pick(s.output);
  c.output_max = c.output_min + *rc::gen::inRange(0, s.output.hi - c.output_min + 1);
  const bool free_len = is_free(c, serving::FreeAxis::max_model_len);
  // A free limit rises with the prompts; a deployment's stays (limits_around kept them below it).
  if (free_len) c.max_model_len = std::max(kModelsOwnMaxLen, c.prompt_max + c.k + 2);
  // A cap close to the longest request: some requests end at max_model_len.
  if (free_len && maybe(s.length_cap))
    c.max_model_len = std::max(8, c.prompt_max + c.k + 2 + *rc::gen::inRange(0, c.output_max + 1));
}

// Prompts of at most kChunksPerPrompt chunks of the case's token budget. A small budget is where
// the scheduler's choices bind (chunks, budget-starved prefills that change phase, preemptions in a
// step); prompts of hundreds of chunks there only make a case long: the engine steps, and with
// them a case's cost, grow with the prompt over the budget, times the ranks of a big topology.
constexpr int kChunksPerPrompt = 4;
Range prompts_for_budget(Range prompt, int budget) {
  prompt.hi = std::max(prompt.lo, std::min(prompt.hi, kChunksPerPrompt * budget));
  return prompt;
}

// A ladder from `least` doubling up to `most` (both on it): a free limit is drawn from it, so that
// small limits, where the scheduler's choices bind, are as likely as the deployment's own.
std::vector<int> ladder(int least, int most) {
  std::vector<int> rungs;
  for (int v = least; v < most; v *= 2) rungs.push_back(v);
  rungs.push_back(most);
  return rungs;
}

// The scheduler's limits the deployment leaves at vLLM's defaults, drawn up to them: request slots
// in whole shares of the replicas, a token budget that holds a verification block (and, without
// chunked prefill, the longest prompt).
void draw_free_limits(ServingCase& c) {
  const ServingCase centre = c;
  if (is_free(centre, serving::FreeAxis::max_num_seqs))
    c.max_num_seqs = c.dp * *rc::gen::elementOf(ladder(1, std::max(1, centre.max_num_seqs / c.dp)));
  const int least = std::max(c.k + 1, c.chunked_prefill ? 1 : c.prompt_max);
  if (is_free(centre, serving::FreeAxis::max_num_batched_tokens) && least < centre.max_num_batched_tokens)
    c.max_num_batched_tokens = *rc::gen::elementOf(ladder(least, centre.max_num_batched_tokens));
}

// How the requests behave: sampling, arrivals, aborts, a stop token, shared system prompts, and
// under the priority policy the requests' priority levels (drawn last: an FCFS case draws as it did).
void draw_behaviour(ServingCase& c, const Space& s) {
  c.temperature = *rc::gen::elementOf(s.temperature);
  c.greedy_every = c.temperature > 0 && maybe(true) ? *rc::gen::inRange(2, 6) : 0;
  c.workload_seed = *rc::gen::inRange<uint64_t>(1, 1000);
  c.poisson = maybe(s.poisson);
  if (c.poisson) c.mean_gap_us = *rc::gen::inRange(10, 500);
  c.abort_every = 0;
  if (maybe(s.aborts)) {
    c.abort_every = *rc::gen::inRange(1, 6);
    c.abort_after = *rc::gen::inRange(1, c.output_max + 1);
    c.abort_in_flight = maybe(true);
  }
  c.abort_while_loading = maybe(c.disaggregated && c.abort_every > 0);
  c.stop_token = maybe(s.stop_token) ? *rc::gen::inRange(0, c.vocab > 0 ? c.vocab : engine::ModelConfig{}.vocab) : -1;
  c.shared_prefix = 0, c.prefix_groups = 1;
  if (c.enable_prefix_caching) {
    c.shared_prefix = *rc::gen::inRange(0, c.prompt_max + 1);
    c.prefix_groups = *rc::gen::inRange(1, 4);
  }
  if (c.scheduling_policy == engine::SchedulingPolicy::priority) c.priority_levels = *rc::gen::inRange(1, 5);
  if (maybe(s.stop_strings)) {  // last: spaces without it draw what they always drew
    c.stop_strings.clear();
    pick_stop_strings(c);
  }
}

// A KV cache between one request at its longest and what the workload can fill (the scheduler
// preempts), or enough. Without chunked prefill a resumed request is one prefill of its prompt and
// output, which must fit the deployment's budget. A disaggregated deployment keeps enough (the
// loader refuses a cache that preempts there).
void draw_kv_cache(ServingCase& c, const Space& s) {
  c.num_blocks = 0;
  if (c.disaggregated) return;
  const auto [least, enough] = scenario::kv_bounds(c);
  const bool resumable = c.chunked_prefill || c.prompt_max + c.output_max <= c.max_num_batched_tokens;
  if (least < enough && resumable && maybe(s.preemption))
    c.num_blocks = *rc::gen::inRange(least, std::min(enough, least + 8));
}

void add_faults(ServingCase& c, const std::vector<std::string>& faults) {
  for (const std::string& f : faults)
    if (std::find(c.faults.begin(), c.faults.end(), f) == c.faults.end()) c.faults.push_back(f);
}

}  // namespace

rc::Gen<ServingCase> gen_around(const Space& space, const std::vector<std::string>& faults) {
  PPSPEC_ASSERT(space.around.has_value(), "gen_around of a space with no centre");
  return rc::gen::exec([space, faults] {
    ServingCase c = *space.around;
    if (c.chunked_prefill) {
      draw_free_limits(c);
      draw_lengths(c, space, prompts_for_budget(space.prompt, c.max_num_batched_tokens));
    } else {
      draw_lengths(c, space, space.prompt);
      draw_free_limits(c);  // a budget that holds the longest prompt whole
    }
    draw_behaviour(c, space);
    draw_kv_cache(c, space);
    add_faults(c, faults);
    c.seed = *rc::gen::inRange<uint64_t>(1, 1u << 20);
    c.pct_depth = pick(space.pct_depth);
    c.jitter = space.jitter.size() > 1 ? *rc::gen::elementOf(space.jitter) : space.jitter.front();
    return c;
  });
}

}  // namespace ppspec::fuzzer
