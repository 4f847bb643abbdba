#include "scenario/serving_loader.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <utility>

#include "core/printable.h"
#include "engine/detokenizer.h"
#include "engine/scheduler.h"
#include "engine/stop_strings.h"
#include "scenario/program_loader.h"
#include "scenario/toml_reader.h"

namespace ppspec::scenario {
namespace {

constexpr std::string_view kServingTopKeys =
    "kind, name, description, topology, disaggregation, model, spec, serving, workload, runtime, faults, oracles, "
    "explore, expect";
constexpr std::string_view kTopologyKeys = "dp, pp, tp";
constexpr std::string_view kDisaggregationKeys = "prefill_pp, prefill_tp";
constexpr std::string_view kModelKeys =
    "vocab, layers, lanes, block_size, num_blocks, alpha, stop_token, max_model_len, checkpoint_seed, experts, topk, "
    "recurrent_layers, attention";
constexpr std::string_view kSpecKeys = "k, feedback, adaptive_budget, method, taps";
constexpr std::string_view kServingKeys =
    "capture_sizes, max_num_seqs, max_num_batched_tokens, chunked_prefill, warmup_steps, max_concurrent_batches, "
    "enable_prefix_caching, scheduling_policy, pin_memory";
constexpr std::string_view kWorkloadKeys =
    "num_requests, prompt_min, prompt_max, output_min, output_max, arrival, mean_gap_us, temperature, greedy_every, "
    "seed, "
    "abort_every, abort_after, abort_in_flight, abort_while_loading, shared_prefix, prefix_groups, priority_levels, "
    "stop_strings, include_stop_str_in_output";
constexpr std::string_view kOraclesKeys = "golden, pp_invariance, padding_invariance";
constexpr std::string_view kExploreKeys = "seed, seeds, strategy, free";

int to_int(int64_t v) { return static_cast<int>(v); }

// Reads the scenario's table `key`, if it has one, into `part`. Unknown keys are refused before
// reading, so that a misspelt key is reported before the value it was meant to give.
template <typename Part>
void read_section(TableReader& top, std::string_view key, std::string_view known, Part& part,
                  void (*read)(TableReader&, Part&)) {
  if (const toml::table* t = top.table(key)) {
    TableReader r(*t, top.file(), fmt::format("[{}]", key));
    r.only(known);
    read(r, part);
    r.finish(known);
  }
}

// A key that names one of two values. Unlike TableReader::choice, the message quotes the value as
// written (no core::printable): what these two keys have always said.
template <typename E>
void read_one_of_two(TableReader& r, std::string_view key, E& field, std::pair<std::string_view, E> first,
                     std::pair<std::string_view, E> second) {
  if (auto name = r.string(key)) {
    if (*name == first.first)
      field = first.second;
    else if (*name == second.first)
      field = second.second;
    else
      r.fail(key, fmt::format("'{}' is not one of: {}, {}", *name, first.first, second.first));
  }
}

void read_topology_table(TableReader& r, engine::Topology& t) {
  t.dp = to_int(r.integer("dp", 1, 16).value_or(1));
  t.pp = to_int(r.integer("pp", 1, 64).value_or(1));
  t.tp = to_int(r.integer("tp", 1, 64).value_or(1));
}

// [disaggregation]: its presence makes the scenario's topology the decode instance's.
void read_disaggregation_table(TableReader& r, engine::Disaggregation& d) {
  d.enabled = true;
  d.prefill.pp = to_int(r.integer("prefill_pp", 1, 64).value_or(1));
  d.prefill.tp = to_int(r.integer("prefill_tp", 1, 64).value_or(1));
}

// `recurrent_layers = [i, ...]`: distinct layer indices of the model, 0 to layers - 1 (kept sorted).
void read_recurrent_layers(TableReader& r, engine::ModelConfig& m) {
  const toml::array* list = r.array("recurrent_layers");
  if (list == nullptr) return;
  for (const auto& n : *list) {
    const int64_t l = n.is_integer() ? n.as_integer()->get() : -1;
    if (!n.is_integer() || l < 0 || l >= m.layers)
      throw core::InputError(
          r.file(), line_of(n),
          fmt::format("[model] 'recurrent_layers': expected layer indices of the model's {} layers, valid 0 to {}",
                      m.layers, m.layers - 1));
    if (m.is_recurrent(static_cast<int>(l)))
      throw core::InputError(r.file(), line_of(n),
                             fmt::format("[model] 'recurrent_layers': layer {} is listed twice", l));
    m.recurrent_layers.push_back(static_cast<int>(l));
  }
  std::sort(m.recurrent_layers.begin(), m.recurrent_layers.end());
}

void read_model_table(TableReader& r, engine::ModelConfig& m) {
  m.vocab = to_int(r.integer("vocab", 8, 1 << 16).value_or(m.vocab));
  m.layers = to_int(r.integer("layers", 1, 256).value_or(m.layers));
  m.lanes = to_int(r.integer("lanes", 1, 1024).value_or(m.lanes));
  m.block_size = to_int(r.integer("block_size", 1, 1024).value_or(m.block_size));
  m.num_blocks = to_int(r.integer("num_blocks", 0, 1 << 24).value_or(0));  // 0: enough
  m.alpha = r.number("alpha", 0, 1).value_or(m.alpha);
  m.stop_token = r.integer("stop_token", -1, 1 << 16).value_or(m.stop_token);
  m.max_model_len = to_int(r.integer("max_model_len", 8, 1 << 20).value_or(m.max_model_len));
  m.checkpoint_seed = static_cast<uint64_t>(r.integer("checkpoint_seed", 0, INT64_MAX).value_or(1));
  m.experts = to_int(r.integer("experts", 1, 64).value_or(m.experts));
  m.topk = to_int(r.integer("topk", 1, 64).value_or(m.topk));
  if (m.topk > m.experts) r.fail("topk", fmt::format("{} exceeds the {} experts", m.topk, m.experts));
  if (m.stop_token >= m.vocab)
    r.fail("stop_token", fmt::format("{} is not a token of the vocabulary ({})", m.stop_token, m.vocab));
  read_recurrent_layers(r, m);
  read_one_of_two(r, "attention", m.attention, {"varlen", engine::AttentionBackend::varlen},
                  {"triton_mla", engine::AttentionBackend::triton_mla});
}

void read_spec_table(TableReader& r, engine::SpecConfig& spec) {
  spec.k = to_int(r.integer("k", 0, 16).value_or(0));
  read_one_of_two(r, "feedback", spec.feedback, {"three-message", engine::Feedback::three_message},
                  {"single-payload", engine::Feedback::single_payload});
  spec.adaptive_budget = r.boolean("adaptive_budget").value_or(false);
  read_one_of_two(r, "method", spec.method, {"dspark", engine::DraftMethod::dspark},
                  {"eagle", engine::DraftMethod::eagle});
  const toml::array* taps = r.array("taps");
  if (taps == nullptr) return;
  for (const auto& n : *taps) {
    const int64_t l = n.is_integer() ? n.as_integer()->get() : -1;
    if (!n.is_integer() || l < 0 || l > 255)
      throw core::InputError(r.file(), line_of(n), "[spec] 'taps': expected target layer indices (0 to layers - 1)");
    if (std::find(spec.taps.begin(), spec.taps.end(), l) != spec.taps.end())
      throw core::InputError(r.file(), line_of(n), fmt::format("[spec] 'taps': layer {} is listed twice", l));
    spec.taps.push_back(static_cast<int>(l));
  }
  if (spec.taps.empty() || spec.taps.size() > static_cast<size_t>(engine::kMaxTaps))
    r.fail("taps", fmt::format("{} tapped layers; valid: 1 to {} (or no key: EAGLE-3's default)", spec.taps.size(),
                               engine::kMaxTaps));
  std::sort(spec.taps.begin(), spec.taps.end());
}

void read_serving_table(TableReader& r, engine::ServingConfig& v) {
  v.max_num_seqs = to_int(r.integer("max_num_seqs", 1, 4096).value_or(v.max_num_seqs));
  v.max_num_batched_tokens = to_int(r.integer("max_num_batched_tokens", 1, 1 << 20).value_or(v.max_num_batched_tokens));
  v.chunked_prefill = r.boolean("chunked_prefill").value_or(v.chunked_prefill);
  v.warmup_steps = to_int(r.integer("warmup_steps", 1, 64).value_or(v.warmup_steps));
  v.max_concurrent_batches = to_int(r.integer("max_concurrent_batches", 0, 65).value_or(0));  // 0: pp
  v.enable_prefix_caching = r.boolean("enable_prefix_caching").value_or(false);
  v.pin_memory = r.boolean("pin_memory").value_or(false);
  read_one_of_two(r, "scheduling_policy", v.scheduling_policy, {"fcfs", engine::SchedulingPolicy::fcfs},
                  {"priority", engine::SchedulingPolicy::priority});
  if (const toml::array* sizes = r.array("capture_sizes")) {
    for (const auto& n : *sizes) {
      if (!n.is_integer() || n.as_integer()->get() < 1 || n.as_integer()->get() > (1 << 20))
        throw core::InputError(r.file(), line_of(n), "[serving] 'capture_sizes': expected positive integers");
      const int size = to_int(n.as_integer()->get());
      if (!v.capture_sizes.empty() && size <= v.capture_sizes.back())
        throw core::InputError(r.file(), line_of(n),
                               fmt::format("[serving] 'capture_sizes': must be sorted and unique ({} after {})", size,
                                           v.capture_sizes.back()));
      v.capture_sizes.push_back(size);
    }
  }
}

// `stop_strings = ["ab", "dca"]`: vLLM's SamplingParams.stop, over the model's text
// (engine/detokenizer.h), whose letters a stop string must be made of to ever match.
void read_stop_strings(TableReader& r, engine::WorkloadConfig& w) {
  w.include_stop_str_in_output = r.boolean("include_stop_str_in_output").value_or(false);
  const toml::array* list = r.array("stop_strings");
  if (list == nullptr) return;
  for (const toml::node& n : *list) {
    const auto s = n.value<std::string>();
    if (!s || s->empty() || s->size() > static_cast<size_t>(engine::kMaxStopStringLength))
      throw core::InputError(
          r.file(), line_of(n),
          fmt::format("[workload] 'stop_strings': expected strings of 1 to {} letters", engine::kMaxStopStringLength));
    if (s->find_first_not_of(engine::kTextAlphabet) != std::string::npos)
      throw core::InputError(
          r.file(), line_of(n),
          fmt::format("[workload] 'stop_strings': {} can never match: the model's text is made of the letters "
                      "'{}' only",
                      core::printable(*s), engine::kTextAlphabet));
    if (std::find(w.stop_strings.begin(), w.stop_strings.end(), *s) != w.stop_strings.end())
      throw core::InputError(r.file(), line_of(n),
                             fmt::format("[workload] 'stop_strings': {} is listed twice", core::printable(*s)));
    if (w.stop_strings.size() == static_cast<size_t>(engine::kMaxStopStrings))
      throw core::InputError(
          r.file(), line_of(n),
          fmt::format("[workload] 'stop_strings': at most {} stop strings", engine::kMaxStopStrings));
    w.stop_strings.push_back(*s);
  }
}

void read_workload_table(TableReader& r, engine::WorkloadConfig& w) {
  w.num_requests = to_int(r.integer("num_requests", 1, 1 << 20).value_or(w.num_requests));
  w.prompt_min = to_int(r.integer("prompt_min", 1, 1 << 16).value_or(w.prompt_min));
  w.prompt_max = to_int(r.integer("prompt_max", 1, 1 << 16).value_or(w.prompt_max));
  w.output_min = to_int(r.integer("output_min", 1, 1 << 16).value_or(w.output_min));
  w.output_max = to_int(r.integer("output_max", 1, 1 << 16).value_or(w.output_max));
  if (w.prompt_min > w.prompt_max)
    r.fail("prompt_min", fmt::format("{} exceeds prompt_max {}", w.prompt_min, w.prompt_max));
  if (w.output_min > w.output_max)
    r.fail("output_min", fmt::format("{} exceeds output_max {}", w.output_min, w.output_max));
  read_one_of_two(r, "arrival", w.arrival, {"burst", engine::Arrival::burst}, {"poisson", engine::Arrival::poisson});
  w.mean_gap_us = r.number("mean_gap_us", 0, 1e9).value_or(w.mean_gap_us);
  w.temperature = r.number("temperature", 0, 16).value_or(w.temperature);
  w.greedy_every = to_int(r.integer("greedy_every", 0, 1 << 20).value_or(0));
  w.seed = static_cast<uint64_t>(r.integer("seed", 0, INT64_MAX).value_or(1));
  w.abort_every = to_int(r.integer("abort_every", 0, 1 << 20).value_or(0));
  w.abort_after = to_int(r.integer("abort_after", 1, 1 << 20).value_or(w.abort_after));
  w.abort_in_flight = r.boolean("abort_in_flight").value_or(false);
  w.abort_while_loading = r.boolean("abort_while_loading").value_or(false);
  if (w.abort_while_loading && w.abort_every == 0)
    r.fail("abort_while_loading", "aborts while the KV loads need aborted requests: set abort_every");
  w.shared_prefix = to_int(r.integer("shared_prefix", 0, 1 << 16).value_or(0));
  w.prefix_groups = to_int(r.integer("prefix_groups", 1, 1 << 16).value_or(1));
  w.priority_levels = to_int(r.integer("priority_levels", 1, 1 << 16).value_or(1));
  read_stop_strings(r, w);
  if (w.shared_prefix > w.prompt_max)
    r.fail("shared_prefix", fmt::format("{} tokens are longer than the longest prompt; valid: 0 to prompt_max = {}",
                                        w.shared_prefix, w.prompt_max));
}

// The one list of faults (engine/faults.h) says which keys there are.
void read_faults_table(TableReader& r, engine::Faults& f) {
  for (const engine::FaultSwitch& fault : engine::kFaultSwitches)
    f.*fault.field = r.boolean(fault.name).value_or(false);
}

void read_oracles_table(TableReader& r, serving::Oracles& o) {
  o.golden = r.boolean("golden").value_or(true);
  o.pp_invariance = r.boolean("pp_invariance").value_or(true);
  o.padding_invariance = r.boolean("padding_invariance").value_or(true);
}

void read_serving_explore_table(TableReader& r, serving::ServingScenario& s) {
  read_explore(r, s.seed, s.seeds, s.strategy);
  // `free = ["max_num_seqs", ...]`: the deployment's knobs a space around it may draw.
  if (const toml::array* list = r.array("free")) {
    for (const toml::node& n : *list) {
      const auto name = n.value<std::string>();
      const auto axis = name ? serving::parse_free_axis(*name) : std::nullopt;
      if (!axis)
        throw core::InputError(r.file(), line_of(n),
                               fmt::format("[explore] 'free': expected names of: {}", serving::kFreeAxisNames));
      if (std::find(s.free.begin(), s.free.end(), *axis) != s.free.end())
        throw core::InputError(r.file(), line_of(n), fmt::format("[explore] 'free': '{}' is listed twice", *name));
      s.free.push_back(*axis);
    }
    std::sort(s.free.begin(), s.free.end());
  }
}

// The line of `key` in the scenario's table `where` (the table's own line without the key): the
// line of what decides a whole-scenario check.
int serving_line_of_key(TableReader& top, std::string_view where, std::string_view key) {
  if (const toml::table* t = top.table(where)) {
    if (const toml::node* n = t->get(key)) return line_of(*n);
    return line_of(*t);
  }
  return 1;
}

[[noreturn]] void fail_serving_check(TableReader& top, std::string_view where, std::string_view key,
                                     const std::string& msg) {
  throw core::InputError(top.file(), serving_line_of_key(top, where, key), fmt::format("[{}] {}", where, msg));
}

// An adaptive budget picks 1..K drafts per request per step; the engine core schedules a request's
// next step from the budget its previous step returned, so it never schedules a step ahead.
void check_adaptive_budget(TableReader& top, const engine::EngineConfig& c) {
  if (!c.spec.adaptive_budget) return;
  if (c.spec.k < 2)
    fail_serving_check(
        top, "spec", "adaptive_budget",
        fmt::format("an adaptive budget picks 1 to K drafts per step, and K = {} leaves no choice: valid with k >= 2",
                    c.spec.k));
  if (c.schedules_ahead())
    fail_serving_check(
        top, "spec", "adaptive_budget",
        fmt::format("an adaptive budget sizes a request's next step from the budget its previous step returned, "
                    "which a step scheduled ahead (max_concurrent_batches = {}) has not: valid with "
                    "max_concurrent_batches = {} (pp)",
                    c.batches_in_flight(), c.topology.pp));
}

// The EAGLE drafter drafts K tokens from tapped target layers: it needs K, layers that exist, and
// a fixed K (vLLM's adaptive verification is the DSpark proposer's).
void check_draft_method(TableReader& top, const engine::EngineConfig& c) {
  const engine::SpecConfig& spec = c.spec;
  if (spec.method != engine::DraftMethod::eagle) {
    if (!spec.taps.empty())
      fail_serving_check(top, "spec", "taps",
                         "taps are the EAGLE drafter's: valid with method = \"eagle\" (the DSpark drafter reads "
                         "the target's context lane)");
    return;
  }
  if (spec.k == 0) fail_serving_check(top, "spec", "method", "method = \"eagle\" drafts K tokens: valid with k >= 1");
  if (spec.adaptive_budget)
    fail_serving_check(
        top, "spec", "adaptive_budget",
        "an adaptive budget is the DSpark drafter's (vLLM adaptive verification): valid with method = \"dspark\"");
  for (int l : spec.taps)
    if (l >= c.model.layers)
      fail_serving_check(top, "spec", "taps",
                         fmt::format("tapped layer {} does not exist: the model has {} layers, valid 0 to {}", l,
                                     c.model.layers, c.model.layers - 1));
}

// Data parallelism splits the request slots evenly over the replicas; each replica's drafter pads
// its forwards to the DP group's largest, which a budget decided per replica would not agree on.
void check_data_parallel(TableReader& top, const engine::EngineConfig& c) {
  const int dp = c.topology.dp;
  if (dp == 1) return;
  if (c.serving.max_num_seqs % dp != 0)
    fail_serving_check(
        top, "topology", "dp",
        fmt::format("dp = {} does not divide max_num_seqs = {}: each replica serves an equal share of the "
                    "request slots; valid: a dp that divides {}",
                    dp, c.serving.max_num_seqs, c.serving.max_num_seqs));
  if (c.spec.adaptive_budget)
    fail_serving_check(
        top, "spec", "adaptive_budget",
        fmt::format("an adaptive budget with dp = {}: each replica would decide its own, and the drafter "
                    "forwards the replicas share need one (not modelled); valid with dp = 1",
                    dp));
}

// Whole-scenario checks, across tables: each names the line of the key that decides it.
// The workload against the model's length, the KV pool and the token budget.
void check_budgets(TableReader& top, const engine::EngineConfig& c) {
  const engine::ModelConfig& m = c.model;
  const int k = c.spec.k;
  const engine::WorkloadConfig& w = c.workload;
  // A request whose output would pass max_model_len ends at the cap (the engine core finishes it
  // when its next verification block no longer fits); its prompt must leave room for one.
  if (w.prompt_max + k + 1 >= m.max_model_len)
    fail_serving_check(
        top, "workload", "prompt_max",
        fmt::format("prompts of {} tokens (+{} for a verification block) leave no room below max_model_len {}",
                    w.prompt_max, k + 1, m.max_model_len));
  // Fewer blocks than the workload can fill make the scheduler preempt; fewer than one request
  // at its longest would preempt that request for ever.
  if (m.num_blocks > 0 && engine::blocks_minimum(c) > m.num_blocks)
    fail_serving_check(
        top, "model", "num_blocks",
        fmt::format(
            "{} KV blocks cannot hold one request at its longest: {} blocks of {} tokens for a {}-token prompt, "
            "{} output tokens, the last verification block and the drafter's {} lookahead slots, + the null "
            "block; valid: {} or more (from {} on no request is ever preempted), or 0 for enough",
            m.num_blocks, c.max_blocks_per_req(), m.block_size, w.prompt_max, w.output_max, k,
            engine::blocks_minimum(c), engine::blocks_needed(c)));
  // vLLM asks max_num_batched_tokens >= max_model_len without chunked prefill: a preempted request
  // resumes as one prefill of its prompt and its output so far.
  if (!c.serving.chunked_prefill && c.may_preempt() && c.max_prefill() > c.serving.max_num_batched_tokens)
    fail_serving_check(
        top, "serving", "max_num_batched_tokens",
        fmt::format("without chunked prefill a preempted request resumes as one prefill of up to {} tokens (prompt "
                    "and output), which never fits a {}-token budget: valid {} or more, or more KV blocks",
                    c.max_prefill(), c.serving.max_num_batched_tokens, c.max_prefill()));
  if (!c.serving.chunked_prefill && w.prompt_max > c.serving.max_num_batched_tokens)
    fail_serving_check(top, "serving", "max_num_batched_tokens",
                       fmt::format("without chunked prefill a {}-token prompt never fits a {}-token budget",
                                   w.prompt_max, c.serving.max_num_batched_tokens));
  if (k + 1 > c.serving.max_num_batched_tokens)
    fail_serving_check(top, "serving", "max_num_batched_tokens",
                       fmt::format("a budget of {} tokens cannot hold one verification block of K+1 = {}",
                                   c.serving.max_num_batched_tokens, k + 1));
}

// A disaggregated scenario: the prefill instance's shape, and what the KV transfer does not model.
void check_disaggregation(TableReader& top, const engine::EngineConfig& c) {
  if (c.workload.abort_while_loading && !c.disagg.enabled)
    fail_serving_check(top, "workload", "abort_while_loading",
                       "aborts while the KV loads need a KV transfer: add [disaggregation], or drop the key");
  if (!c.disagg.enabled) return;
  const engine::ModelConfig& m = c.model;
  const engine::Topology& p = c.disagg.prefill;
  if (p.pp > m.layers)
    fail_serving_check(top, "disaggregation", "prefill_pp",
                       fmt::format("prefill_pp = {} has more stages than the model has layers ({})", p.pp, m.layers));
  if (m.lanes % p.tp != 0)
    fail_serving_check(top, "disaggregation", "prefill_tp",
                       fmt::format("prefill_tp = {} does not divide the model's {} lanes", p.tp, m.lanes));
  if (c.runtime_ranks() > engine::kRanksMax)
    fail_serving_check(top, "disaggregation", "prefill_pp",
                       fmt::format("the decode instance's {} ranks and the prefill instance's {} make {}: the "
                                   "simulator runs at most {}",
                                   c.topology.ranks(), p.ranks(), c.runtime_ranks(), engine::kRanksMax));
  if (c.topology.dp > 1)
    fail_serving_check(top, "topology", "dp",
                       fmt::format("dp = {} with disaggregation: a decode instance of several data-parallel "
                                   "replicas is not modelled; valid: dp = 1",
                                   c.topology.dp));
  if (!m.recurrent_layers.empty())
    fail_serving_check(top, "model", "recurrent_layers",
                       "recurrent layers with disaggregation: the transfer of a recurrent state is not modelled; "
                       "valid: recurrent_layers = [], or no [disaggregation]");
  if (c.serving.enable_prefix_caching)
    fail_serving_check(top, "serving", "enable_prefix_caching",
                       "prefix caching with disaggregation: a decode instance's own hits beside the pulled blocks "
                       "are not modelled; valid: enable_prefix_caching = false, or no [disaggregation]");
  if (c.may_preempt())
    fail_serving_check(
        top, "model", "num_blocks",
        fmt::format("{} KV blocks with disaggregation: a cache small enough to preempt is not modelled there (a "
                    "request preempted for the blocks that pulled requests hold waits behind them); valid: {} or "
                    "more, or 0 for enough",
                    c.model.num_blocks, engine::blocks_needed(c)));
}

void check_serving_config(TableReader& top, const engine::EngineConfig& c) {
  const engine::ModelConfig& m = c.model;
  if (c.topology.ranks() > engine::kRanksMax)
    fail_serving_check(
        top, "topology",
        c.topology.tp > 1   ? "tp"
        : c.topology.pp > 1 ? "pp"
                            : "dp",
        fmt::format("dp x pp x tp = {} x {} x {} = {} ranks: the simulator runs at most {} (its happens-before "
                    "state grows with the ranks squared: 512 ranks take 15 s and 1.4 GB for one request)",
                    c.topology.dp, c.topology.pp, c.topology.tp, c.topology.ranks(), engine::kRanksMax));
  if (c.topology.pp > m.layers)
    fail_serving_check(top, "topology", "pp",
                       fmt::format("pp = {} has more stages than the model has layers ({})", c.topology.pp, m.layers));
  if (m.lanes % c.topology.tp != 0)
    fail_serving_check(top, "topology", "tp",
                       fmt::format("tp = {} does not divide the model's {} lanes", c.topology.tp, m.lanes));
  const int k = c.spec.k;
  for (int size : c.serving.capture_sizes)
    if (k > 0 && size % (k + 1) != 0)
      fail_serving_check(
          top, "serving", "capture_sizes",
          fmt::format("capture size {} is not a multiple of K+1 = {}: decode graphs replay whole verification blocks "
                      "(vLLM adjust_cudagraph_sizes_for_spec_decode)",
                      size, k + 1));
  // A prefix-cache hit reuses KV blocks, but a recurrent layer's state at the hit's end is in no
  // block: vLLM caches hybrid models only in a mode of its own (mamba_cache_mode "align"), which
  // ppspec does not model.
  if (c.serving.enable_prefix_caching && !m.recurrent_layers.empty())
    fail_serving_check(
        top, "serving", "enable_prefix_caching",
        fmt::format("prefix caching with recurrent layers ({}): a cached prefix holds no recurrent state (vLLM "
                    "needs a special cache mode for hybrid models, not modelled); valid: enable_prefix_caching = "
                    "false, or recurrent_layers = []",
                    fmt::join(m.recurrent_layers, ", ")));
  // vLLM refuses a request's priority unless the priority policy is on.
  if (c.workload.priority_levels > 1 && c.serving.scheduling_policy != engine::SchedulingPolicy::priority)
    fail_serving_check(top, "workload", "priority_levels",
                       fmt::format("{} priority levels under FCFS scheduling: vLLM refuses a request's priority "
                                   "unless scheduling_policy = \"priority\"; valid: priority_levels = 1, or "
                                   "[serving] scheduling_policy = \"priority\"",
                                   c.workload.priority_levels));
  const int batches = c.serving.max_concurrent_batches;
  if (batches != 0 && (batches < c.topology.pp || batches > c.topology.pp + 1))
    fail_serving_check(
        top, "serving", "max_concurrent_batches",
        fmt::format("{} batches in flight with pp = {}: valid {} (one per stage; 0 says the same) or {} (async "
                    "scheduling's lookahead batch, as vLLM allows)",
                    batches, c.topology.pp, c.topology.pp, c.topology.pp + 1));
  check_adaptive_budget(top, c);
  check_draft_method(top, c);
  check_data_parallel(top, c);
  check_disaggregation(top, c);
  check_budgets(top, c);
}

}  // namespace

serving::ServingScenario parse_serving(std::string_view text, const std::string& file) {
  return read_serving(parse_toml_text(text, file), file);
}

serving::ServingScenario read_serving(const toml::table& root, const std::string& file) {
  serving::ServingScenario s;
  s.file = file;
  engine::EngineConfig& c = s.config;
  TableReader top(root, file, "scenario");
  top.only(kServingTopKeys);
  if (scenario_kind(root, file) != core::ScenarioKind::serving)
    top.fail("kind", "expected \"serving\" (a program scenario is read by read_program)");
  (void)top.node("kind");
  s.name = top.string_or("name", std::filesystem::path(file).stem().string());
  s.description = top.string_or("description", "");
  // Table by table, in the order of kServingTopKeys: with two wrong tables, the first is reported.
  read_section(top, "topology", kTopologyKeys, c.topology, read_topology_table);
  read_section(top, "disaggregation", kDisaggregationKeys, c.disagg, read_disaggregation_table);
  read_section(top, "model", kModelKeys, c.model, read_model_table);
  read_section(top, "spec", kSpecKeys, c.spec, read_spec_table);
  read_section(top, "serving", kServingKeys, c.serving, read_serving_table);
  read_section(top, "workload", kWorkloadKeys, c.workload, read_workload_table);
  if (const toml::table* rt = top.table("runtime")) {
    TableReader r(*rt, file, "[runtime]");
    read_runtime(r, s.runtime, nullptr);
  }
  read_section(top, "faults", engine::fault_names(), c.faults, read_faults_table);
  read_section(top, "oracles", kOraclesKeys, s.oracles, read_oracles_table);
  read_section(top, "explore", kExploreKeys, s, read_serving_explore_table);
  s.expect = read_expect(top, file, core::ScenarioKind::serving);
  top.finish(kServingTopKeys);
  check_serving_config(top, c);
  return s;
}

}  // namespace ppspec::scenario
