// One case of a fuzzing campaign: a serving scenario or a program scenario, with its schedule. The
// kind is a pick of the case like any knob, so one Shrinkable covers both and a campaign's case
// stream stays one deterministic sequence.
#pragma once

#include <rapidcheck.h>

#include <string>
#include <vector>

#include "scenario/serving_case.h"
#include "scenario/fuzzer/space.h"
#include "scenario/generator/shape.h"

namespace ppspec::fuzzer {

// A generated case is a serving scenario as its writer writes it (scenario/serving_case.h).
using scenario::Expectation;
using scenario::ServingCase;

// A well-matched program (scenario/generator/shape.h: it completes under every schedule) and its schedule.
struct ProgramCase {
  generator::Shape shape;
  uint64_t seed = 1;
  int pct_depth = 0;
};

struct FuzzCase {
  bool is_program = false;
  ServingCase serving;
  ProgramCase program;

  uint64_t seed() const { return is_program ? program.seed : serving.seed; }
  std::string strategy() const;
};

rc::Gen<FuzzCase> gen_fuzz_case(const Space& space, const std::vector<std::string>& faults);

// The scenario file of a case (what runs), and one line of what it is.
std::string case_toml(const FuzzCase& c, const std::string& name, const std::string& description,
                      const Expectation& expect);
std::string case_summary(const FuzzCase& c);

}  // namespace ppspec::fuzzer
