// Hazards are a property of the program, not of one schedule (the rule is in
// sim/blocking_hazards.h): a generated program notes the same hazard kinds under 8 seeds of random
// scheduling and 8 of PCT:3.
//  - hazard rounds (a blocking call while a receive spins, the sender independent of the caller,
//    waiting for it, or queued behind work that waits for it): the verdict and the hazard kinds
//    are the same under every schedule;
//  - a loader thread racing a rank's own thread for the context lock: the hazard kinds are the
//    same whichever thread wins, though the verdict is not (a race round hangs when the loader
//    wins); without a race round the loader is never a hazard.
// A failing case prints the program as a scenario file and the runs that disagree.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <fmt/format.h>

#include <set>
#include <string>
#include <vector>

#include "program/runner.h"
#include "program/toml_writer.h"
#include "scenario/generator/shape.h"
#include "tests/test_util.h"

namespace ppspec::proptest {

using namespace ppspec::generator;  // the program generator (scenario/generator/shape.h)
namespace {

constexpr uint64_t kSeeds = 8;

struct Outcome {
  std::string schedule;
  core::Verdict verdict;
  std::set<std::string> hazards;
};

// One run per seed under random scheduling and under PCT:3 (its horizon drawn per case, so that
// its priority changes land inside these short programs).
std::vector<Outcome> under_16_schedules(const program::Program& p) {
  const uint64_t first = *rc::gen::inRange<uint64_t>(1, 1'000'000);
  core::StrategySpec pct{core::StrategySpec::Kind::pct, 3};
  pct.horizon = static_cast<uint64_t>(*rc::gen::inRange(10, 400));
  std::vector<Outcome> out;
  for (const core::StrategySpec& strategy : {core::StrategySpec{}, pct}) {
    for (uint64_t seed = first; seed < first + kSeeds; ++seed) {
      sim::RunConfig o;
      o.seed = seed;
      o.strategy = strategy;
      o.record_decisions = false;
      const core::RunResult r = program::run_on_sim(p, o);
      out.push_back(
          Outcome{fmt::format("--seed {} --strategy {}", seed, strategy.str()), r.verdict, testing::hazard_kinds(r)});
    }
  }
  return out;
}

std::string describe(const Outcome& o) {
  std::string s = fmt::format("{}: {} [", o.schedule, core::to_string(o.verdict));
  for (const auto& h : o.hazards) s += " " + h;
  return s + " ]";
}

void log_disagreement(const program::Program& p, const Outcome& a, const Outcome& b) {
  RC_LOG() << program::to_toml(p) << "\n# " << describe(a) << "\n# " << describe(b) << "\n";
}

RC_GTEST_PROP(Hazards, HazardRoundsGiveTheSameVerdictAndHazardsUnderEverySchedule, ()) {
  const program::Program p = build(*gen_hazard_shape());
  const std::vector<Outcome> runs = under_16_schedules(p);
  RC_CLASSIFY(runs.front().verdict == core::Verdict::deadlock, "deadlock");
  RC_CLASSIFY(!runs.front().hazards.empty(), "hazard");
  for (const Outcome& o : runs) {
    if (o.verdict != runs.front().verdict || o.hazards != runs.front().hazards) log_disagreement(p, runs.front(), o);
    RC_ASSERT(o.verdict == runs.front().verdict);
    RC_ASSERT(o.hazards == runs.front().hazards);
  }
}

RC_GTEST_PROP(Hazards, ALoaderThreadGivesTheSameHazardsWhicheverThreadWinsTheRace, ()) {
  const Shape shape = *gen_race_shape();
  const program::Program p = build(shape);
  const bool race_round = std::any_of(shape.rounds.begin(), shape.rounds.end(),
                                      [](const RoundSpec& r) { return r.kind == RoundKind::loader_race; });
  const std::vector<Outcome> runs = under_16_schedules(p);
  std::set<core::Verdict> verdicts;
  for (const Outcome& o : runs) verdicts.insert(o.verdict);
  RC_CLASSIFY(race_round, "race round");
  RC_CLASSIFY(verdicts.size() > 1, "both outcomes");
  RC_CLASSIFY(!runs.front().hazards.empty(), "hazard");
  for (const Outcome& o : runs) {
    if (o.hazards != runs.front().hazards || (!race_round && (o.verdict != core::Verdict::pass || !o.hazards.empty())))
      log_disagreement(p, runs.front(), o);
    RC_ASSERT(o.hazards == runs.front().hazards);
    if (!race_round) {
      // Round order: nothing a rank's thread does after an item waits for it, so the loader can
      // hold nothing up.
      RC_ASSERT(o.verdict == core::Verdict::pass);
      RC_ASSERT(o.hazards.empty());
    }
  }
}

}  // namespace
}  // namespace ppspec::proptest
