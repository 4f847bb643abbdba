// Properties of the verification layer over schedules (issue: verification layer):
//  - no false alarms: with every fault off, a serving scenario (the regression twins and the serving
//    suite) passes under any seed and policy;
//  - no misses: every fault of DESIGN §6.6 is caught, with its scenario's verdict, within the seed
//    budget its regression scenario declares, from any first seed, under any policy — and the report
//    names the rank and where it was.
// A failing case prints the scenario, seed and strategy: `ppspec run FILE --seed N --strategy S`.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <filesystem>
#include <map>

#include "scenario/serving_loader.h"
#include "scenario/program_loader.h"
#include "serving/runner.h"

namespace ppspec::proptest {
namespace {

const std::string kScenarios = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/";

// Loaded once: every regression scenario (the fault-on ones and their fault-off twins) and every
// serving scenario but the 64 x 128-token one (200 ms a run; the serving suite covers it).
const std::map<std::string, serving::ServingScenario>& scenarios() {
  static const auto all = [] {
    std::map<std::string, serving::ServingScenario> m;
    for (const char* dir : {"regressions", "serving"}) {
      for (const auto& entry : std::filesystem::directory_iterator(kScenarios + dir)) {
        const std::string file = entry.path().string();
        const std::string stem = entry.path().stem().string();
        if (entry.path().extension() != ".toml" || stem == "pp2_tp2_k5") continue;
        m.emplace(std::string(dir) + "/" + stem, scenario::read_serving(scenario::parse_toml_file(file), file));
      }
    }
    return m;
  }();
  return all;
}

// Fault-on regressions (`faulty`), or every scenario with its faults off.
std::vector<std::string> names(bool faulty) {
  std::vector<std::string> out;
  for (const auto& [name, s] : scenarios()) {
    const bool off = name.ends_with("_off") || name.starts_with("serving/");
    if (off != faulty) out.push_back(name);
  }
  return out;
}

rc::Gen<core::StrategySpec> gen_strategy() {
  return rc::gen::exec([] {
    core::StrategySpec s;
    if (*rc::gen::arbitrary<bool>()) {
      s.kind = core::StrategySpec::Kind::pct;
      s.depth = *rc::gen::inRange(1, 4);
    }
    return s;
  });
}

std::string command(const serving::ServingScenario& s, uint64_t seed, const core::StrategySpec& st) {
  return "ppspec run " + s.file + " --seed " + std::to_string(seed) + " --strategy " + st.str();
}

TEST(ServingRegressions, EveryFaultHasATwin) {
  const auto faults = names(true);
  ASSERT_GE(faults.size(), 8u);
  for (const std::string& f : faults) EXPECT_TRUE(scenarios().count(f + "_off")) << f << " has no fault-off twin";
  for (const std::string& t : names(false)) EXPECT_EQ(scenarios().at(t).expect.verdict, core::Verdict::pass) << t;
  // The right verdict for the wrong reason must not pass: every fault pins its finding's kind.
  for (const std::string& f : faults)
    EXPECT_TRUE(scenarios().at(f).expect.kind.has_value()) << f << " does not pin [expect] kind";
}

RC_GTEST_PROP(ServingFaultsOff, AnySeedAndPolicyPasses, ()) {
  const std::string name = *rc::gen::elementOf(names(false));
  const serving::ServingScenario& s = scenarios().at(name);
  const auto strategy = *gen_strategy();
  const auto seed = *rc::gen::inRange<uint64_t>(1, 1'000'000);
  sim::RunConfig o;
  o.seed = seed;
  o.strategy = strategy;
  const serving::ServingRun run = serving::run_on_sim(s, o);
  RC_ASSERT(run.completed);
  if (run.result.verdict != core::Verdict::pass)
    RC_FAIL(std::string(core::to_string(run.result.verdict)) + ": " + run.result.findings.front().summary + "\n  " +
            command(s, seed, strategy));
}

RC_GTEST_PROP(ServingFaults, EachIsCaughtWithinItsSeedBudget, ()) {
  const std::string name = *rc::gen::elementOf(names(true));
  const serving::ServingScenario& s = scenarios().at(name);
  const auto strategy = *gen_strategy();
  const auto first = *rc::gen::inRange<uint64_t>(1, 1'000'000);
  for (uint64_t seed = first; seed < first + s.seeds; ++seed) {
    sim::RunConfig o;
    o.seed = seed;
    o.strategy = strategy;
    const serving::ServingRun run = serving::run_on_sim(s, o);
    if (run.result.verdict != s.expect.verdict) continue;
    // Caught for the reason the scenario names, not merely with its verdict.
    RC_ASSERT(run.result.findings.front().kind == *s.expect.kind);
    // Caught: the report must say where — a rank and the step, the host call that hung, the
    // disaggregated prefill instance's engine core and its own step, or the engine core's scheduler
    // and the request it starves.
    const core::Finding& f = run.result.findings.front();
    RC_ASSERT(!f.sites.empty());
    const bool prefill_core = f.sites.front().actor == "prefill.engine" && !f.sites.front().what.empty();
    const bool scheduler = f.sites.front().actor == "engine" && !f.sites.front().what.empty() && f.request >= 0;
    RC_ASSERT(f.sites.front().rank >= 0 || prefill_core || scheduler);
    RC_ASSERT(f.engine_step >= 0 || f.verdict == core::Verdict::deadlock || prefill_core);
    return;
  }
  RC_FAIL(name + ": not caught within " + std::to_string(s.seeds) + " seeds from " + command(s, first, strategy));
}

}  // namespace
}  // namespace ppspec::proptest
