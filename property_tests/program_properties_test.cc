// Properties of the simulated runtime over random programs (DESIGN §3, issue: foundation):
//  - no false alarms: well-matched programs pass under every policy and seed, and note no hazard;
//  - no misses: one injected perturbation is always caught, and the report names the rank;
//  - determinism: the same program and seed give byte-identical traces.
// A failing case prints the program as a scenario file, runnable with `ppspec run`.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include "program/runner.h"
#include "program/toml_writer.h"
#include "scenario/generator/perturb.h"
#include "scenario/generator/shape.h"
#include "tests/test_util.h"

namespace ppspec::proptest {

using namespace ppspec::generator;  // the program generator (scenario/generator/shape.h)
namespace {

struct Schedule {
  core::StrategySpec strategy;
  uint64_t seed = 1;
};

rc::Gen<Schedule> gen_schedule() {
  return rc::gen::exec([] {
    Schedule s;
    if (*rc::gen::arbitrary<bool>()) {
      s.strategy.kind = core::StrategySpec::Kind::pct;
      s.strategy.depth = *rc::gen::inRange(1, 4);
      s.strategy.horizon = static_cast<uint64_t>(*rc::gen::inRange(10, 400));
    }
    s.seed = *rc::gen::arbitrary<uint64_t>();
    return s;
  });
}

core::RunResult run(const program::Program& p, const Schedule& s, core::EventSink* sink = nullptr) {
  sim::RunConfig o;
  o.seed = s.seed;
  o.strategy = s.strategy;
  if (sink != nullptr) o.sinks.push_back(sink);
  return program::run_on_sim(p, o);
}

std::string report(const core::RunResult& r) {
  std::string s = std::string(core::to_string(r.verdict));
  for (const auto& f : r.findings) s += "\n" + testing::all_text(f);
  return s;
}

RC_GTEST_PROP(Programs, WellMatchedProgramsPassUnderEveryPolicyAndSeed, ()) {
  const Shape shape = *gen_shape();
  const Schedule sched = *gen_schedule();
  const program::Program p = build(shape);
  const core::RunResult r = run(p, sched);
  RC_TAG(sched.strategy.kind == core::StrategySpec::Kind::pct ? "pct" : "random");
  if (r.verdict != core::Verdict::pass) {
    RC_LOG() << program::to_toml(p) << "\n# seed " << sched.seed << " strategy " << sched.strategy.str() << "\n"
             << report(r) << "\n";
  }
  RC_ASSERT(r.verdict == core::Verdict::pass);
  // Round order: no blocking call's drain waits for anything done after it, no two ranks invert
  // two communicators; nothing to note (sim/blocking_hazards.h).
  RC_ASSERT(testing::hazard_kinds(r).empty());
}

RC_GTEST_PROP(Programs, OnePerturbationIsAlwaysCaughtAndNamesTheRank, ()) {
  const Shape shape = *gen_shape();
  const PerturbSpec spec = *gen_perturb();
  const Schedule sched = *gen_schedule();
  const Perturbed bad = perturb(build(shape), spec);
  RC_PRE(bad.rank >= 0);  // the program had no communication at all
  const core::RunResult r = run(bad.program, sched);
  RC_CLASSIFY(r.verdict == core::Verdict::deadlock, "deadlock");
  RC_CLASSIFY(r.verdict == core::Verdict::fifo_misalignment, "fifo-misalignment");
  const bool caught = r.verdict == core::Verdict::deadlock || r.verdict == core::Verdict::fifo_misalignment;
  const bool named = !r.findings.empty() && r.findings.front().involves_rank(bad.rank);
  if (!caught || !named) {
    RC_LOG() << bad.what << "\n"
             << program::to_toml(bad.program) << "\n# seed " << sched.seed << " strategy " << sched.strategy.str()
             << "\n"
             << report(r) << "\n";
  }
  RC_ASSERT(caught);
  RC_ASSERT(named);
}

RC_GTEST_PROP(Programs, SameProgramAndSeedGiveByteIdenticalTraces, ()) {
  const Shape shape = *gen_shape();
  const Schedule sched = *gen_schedule();
  const program::Program p = build(shape);
  testing::Recorder a;
  testing::Recorder b;
  (void)run(p, sched, &a);
  (void)run(p, sched, &b);
  RC_ASSERT(a.lines == b.lines);
}

// A written program reads back as the same program (the counterexamples above are runnable).
RC_GTEST_PROP(Programs, WrittenProgramsReadBackAndRunTheSame, ()) {
  const Shape shape = *gen_shape();
  const program::Program p = build(shape);
  const program::Program q = scenario::parse_program(program::to_toml(p), "generated.toml");
  const Schedule sched = *gen_schedule();
  testing::Recorder a;
  testing::Recorder b;
  (void)run(p, sched, &a);
  (void)run(q, sched, &b);
  // Origins differ (round numbers vs file lines); everything else must not.
  auto strip = [](std::vector<std::string> lines) {
    for (auto& l : lines) {
      const auto at = l.find(",\"text\":");
      if (at != std::string::npos) l = l.substr(0, at);
    }
    return lines;
  };
  RC_ASSERT(strip(a.lines) == strip(b.lines));
}

}  // namespace
}  // namespace ppspec::proptest
