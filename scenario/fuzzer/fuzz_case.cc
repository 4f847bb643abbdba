#include "scenario/fuzzer/fuzz_case.h"

#include <fmt/format.h>

#include "core/assert.h"
#include "scenario/fuzzer/around.h"
#include "scenario/fuzzer/generate.h"
#include "program/toml_writer.h"
#include "core/strategy.h"

namespace ppspec::fuzzer {

std::string FuzzCase::strategy() const {
  const int depth = is_program ? program.pct_depth : serving.pct_depth;
  return depth == 0 ? "random" : fmt::format("pct:{}", depth);
}

rc::Gen<FuzzCase> gen_fuzz_case(const Space& space, const std::vector<std::string>& faults) {
  return rc::gen::exec([space, faults] {
    FuzzCase c;
    if (space.around) {  // one deployment, its workload and schedule drawn
      c.serving = *gen_around(space, faults);
      return c;
    }
    // Faults live in the serving engine: a campaign that switches one on runs serving cases only.
    const bool programs = space.programs && faults.empty();
    const bool servings = space.servings || !programs;
    c.is_program = programs && (!servings || *rc::gen::inRange(0, 4) == 3);  // one case in four
    if (!c.is_program) {
      c.serving = *gen_serving_case(space, faults);
      return c;
    }
    c.program.shape = *generator::gen_shape();
    c.program.seed = *rc::gen::inRange<uint64_t>(1, 1u << 20);
    c.program.pct_depth = *rc::gen::inRange(space.pct_depth.lo, space.pct_depth.hi + 1);
    return c;
  });
}

std::string case_toml(const FuzzCase& c, const std::string& name, const std::string& description,
                      const Expectation& expect) {
  if (!c.is_program) return to_toml(c.serving, name, description, expect);
  program::Program p = generator::build(c.program.shape);
  p.name = name;
  p.description = description;
  p.expect.verdict = expect.verdict;
  if (!expect.kind.empty()) {
    p.expect.kind = core::parse_finding_kind(expect.kind);
    PPSPEC_ASSERT(p.expect.kind.has_value(), "an expectation of kind '{}', which no finding has", expect.kind);
  }
  p.explore.seed = c.program.seed;
  p.explore.seeds = 1;
  p.explore.strategy = *core::parse_strategy(c.strategy());
  return program::to_toml(p);
}

std::string case_summary(const FuzzCase& c) {
  if (!c.is_program) return summary(c.serving);
  const generator::Shape& s = c.program.shape;
  return fmt::format("program: {} ranks, {} streams, {} communicators, {} rounds{}, seed {} {}", s.ranks, s.streams,
                     s.comm_masks.size() + 1, s.rounds.size(), s.race.on ? ", a loader thread" : "", c.program.seed,
                     c.strategy());
}

}  // namespace ppspec::fuzzer
