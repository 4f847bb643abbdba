#include "scenario/fuzzer/space.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/file_bytes.h"
#include "scenario/fuzzer/around.h"
#include "scenario/program_loader.h"
#include "scenario/toml_reader.h"
#include "core/world_config.h"

namespace ppspec::fuzzer {

Space space_limits() {
  Space s;
  // Every topology the loader accepts, to 8 stages of 8 TP ranks (the model sized to it); a space
  // that asks for them runs cases of up to 256 ranks, seconds each.
  s.dp = {1, 4};
  s.pp = {1, 8};
  s.tp = {1, 8};
  s.k = {0, 16};
  s.requests = {1, 32};
  s.prompt = {1, 64};
  s.output = {1, 128};
  s.max_num_seqs = {1, 16};
  s.max_num_batched_tokens = {1, 512};
  s.warmup_steps = {1, 64};
  s.pct_depth = {0, 4};
  return s;
}

namespace {

void read_range(scenario::TableReader& r, const char* key, Range& out, Range limit) {
  const toml::node* n = r.node(key);
  if (n == nullptr) return;
  const toml::array* a = n->as_array();
  const auto lo = a != nullptr && a->size() == 2 ? (*a)[0].value<int64_t>() : std::nullopt;
  const auto hi = a != nullptr && a->size() == 2 ? (*a)[1].value<int64_t>() : std::nullopt;
  if (!lo || !hi) r.fail(key, fmt::format("expected [lo, hi], two integers in [{}, {}]", limit.lo, limit.hi));
  if (*lo > *hi) r.fail(key, fmt::format("an empty range: {} > {}", *lo, *hi));
  if (*lo < limit.lo || *hi > limit.hi)
    r.fail(key,
           fmt::format("[{}, {}] leaves [{}, {}], the range a fuzzing case supports", *lo, *hi, limit.lo, limit.hi));
  out = Range{static_cast<int>(*lo), static_cast<int>(*hi)};
}

void read_names(scenario::TableReader& r, const char* key, std::vector<std::string>& out,
                const std::vector<std::string>& allowed) {
  const toml::array* a = r.array(key);
  if (a == nullptr) return;
  std::vector<std::string> names;
  for (const toml::node& n : *a) {
    const auto s = n.value<std::string>();
    const bool ok = s && std::find(allowed.begin(), allowed.end(), *s) != allowed.end();
    if (!ok) r.fail(key, fmt::format("expected a list of: {}", fmt::join(allowed, ", ")));
    names.push_back(*s);
  }
  if (names.empty()) r.fail(key, "an empty list: nothing to draw from");
  out = names;
}

// A list of numbers to draw from, each in [lo, hi].
void read_numbers(scenario::TableReader& r, const char* key, std::vector<double>& out, double lo, double hi) {
  const toml::array* a = r.array(key);
  if (a == nullptr) return;
  std::vector<double> v;
  for (const toml::node& n : *a) {
    const auto x = n.value<double>();
    if (!x || *x < lo || *x > hi) r.fail(key, fmt::format("expected a list of numbers in [{}, {}]", lo, hi));
    v.push_back(*x);
  }
  if (v.empty()) r.fail(key, "an empty list: nothing to draw from");
  out = v;
}

}  // namespace

namespace {

constexpr const char* kSpaceKeys =
    "around, kinds, dp, pp, tp, k, requests, prompt, output, max_num_seqs, max_num_batched_tokens, warmup_steps, "
    "pct_depth, feedback, module_loading, temperature, jitter, graphs, chunked_prefill, aborts, stop_token, "
    "length_cap, poisson, preemption, lookahead, prefix_caching, adaptive_budget, recurrent, eagle, "
    "eagle_default_taps, priority, disaggregation, triton_mla, stop_strings, pin_memory";

// `around = "FILE"` (relative to the space file): the space around that serving scenario, whose
// deployment the space's own keys may not restate.
void read_centre(scenario::TableReader& r, const std::string& file, Space& s) {
  const auto around = r.string("around");
  if (!around) return;
  const std::filesystem::path centre = std::filesystem::path(file).parent_path() / *around;
  s = space_around(centre.string());
  for (const char* key : {"kinds",
                          "dp",
                          "pp",
                          "tp",
                          "k",
                          "max_num_seqs",
                          "max_num_batched_tokens",
                          "warmup_steps",
                          "feedback",
                          "module_loading",
                          "graphs",
                          "chunked_prefill",
                          "lookahead",
                          "prefix_caching",
                          "adaptive_budget",
                          "recurrent",
                          "eagle",
                          "eagle_default_taps",
                          "priority",
                          "disaggregation",
                          "triton_mla",
                          "pin_memory"})
    if (r.node(key) != nullptr)
      r.fail(key, fmt::format("the scenario at the centre ({}) fixes the deployment; a space around it draws only "
                              "requests, prompt, output, temperature, aborts, stop_token, stop_strings, length_cap, "
                              "poisson, preemption, pct_depth and jitter",
                              centre.string()));
}

void read_ranges(scenario::TableReader& r, Space& s, const Space& lim) {
  read_range(r, "dp", s.dp, lim.dp);
  read_range(r, "pp", s.pp, lim.pp);
  read_range(r, "tp", s.tp, lim.tp);
  read_range(r, "k", s.k, lim.k);
  read_range(r, "requests", s.requests, lim.requests);
  read_range(r, "prompt", s.prompt, lim.prompt);
  read_range(r, "output", s.output, lim.output);
  read_range(r, "max_num_seqs", s.max_num_seqs, lim.max_num_seqs);
  read_range(r, "max_num_batched_tokens", s.max_num_batched_tokens, lim.max_num_batched_tokens);
  read_range(r, "warmup_steps", s.warmup_steps, lim.warmup_steps);
  read_range(r, "pct_depth", s.pct_depth, lim.pct_depth);
}

void read_lists(scenario::TableReader& r, Space& s) {
  read_names(r, "feedback", s.feedback, {"three-message", "single-payload"});
  std::vector<std::string> loading;
  read_names(r, "module_loading", loading, {"eager", "lazy", "jit"});
  if (!loading.empty()) {
    s.module_loading.clear();
    for (const std::string& name : loading) s.module_loading.push_back(*core::parse_module_loading(name));
  }
  read_numbers(r, "temperature", s.temperature, 0, 2);
  read_numbers(r, "jitter", s.jitter, 0, core::kMaxJitter);
  if (const toml::array* kinds = r.array("kinds")) {
    s.servings = s.programs = false;
    for (const toml::node& n : *kinds) {
      const auto k = n.value<std::string>();
      if (!k || (*k != "serving" && *k != "program")) r.fail("kinds", "expected a list of: serving, program");
      (*k == "serving" ? s.servings : s.programs) = true;
    }
    if (!s.servings && !s.programs) r.fail("kinds", "an empty list: nothing to generate");
  }
}

}  // namespace

Space parse_space(const std::string& text, const std::string& file) {
  const toml::table root = scenario::parse_toml_text(text, file);
  scenario::TableReader top(root, file, "the space file");
  top.only("space");
  Space s;
  const toml::table* t = top.table("space");
  if (t == nullptr) top.fail_here("expected a [space] table");
  scenario::TableReader r(*t, file, "[space]");
  r.only(kSpaceKeys);
  read_centre(r, file, s);
  read_ranges(r, s, s.around ? limits_around(*s.around) : space_limits());
  read_lists(r, s);
  for (auto [key, flag] : {std::pair{"graphs", &s.graphs},
                           {"chunked_prefill", &s.chunked_prefill},
                           {"aborts", &s.aborts},
                           {"stop_token", &s.stop_token},
                           {"length_cap", &s.length_cap},
                           {"poisson", &s.poisson},
                           {"preemption", &s.preemption},
                           {"lookahead", &s.lookahead},
                           {"prefix_caching", &s.prefix_caching},
                           {"adaptive_budget", &s.adaptive_budget},
                           {"recurrent", &s.recurrent},
                           {"eagle", &s.eagle},
                           {"eagle_default_taps", &s.eagle_default_taps},
                           {"priority", &s.priority},
                           {"disaggregation", &s.disaggregation},
                           {"triton_mla", &s.triton_mla},
                           {"stop_strings", &s.stop_strings},
                           {"pin_memory", &s.pin_memory}})
    if (auto b = r.boolean(key)) *flag = *b;
  top.finish("space");
  r.finish(kSpaceKeys);
  // A budget must hold one verification block of the largest K (a centre's is its own).
  if (!s.around && s.max_num_batched_tokens.hi < s.k.hi + 1)
    r.fail("max_num_batched_tokens", fmt::format("at most {} tokens cannot hold one verification block of K+1 = {}",
                                                 s.max_num_batched_tokens.hi, s.k.hi + 1));
  return s;
}

Space read_space(const std::string& file) { return parse_space(core::file_bytes_or_throw(file), file); }

}  // namespace ppspec::fuzzer
