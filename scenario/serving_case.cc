#include "scenario/serving_case.h"

#include <algorithm>
#include <numeric>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/event.h"
#include "core/world_config.h"
#include "engine/scheduler.h"

namespace ppspec::scenario {

std::string ServingCase::strategy() const { return pct_depth == 0 ? "random" : fmt::format("pct:{}", pct_depth); }

namespace {

void append_engine(std::string& s, const ServingCase& c) {
  s += "\n[topology]\n";
  if (c.dp > 1) s += fmt::format("dp = {}\n", c.dp);  // dp = 1 cases keep the text they always had
  s += fmt::format("pp = {}\ntp = {}\n", c.pp, c.tp);
  if (c.disaggregated)
    s += fmt::format("\n[disaggregation]\nprefill_pp = {}\nprefill_tp = {}\n", c.prefill_pp, c.prefill_tp);
  s += "\n[model]\n";
  if (c.vocab > 0) s += fmt::format("vocab = {}\n", c.vocab);
  s += fmt::format("stop_token = {}\nmax_model_len = {}\n", c.stop_token, c.max_model_len);
  if (c.layers > 0) s += fmt::format("layers = {}\n", c.layers);
  if (c.lanes > 0) s += fmt::format("lanes = {}\n", c.lanes);
  if (c.num_blocks > 0) s += fmt::format("num_blocks = {}\n", c.num_blocks);
  if (c.block_size != 16) s += fmt::format("block_size = {}\n", c.block_size);
  if (!c.recurrent_layers.empty()) s += fmt::format("recurrent_layers = [{}]\n", fmt::join(c.recurrent_layers, ", "));
  if (c.triton_mla) s += "attention = \"triton_mla\"\n";
  s += fmt::format("\n[spec]\nk = {}\nfeedback = \"{}\"\n", c.k, c.feedback);
  if (c.adaptive_budget) s += "adaptive_budget = true\n";
  if (c.eagle) s += "method = \"eagle\"\n";
  if (c.eagle && !c.taps.empty())
    s += fmt::format("taps = [{}]\n", fmt::join(c.taps, ", "));  // none: EAGLE-3's default
  s += fmt::format(
      "\n[serving]\ncapture_sizes = [{}]\nmax_num_seqs = {}\nmax_num_batched_tokens = {}\n"
      "chunked_prefill = {}\nwarmup_steps = {}\n",
      fmt::join(c.capture_sizes, ", "), c.max_num_seqs, c.max_num_batched_tokens, c.chunked_prefill, c.warmup_steps);
  if (c.max_concurrent_batches > 0) s += fmt::format("max_concurrent_batches = {}\n", c.max_concurrent_batches);
  if (c.enable_prefix_caching) s += "enable_prefix_caching = true\n";
  if (c.scheduling_policy == engine::SchedulingPolicy::priority) s += "scheduling_policy = \"priority\"\n";
  if (c.pin_memory) s += "pin_memory = true\n";
  s += fmt::format(
      "\n[workload]\nnum_requests = {}\nprompt_min = {}\nprompt_max = {}\noutput_min = {}\noutput_max = {}\n"
      "arrival = \"{}\"\nmean_gap_us = {}\ntemperature = {}\nseed = {}\nabort_every = {}\nabort_after = {}\n"
      "abort_in_flight = {}\n",
      c.num_requests, c.prompt_min, c.prompt_max, c.output_min, c.output_max, c.poisson ? "poisson" : "burst",
      c.mean_gap_us, c.temperature, c.workload_seed, c.abort_every, c.abort_after, c.abort_in_flight);
  if (c.abort_while_loading) s += "abort_while_loading = true\n";
  if (c.shared_prefix > 0)
    s += fmt::format("shared_prefix = {}\nprefix_groups = {}\n", c.shared_prefix, c.prefix_groups);
  if (c.greedy_every > 0) s += fmt::format("greedy_every = {}\n", c.greedy_every);
  if (c.priority_levels > 1) s += fmt::format("priority_levels = {}\n", c.priority_levels);
  if (!c.stop_strings.empty())
    s += fmt::format("stop_strings = [\"{}\"]\ninclude_stop_str_in_output = {}\n", fmt::join(c.stop_strings, "\", \""),
                     c.include_stop_str);
  // Strict: a hazard (a module load while serving, a device sync behind a spinning receive) is a
  // failure too; on GPUs it stalls or hangs.
  s += fmt::format("\n[runtime]\nmodule_loading = \"{}\"\nstrict = {}\n", core::to_string(c.module_loading), c.strict);
  if (c.jitter != core::WorldConfig{}.jitter) s += fmt::format("jitter = {}\n", c.jitter);
  if (!c.faults.empty()) {
    s += "\n[faults]\n";
    for (const std::string& f : c.faults) s += f + " = true\n";
  }
}

}  // namespace

std::string to_toml(const ServingCase& c, const std::string& name, const std::string& description,
                    const Expectation& expect) {
  std::string quoted_name;
  core::append_json_string(quoted_name, name);  // JSON string escapes are valid TOML: a file's stem may hold a quote
  std::string s =
      fmt::format("kind = \"serving\"\nname = {}\ndescription = \"\"\"\n{}\"\"\"\n", quoted_name, description);
  append_engine(s, c);
  s += fmt::format("\n[explore]\nseed = {}\nseeds = 1\nstrategy = \"{}\"\n", c.seed, c.strategy());
  if (!c.free.empty()) {
    std::vector<serving::FreeAxis> axes = c.free;
    std::sort(axes.begin(), axes.end());  // as the loader keeps them
    std::vector<std::string_view> names;
    for (serving::FreeAxis a : axes) names.push_back(serving::to_string(a));
    s += fmt::format("free = [\"{}\"]\n", fmt::join(names, "\", \""));
  }
  s += fmt::format("\n[expect]\nverdict = \"{}\"\n", core::to_string(expect.verdict));
  if (!expect.kind.empty()) s += fmt::format("kind = \"{}\"\n", expect.kind);
  return s;
}

KvBounds kv_bounds(const ServingCase& c) {
  engine::EngineConfig e;
  e.topology.pp = c.pp;
  e.topology.dp = c.dp;
  e.serving.max_concurrent_batches = c.max_concurrent_batches;
  e.model.block_size = c.block_size;
  e.spec.k = c.k;
  e.serving.max_num_seqs = c.max_num_seqs;
  e.workload.prompt_max = c.prompt_max;
  e.workload.output_max = c.output_max;
  return KvBounds{engine::blocks_minimum(e), engine::blocks_needed(e)};
}

void size_model_to_topology(ServingCase& c) {
  const engine::ModelConfig model;
  const int pp = c.disaggregated ? std::max(c.pp, c.prefill_pp) : c.pp;
  const int tp = c.disaggregated ? std::lcm(c.tp, c.prefill_tp) : c.tp;
  if (pp > model.layers) c.layers = pp;
  if (model.lanes % tp != 0) c.lanes = std::lcm(model.lanes, tp);
}

std::string summary(const ServingCase& c) {
  std::string s = fmt::format("{}pp{} tp{} K{} {} req {} prompt {}-{} out {}-{} seqs {} budget {}",
                              c.dp > 1 ? fmt::format("dp{} ", c.dp) : "", c.pp, c.tp, c.k,
                              c.feedback == "single-payload" ? "single" : "3msg", c.num_requests, c.prompt_min,
                              c.prompt_max, c.output_min, c.output_max, c.max_num_seqs, c.max_num_batched_tokens);
  if (c.disaggregated) s += fmt::format(" prefill pp{} tp{}", c.prefill_pp, c.prefill_tp);
  if (!c.capture_sizes.empty()) s += fmt::format(" graphs [{}]", fmt::join(c.capture_sizes, ","));
  if (c.temperature > 0) s += fmt::format(" T {}", c.temperature);
  if (c.greedy_every > 0) s += fmt::format(" greedy 1/{}", c.greedy_every);
  if (c.abort_every > 0)
    s += fmt::format(" abort 1/{} {}{}", c.abort_every,
                     c.abort_while_loading ? "while loading" : fmt::format("after {}", c.abort_after),
                     c.abort_in_flight ? " in flight" : "");
  if (c.stop_token >= 0) s += fmt::format(" stop-token {}", c.stop_token);
  if (!c.stop_strings.empty())
    s += fmt::format(" stop-strings [{}]{}", fmt::join(c.stop_strings, ","), c.include_stop_str ? " included" : "");
  if (c.vocab > 0) s += fmt::format(" vocab {}", c.vocab);
  if (c.max_model_len < 2048) s += fmt::format(" max_len {}", c.max_model_len);
  if (c.num_blocks > 0) s += fmt::format(" blocks {}", c.num_blocks);
  if (c.block_size != 16) s += fmt::format(" block_size {}", c.block_size);
  if (c.enable_prefix_caching) s += " prefix-caching";
  if (c.pin_memory) s += " pinned-inputs";
  if (c.adaptive_budget) s += " adaptive-budget";
  if (c.eagle)
    s += c.taps.empty() ? std::string(" eagle taps default") : fmt::format(" eagle taps [{}]", fmt::join(c.taps, ","));
  if (!c.recurrent_layers.empty()) s += fmt::format(" recurrent [{}]", fmt::join(c.recurrent_layers, ","));
  if (c.triton_mla) s += " triton-mla";
  if (c.shared_prefix > 0) s += fmt::format(" shared {}x{}", c.prefix_groups, c.shared_prefix);
  if (!c.chunked_prefill) s += " no-chunking";
  if (c.scheduling_policy == engine::SchedulingPolicy::priority) s += fmt::format(" priority x{}", c.priority_levels);
  if (c.max_concurrent_batches > 0) s += fmt::format(" batches {}", c.max_concurrent_batches);
  if (c.poisson) s += fmt::format(" poisson {} us", c.mean_gap_us);
  if (c.module_loading != core::ModuleLoading::eager) s += fmt::format(" {}", core::to_string(c.module_loading));
  if (c.jitter != core::WorldConfig{}.jitter) s += fmt::format(" jitter {}", c.jitter);
  return s + fmt::format(" seed {} {}", c.seed, c.strategy());
}

}  // namespace ppspec::scenario
