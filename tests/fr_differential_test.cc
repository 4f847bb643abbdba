// `ppspec check` against the simulator (verify/fidelity/fr_differential.h): the kept cases of
// tests/fr_differential/ agree, and so do programs of a seed nobody looked at.
#include <gtest/gtest.h>

#include <filesystem>

#include "verify/fidelity/fr_differential.h"
#include "scenario/generator/fr_shapes.h"
#include "tests/scratch.h"

namespace ppspec::testing {
namespace {

namespace fs = std::filesystem;

TEST(FrDifferential, EveryKeptCaseAgreesWithTheSimulator) {
  const fs::path kept = fs::path(PPSPEC_SOURCE_DIR) / "tests" / "fr_differential";
  size_t n = 0;
  for (const auto& f : fs::directory_iterator(kept)) {
    if (f.path().extension() != ".toml") continue;
    SCOPED_TRACE(f.path().filename().string());
    const fs::path dir = scratch_path("ppspec_frdiff_" + f.path().stem().string());
    fs::remove_all(dir);
    fs::create_directories(dir);
    const fidelity::FrCase c = fidelity::compare_on_dumps(f.path().string(), dir.string());
    ++n;
    EXPECT_TRUE(c.agree) << c.why << "\nsimulator: " << c.sim_summary << "\ncheck: " << c.check_summary;
    const std::string name = f.path().filename().string();
    if (name.starts_with("eager") || name.starts_with("connect")) {
      EXPECT_EQ(c.check_class, "unmatched");
    }
    if (name.starts_with("cycle")) {
      EXPECT_EQ(c.check_class, "cycle");
    }
    if (name.starts_with("pass")) {
      EXPECT_EQ(c.check_class, "pass");
    }
    if (name.starts_with("root") || name.starts_with("data_lost") || name.starts_with("host_call")) {
      EXPECT_NE(c.check_class, "pass");
    }
    if (name.starts_with("culprit") || name.starts_with("connect") || name.starts_with("eager")) {
      EXPECT_GE(c.check_culprit.rank, 0);
      EXPECT_EQ(c.check_culprit.rank, c.sim_culprit.rank);
    }
    fs::remove_all(dir);
  }
  EXPECT_GE(n, 40u);
}

// Held out: a seed whose programs nobody tuned against.
TEST(FrDifferential, ProgramsOfAFreshSeedAgree) {
  fidelity::FrDifferentialOptions o;
  o.seed = 20261201;
  o.out = scratch_path("ppspec_frdiff_fresh").string();
  for (uint64_t i = 0; i < 140; ++i) {
    const fidelity::FrCase c = fidelity::run_fr_case(o, i);
    EXPECT_TRUE(c.agree) << c.name << ": " << c.why;
  }
  fs::remove_all(o.out);
}

// Every family of dumps (scenario/generator/fr_shapes.h), on a seed of its own.
TEST(FrDifferential, EveryFamilyAgreesOnAFreshSeed) {
  for (const generator::FrShape shape : generator::kFrShapes) {
    fidelity::FrDifferentialOptions o;
    o.seed = 20270101;
    o.shape = shape;
    o.out = scratch_path(std::string("ppspec_frdiff_family_") + std::string(generator::to_string(shape))).string();
    for (uint64_t i = 0; i < 40; ++i) {
      const fidelity::FrCase c = fidelity::run_fr_case(o, i);
      EXPECT_TRUE(c.agree) << generator::to_string(shape) << " " << c.name << ": " << c.why;
    }
    fs::remove_all(o.out);
  }
}

}  // namespace
}  // namespace ppspec::testing
