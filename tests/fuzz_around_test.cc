// A fuzz space around one serving scenario (`ppspec fuzz --around`, a space's `around`, `ppspec
// from-vllm --space`): a scenario reads back as the case it is; every case around it keeps its
// deployment, loads, and draws only the workload, the KV cache, the schedule and the knobs the
// scenario leaves free; what a case cannot carry is refused by name; and a campaign around a
// from-vllm scenario finds a fault its stress scenario does not reach.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.h"
#include "report/serving_figures.h"
#include "scenario/fuzzer/around.h"
#include "scenario/fuzzer/campaign.h"
#include "scenario/serving_loader.h"
#include "serving/runner.h"
#include "tests/command_test.h"
#include "tests/scratch.h"
#include "tools/from_vllm_command.h"
#include "tools/fuzz_command.h"

namespace ppspec::testing {
namespace {

namespace fs = std::filesystem;
using scenario::ServingCase;

std::string written(const std::string& name, const std::string& text) {
  const std::string path = scratch_path(name).string();
  std::ofstream(path) << text;
  return path;
}

ServingCase read_back(const ServingCase& c) {
  const std::string text = scenario::to_toml(c, "c", "d", {});
  return fuzzer::case_of(scenario::parse_serving(text, "c.toml"));
}

// Every case of the whole space, to 8 stages of 8 TP ranks and 4 replicas with EAGLE taps and
// recurrent layers of a model sized to them, loads and reads back as the very case it was.
TEST(FuzzAround, ACaseOfTheWholeSpaceLoadsAndReadsBackAsItself) {
  fuzzer::FuzzOptions o;
  o.space = fuzzer::space_limits();
  o.space.programs = false;
  o.space.requests = {1, 2};
  o.space.eagle = o.space.recurrent = o.space.prefix_caching = o.space.adaptive_budget = o.space.priority = true;
  o.space.pin_memory = true;
  std::set<int> pps, tps, dps;
  int pinned = 0;
  for (uint64_t i = 0; i < 300; ++i) {
    const ServingCase c = fuzzer::draw(o, i).value().serving;
    pps.insert(c.pp), tps.insert(c.tp), dps.insert(c.dp);
    pinned += c.pin_memory ? 1 : 0;
    EXPECT_EQ(scenario::to_toml(read_back(c), "c", "d", {}), scenario::to_toml(c, "c", "d", {}))
        << scenario::summary(c);
  }
  EXPECT_TRUE(pps.contains(8) && tps.contains(8) && dps.contains(4));
  EXPECT_GT(pinned, 100);  // about half: the space's pin_memory draws it per case
  EXPECT_LT(pinned, 200);
}

// The centre: Llama-70B's shape as from-vllm writes it, its scheduler limits left at vLLM's defaults.
ServingCase llama_like() {
  ServingCase c;
  c.pp = 4, c.tp = 2, c.k = 3, c.eagle = true;
  c.capture_sizes = {4, 8, 16, 32};
  c.max_num_seqs = 256, c.max_num_batched_tokens = 8192, c.max_concurrent_batches = 5;
  c.enable_prefix_caching = true;
  c.pin_memory = true;
  c.module_loading = core::ModuleLoading::lazy;
  c.num_requests = 64, c.prompt_min = 128, c.prompt_max = 512, c.output_min = 4, c.output_max = 32;
  c.free = {serving::FreeAxis::max_num_seqs, serving::FreeAxis::max_num_batched_tokens,
            serving::FreeAxis::max_model_len};
  return c;
}

void expect_same_deployment(const ServingCase& a, const ServingCase& b) {
  EXPECT_EQ(std::tie(a.dp, a.pp, a.tp, a.k, a.eagle, a.taps, a.capture_sizes, a.max_concurrent_batches),
            std::tie(b.dp, b.pp, b.tp, b.k, b.eagle, b.taps, b.capture_sizes, b.max_concurrent_batches));
  EXPECT_EQ(std::tie(a.enable_prefix_caching, a.chunked_prefill, a.block_size, a.module_loading, a.recurrent_layers),
            std::tie(b.enable_prefix_caching, b.chunked_prefill, b.block_size, b.module_loading, b.recurrent_layers));
  EXPECT_EQ(std::tie(a.scheduling_policy, a.pin_memory), std::tie(b.scheduling_policy, b.pin_memory));
}

std::vector<ServingCase> around(const ServingCase& centre, int n) {
  fuzzer::FuzzOptions o;
  o.space = fuzzer::space_around(written("around_centre.toml", scenario::to_toml(centre, "centre", "d", {})));
  std::vector<ServingCase> cases;
  for (uint64_t i = 0; i < static_cast<uint64_t>(n); ++i) cases.push_back(fuzzer::draw(o, i).value().serving);
  return cases;
}

TEST(FuzzAround, KeepsTheDeploymentAndDrawsOnlyWhatItLeavesFree) {
  const ServingCase centre = llama_like();
  std::set<int> budgets, seqs, lens;
  int preempting = 0, aborting = 0, stopping = 0;
  for (const ServingCase& c : around(centre, 200)) {
    expect_same_deployment(c, centre);
    EXPECT_NO_THROW(scenario::parse_serving(scenario::to_toml(c, "c", "d", {}), "c.toml")) << scenario::summary(c);
    budgets.insert(c.max_num_batched_tokens), seqs.insert(c.max_num_seqs), lens.insert(c.max_model_len);
    EXPECT_LE(c.num_requests, centre.num_requests);
    EXPECT_LE(c.prompt_max, centre.prompt_max);
    preempting += c.num_blocks > 0, aborting += c.abort_every > 0, stopping += c.stop_token >= 0;
  }
  EXPECT_GT(budgets.size(), 5u);
  EXPECT_TRUE(budgets.contains(4)) << "a budget of one verification block (K + 1)";
  EXPECT_GT(seqs.size(), 5u);
  EXPECT_GT(lens.size(), 5u) << "max_model_len drawn as a cap";
  EXPECT_GT(preempting, 20);
  EXPECT_GT(aborting, 20);
  EXPECT_GT(stopping, 20);
  // The model's vocabulary is the scenario's, and a drawn stop token one of its tokens.
  ServingCase small = centre;
  small.vocab = 64;
  for (const ServingCase& c : around(small, 60)) {
    EXPECT_EQ(c.vocab, 64);
    EXPECT_LT(c.stop_token, 64);
  }
  // Fixed, they stay.
  ServingCase fixed = centre;
  fixed.free.clear();
  for (const ServingCase& c : around(fixed, 60)) {
    EXPECT_EQ(c.max_num_batched_tokens, 8192);
    EXPECT_EQ(c.max_num_seqs, 256);
    EXPECT_EQ(c.max_model_len, centre.max_model_len);
  }
}

// Under the priority policy a case's requests have 1 to 4 priority levels; an FCFS case's one.
TEST(FuzzAround, APriorityCentreDrawsItsRequestsPriorityLevels) {
  ServingCase centre = llama_like();
  centre.scheduling_policy = engine::SchedulingPolicy::priority;
  std::set<int> levels;
  for (const ServingCase& c : around(centre, 60)) {
    expect_same_deployment(c, centre);
    levels.insert(c.priority_levels);
    EXPECT_NO_THROW(scenario::parse_serving(scenario::to_toml(c, "c", "d", {}), "c.toml")) << scenario::summary(c);
  }
  EXPECT_EQ(levels, (std::set<int>{1, 2, 3, 4}));
  for (const ServingCase& c : around(llama_like(), 20)) EXPECT_EQ(c.priority_levels, 1);
}

// A disaggregated centre keeps its prefill instance, and its cases keep a KV cache that never
// preempts (the loader refuses one that does with disaggregation): every case loads.
TEST(FuzzAround, ADisaggregatedCentreKeepsItsPrefillInstanceAndNoPreemption) {
  ServingCase centre = llama_like();
  centre.dp = 1;
  centre.disaggregated = true;
  centre.prefill_pp = 2;
  centre.prefill_tp = 1;
  centre.enable_prefix_caching = false;
  centre.recurrent_layers.clear();
  for (const ServingCase& c : around(centre, 60)) {
    EXPECT_TRUE(c.disaggregated);
    EXPECT_EQ(c.prefill_pp, 2);
    EXPECT_EQ(c.num_blocks, 0);
    EXPECT_NO_THROW(scenario::parse_serving(scenario::to_toml(c, "c", "d", {}), "c.toml")) << scenario::summary(c);
  }
}

// A fault switched on that the deployment cannot reach is said with why, unless a knob the scenario
// leaves free reaches it: at vLLM's default budget (8192, free) a step of non-final chunks only is
// reachable once the budget is drawn below max_model_len; an abort scan with the lookahead batch
// is not, whatever is free.
TEST(FuzzAround, AnUnreachableFaultIsSaidUnlessAFreeKnobReachesIt) {
  ServingCase c = llama_like();
  c.faults = {"abort_scan_current_batch", "feedback_for_nonfinal_chunks"};
  auto unreachable = [](const ServingCase& x) {
    std::vector<std::string> names;
    const serving::ServingScenario s = scenario::parse_serving(scenario::to_toml(x, "c", "d", {}), "c.toml");
    for (const report::UnreachableFault& u : report::figures_of(serving::ServingRun{}, s).unreachable_faults)
      names.push_back(u.fault + ": " + u.why);
    return names;
  };
  const std::vector<std::string> free = unreachable(c);
  ASSERT_EQ(free.size(), 1u);
  EXPECT_TRUE(free[0].starts_with("abort_scan_current_batch: it needs max_concurrent_batches = pp = 4")) << free[0];
  c.free.clear();
  const std::vector<std::string> fixed = unreachable(c);
  ASSERT_EQ(fixed.size(), 2u);
  EXPECT_TRUE(fixed[1].starts_with("feedback_for_nonfinal_chunks: it needs max_num_batched_tokens below")) << fixed[1];
}

// A scenario whose hazards are notes (strict = false) is fuzzed the same way: a hazard does not
// fail its cases.
TEST(FuzzAround, TheScenariosStrictnessIsCarried) {
  ServingCase lenient = llama_like();
  lenient.strict = false;
  for (const ServingCase& c : around(lenient, 5)) {
    EXPECT_FALSE(c.strict);
    EXPECT_FALSE(scenario::parse_serving(scenario::to_toml(c, "c", "d", {}), "c.toml").runtime.strict);
  }
  for (const ServingCase& c : around(llama_like(), 5)) EXPECT_TRUE(c.strict);
}

TEST(FuzzAround, WhatACaseCannotCarryAndADeploymentKeyOfTheSpaceAreRefusedByName) {
  std::string text = scenario::to_toml(llama_like(), "c", "d", {});
  text.replace(text.find("[model]\n"), 8, "[model]\nalpha = 0.5\n");
  const std::string odd = written("around_alpha.toml", text);
  try {
    fuzzer::space_around(odd);
    ADD_FAILURE() << "an acceptance of 0.5 carried";
  } catch (const core::InputError& e) {
    const auto line =
        1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(text.find("alpha =")), '\n');
    EXPECT_NE(std::string(e.what()).find(odd + ":" + std::to_string(line) + ":"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[model] alpha"), std::string::npos) << e.what();
  }
  written("around_ok.toml", scenario::to_toml(llama_like(), "c", "d", {}));
  const std::string space = written("around_space.toml", "[space]\naround = \"around_ok.toml\"\npp = [1, 2]\n");
  try {
    fuzzer::read_space(space);
    ADD_FAILURE() << "pp restated around a scenario";
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find(space + ":3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fixes the deployment"), std::string::npos) << e.what();
  }
  std::ostringstream out, err;
  tools::FuzzArgs both{.space = space, .around = odd, .cases = "1", .out = scratch_path("around_both").string()};
  EXPECT_EQ(tools::fuzz_command(both, out, err), 2);
  EXPECT_NE(err.str().find("--around and a space file"), std::string::npos) << err.str();
}

// The stress scenario of Llama-70B's deployment passes with feedback_for_nonfinal_chunks on (its
// 8192-token budget never leaves a step of non-final chunks only); the space from-vllm writes
// beside it draws the budget vLLM defaulted, and finds the fault.
TEST(FuzzAround, FromVllmsSpaceFindsAFaultItsStressScenarioMisses) {
  const std::string scenario = scratch_path("around_llama.toml").string();
  const std::string space = scratch_path("around_llama.space.toml").string();
  tools::FromVllmArgs a;
  a.vllm_args = {"vllm",
                 "serve",
                 "meta-llama/Llama-3.1-70B-Instruct",
                 "-pp",
                 "4",
                 "-tp",
                 "2",
                 "--speculative-config",
                 R"({"method": "eagle3", "model": "x/e", "num_speculative_tokens": 3})"};
  a.out = scenario, a.space = space, a.force = true;
  std::ostringstream out, err;
  ASSERT_EQ(tools::from_vllm_command(a, out, err), 0) << out.str() << err.str();
  EXPECT_NE(out.str().find("wrote " + space + ": a fuzz space around it"), std::string::npos) << out.str();
  EXPECT_EQ(fuzzer::read_space(space).around_file, (fs::path(space).parent_path() / "around_llama.toml").string());

  serving::ServingScenario stressed =
      scenario::parse_serving(scenario::to_toml(fuzzer::space_around(scenario).around.value(), "s", "d", {}), "s.toml");
  stressed.config.faults.feedback_for_nonfinal_chunks = true;
  EXPECT_EQ(serving::run_on_sim(stressed, sim::RunConfig{}).result.verdict, core::Verdict::pass);

  const fs::path dir = scratch_path("around_found");
  fs::remove_all(dir);
  std::ostringstream fout, ferr;
  tools::FuzzArgs f{.space = space, .cases = "10", .out = dir.string(), .faults = "feedback_for_nonfinal_chunks"};
  ASSERT_EQ(tools::fuzz_command(f, fout, ferr), 1) << fout.str() << ferr.str();
  const fuzzer::FuzzReport r = fuzzer::read_summary(dir.string());
  ASSERT_EQ(r.found.size(), 1u);
  EXPECT_EQ(r.found.front().kind, "pipeline-bubble");
  EXPECT_NE(r.found.front().shrunk.find("pp4 tp2 K3"), std::string::npos) << r.found.front().shrunk;
}

// The space names its centre as a TOML string, whatever the file's name holds; the scenario's own
// file named again as the space (another spelling of one path) is refused before anything is written.
TEST(FuzzAround, FromVllmsSpaceNamesAnOddlyNamedCentreAndRefusesItsOwnFile) {
  const fs::path dir = scratch_path("around_odd");
  fs::remove_all(dir);
  fs::create_directories(dir);
  tools::FromVllmArgs a;
  a.vllm_args = {"vllm", "serve", "m", "-pp", "2"};
  a.out = (dir / "a \"b\" \\c.toml").string(), a.space = (dir / "s.toml").string(), a.force = true;
  std::ostringstream out, err;
  ASSERT_EQ(tools::from_vllm_command(a, out, err), 0) << out.str() << err.str();
  EXPECT_EQ(fuzzer::read_space(a.space).around_file, a.out);
  a.out = (dir / "x.toml").string(), a.space = (dir / "." / "x.toml").string(), a.force = false;
  std::ostringstream out2, err2;
  EXPECT_EQ(tools::from_vllm_command(a, out2, err2), 2);
  EXPECT_NE(err2.str().find("--space names the scenario's own file"), std::string::npos) << err2.str();
  EXPECT_FALSE(fs::exists(dir / "x.toml"));
}

}  // namespace
}  // namespace ppspec::testing
