// Prints generated programs, as the scenario files they are written as, so that a change to the
// program generator can be shown to leave them byte-identical (`cmp` two outputs):
//   ppspec_generator_dump seeded   the seeded generator, seeds 1..300, under the options of
//                                  `ppspec fidelity` and of the Flight Recorder differential
//   ppspec_generator_dump rc       the RapidCheck generators, sampled with fixed keys, and the
//                                  first shrinks of each sample
//   ppspec_generator_dump perturb  the RapidCheck side's perturbations of those samples
// A scenario file does not record an operation's origin: it is printed after each program.
#include <rapidcheck.h>

#include <fmt/format.h>
#include <iostream>
#include <string>

#include "scenario/generator/perturb.h"
#include "scenario/generator/seeded.h"
#include "scenario/generator/shape.h"
#include "program/toml_writer.h"

namespace {

using namespace ppspec;

std::string origins(const program::Program& p) {
  std::string s = "# origins:";
  for (const auto& threads : p.ranks)
    for (const auto& t : threads) {
      s += " |";
      for (const auto& op : t.ops) s += " " + (op.origin.empty() ? std::string("-") : op.origin);
    }
  return s + "\n";
}

void seeded(std::ostream& out) {
  auto one = [&out](const std::string& what, uint64_t seed, const generator::GeneratorOptions& g) {
    const generator::GeneratedProgram p = generator::generate_program(seed, fmt::format("gen-{}", seed), g);
    out << fmt::format("## {} seed {}\n# features: {}\n# disturbance: {}\n", what, seed, fmt::join(p.features, ", "),
                       p.disturbance)
        << program::to_toml(p.program) << origins(p.program);
  };
  for (int max_ranks : {8, 4, 2}) {
    generator::GeneratorOptions g;  // `ppspec fidelity` (tools/fidelity_command.cc)
    g.max_ranks = max_ranks;
    for (uint64_t seed = 1; seed <= 300; ++seed) one(fmt::format("fidelity max_ranks {}", max_ranks), seed, g);
  }
  for (int max_ranks : {8, 2})
    for (size_t d = 0; d < std::size(generator::kHardwareDisturbances); ++d) {
      // The Flight Recorder differential's (verify/fidelity/fr_differential.cc).
      const auto g = generator::flight_recorder_options(max_ranks, generator::kHardwareDisturbances[d]);
      for (uint64_t seed = 1; seed <= 300; ++seed)
        one(fmt::format("fr max_ranks {} disturb {}", max_ranks, d), seed, g);
    }
}

rc::Random key(uint64_t i) { return rc::Random({i, 0x9e3779b97f4a7c15ull, i * 7 + 1, 42}); }

template <typename F>
void samples(const std::string& what, const rc::Gen<generator::Shape>& gen, std::ostream& out, F&& each) {
  for (uint64_t i = 1; i <= 100; ++i) {
    const auto shrinkable = gen(key(i), static_cast<int>(i % 101));
    out << fmt::format("## {} sample {}\n", what, i);
    each(shrinkable.value(), i);
    auto shrinks = shrinkable.shrinks();
    for (int k = 0; k < 3; ++k) {
      auto next = shrinks.next();
      if (!next) break;
      out << fmt::format("## {} sample {} shrink {}\n", what, i, k);
      each(next->value(), i);
    }
  }
}

void rc_side(std::ostream& out) {
  auto print = [&out](const generator::Shape& s, uint64_t) {
    const program::Program p = generator::build(s);
    out << program::to_toml(p) << origins(p);
  };
  samples("gen_shape", generator::gen_shape(), out, print);
  samples("gen_hazard_shape", generator::gen_hazard_shape(), out, print);
  samples("gen_race_shape", generator::gen_race_shape(), out, print);
}

void perturb_side(std::ostream& out) {
  samples("perturb", generator::gen_shape(), out, [&out](const generator::Shape& s, uint64_t i) {
    const generator::PerturbSpec spec = generator::gen_perturb()(key(i + 1000), 0).value();
    const generator::Perturbed p = generator::perturb(generator::build(s), spec);
    out << fmt::format("# rank {}: {}\n", p.rank, p.what) << program::to_toml(p.program) << origins(p.program);
  });
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "seeded")
    seeded(std::cout);
  else if (mode == "rc")
    rc_side(std::cout);
  else if (mode == "perturb")
    perturb_side(std::cout);
  else {
    std::cerr << "usage: ppspec_generator_dump seeded|rc|perturb\n";
    return 2;
  }
  return 0;
}
