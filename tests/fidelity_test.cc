// The differential fidelity run's own parts: the generator (valid, deterministic, covering what
// the issue lists), the comparison of verdict classes, and `ppspec fidelity` on the simulator.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "scenario/generator/seeded.h"
#include "scenario/program_loader.h"
#include "program/toml_writer.h"
#include "tools/fidelity_command.h"
#include "tests/scratch.h"

namespace ppspec::testing {
namespace {

constexpr uint64_t kPrograms = 300;

TEST(Fidelity, EveryGeneratedProgramIsAScenarioTheLoaderAccepts) {
  for (uint64_t seed = 0; seed < kPrograms; ++seed) {
    const generator::GeneratedProgram g = generator::generate_program(seed, "gen", {});
    const std::string toml = program::to_toml(g.program);
    EXPECT_NO_THROW((void)scenario::parse_program(toml, "gen.toml")) << "seed " << seed << "\n" << toml;
  }
}

TEST(Fidelity, AProgramIsAFunctionOfItsSeed) {
  for (uint64_t seed : {0u, 1u, 77u}) {
    const std::string a = program::to_toml(generator::generate_program(seed, "gen", {}).program);
    const std::string b = program::to_toml(generator::generate_program(seed, "gen", {}).program);
    EXPECT_EQ(a, b);
  }
  EXPECT_NE(program::to_toml(generator::generate_program(1, "gen", {}).program),
            program::to_toml(generator::generate_program(2, "gen", {}).program));
}

// Committed evidence names generated programs by seed: a seed's program must never change. The
// value was computed independently from what `ppspec_generator_dump seeded` printed when it was written,
// before the scenario/generator/ refactor; a change to it needs new evidence, not a new value.
TEST(Fidelity, ASeedsProgramNeverChanges) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a, 64 bits
  auto add = [&h](const generator::GeneratedProgram& g) {
    std::string s = program::to_toml(g.program) + g.disturbance;
    for (const std::string& f : g.features) s += "\n" + f;
    for (const unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  };
  for (uint64_t seed = 1; seed <= kPrograms; ++seed) {
    add(generator::generate_program(seed, "gen", {}));
    for (const generator::Disturbance d : generator::kHardwareDisturbances)
      add(generator::generate_program(seed, "gen", generator::flight_recorder_options(8, d)));
  }
  EXPECT_EQ(h, 14648348673563855924ull) << "the generated programs changed";
}

TEST(Fidelity, ThreeHundredProgramsCoverWhatRealProgramsDo) {
  std::map<std::string, int> seen;
  int two_ranks = 0, disturbed = 0;
  for (uint64_t seed = 0; seed < kPrograms; ++seed) {
    const generator::GeneratedProgram g = generator::generate_program(seed, "gen", {});
    for (const std::string& f : g.features) ++seen[f];
    two_ranks += g.program.num_ranks == 2;
    disturbed += !g.disturbance.empty();
  }
  for (const char* f : {"all_reduce",
                        "broadcast",
                        "all_gather",
                        "zero-count",
                        "large (>= 4 MiB)",
                        "grouped p2p",
                        "ungrouped p2p",
                        "ungrouped exchange",
                        "self p2p",
                        "unmatched self p2p",
                        "several communicators",
                        "several streams",
                        "events",
                        "device sync",
                        "malloc",
                        "two host threads",
                        "lazy loading",
                        "eager loading",
                        "jit loading",
                        "graph",
                        "inverted order",
                        "mutated",
                        "runtime_connect = false",
                        "kernels",
                        "preload",
                        "stream sync",
                        "3 ranks",
                        "8 ranks"})
    EXPECT_GE(seen[f], 3) << f;
  EXPECT_GT(two_ranks, 220) << "most programs fit two GPUs";
  EXPECT_GT(disturbed, 60);
}

TEST(Fidelity, TheSimulatorsDeadlockIsTheHardwaresHang) {
  EXPECT_EQ(tools::verdict_class(core::Verdict::deadlock), "hang");
  EXPECT_EQ(tools::verdict_class(core::Verdict::hang), "hang");
  EXPECT_EQ(tools::verdict_class(core::Verdict::hazard), "pass");
  EXPECT_EQ(tools::verdict_class(core::Verdict::fifo_misalignment), "misalignment");
  EXPECT_TRUE(tools::classes_agree({"hang"}, "hang"));
  EXPECT_TRUE(tools::classes_agree({"hang"}, "device-fault"));
  EXPECT_TRUE(tools::classes_agree({"pass", "hang"}, "pass")) << "the hardware ran one of the simulator's schedules";
  EXPECT_FALSE(tools::classes_agree({"pass"}, "hang"));
  EXPECT_FALSE(tools::classes_agree({"pass"}, "device-fault"));
  EXPECT_FALSE(tools::classes_agree({"hang"}, "error")) << "a GPU run that failed agrees with nothing";
}

TEST(Fidelity, TheSimulatorOnlyRunWritesProgramsResultsAndTheTable) {
  const auto dir = scratch_path("ppspec-fidelity-test");
  std::filesystem::remove_all(dir);
  tools::FidelityArgs args;
  args.programs = 40;
  args.out = dir.string();
  std::ostringstream out, err;
  ASSERT_EQ(tools::fidelity_main(args, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("fidelity: 40 programs; 0 compared on GPUs"), std::string::npos) << out.str();
  EXPECT_TRUE(std::filesystem::exists(dir / "programs" / "fid-s1-0039.toml"));
  EXPECT_TRUE(std::filesystem::exists(dir / "results" / "fid-s1-0039.json"));
  std::ifstream md(dir / "fidelity.md");
  std::stringstream text;
  text << md.rdbuf();
  EXPECT_NE(text.str().find("## By feature"), std::string::npos);
  // Each written program runs as it is and meets the expectation the simulator gave it.
  const program::Program p = scenario::load_program_file((dir / "programs" / "fid-s1-0007.toml").string());
  EXPECT_EQ(p.name, "fid-s1-0007");
  std::filesystem::remove_all(dir);
}

// `--backend recorded` judges the simulator against GPU results kept in OUT/results: a program the
// GPUs agreed with passes, one they contradict is kept as a scenario with both verdicts.
TEST(Fidelity, RecordedGpuResultsAreJudgedBothWays) {
  const auto dir = scratch_path("ppspec-fidelity-recorded");
  std::filesystem::remove_all(dir);
  tools::FidelityArgs args;
  args.programs = 6;
  args.out = dir.string();
  std::ostringstream out, err;
  ASSERT_EQ(tools::fidelity_main(args, out, err), 0) << err.str();
  auto record = [&](const std::string& name, const std::string& gpu) {
    const auto path = dir / "results" / (name + ".json");
    std::ifstream in(path);
    nlohmann::json j = nlohmann::json::parse(in);
    j["gpu"] = gpu;
    j["gpu_summary"] = "recorded by the test";
    std::ofstream(path) << j.dump();
    return j.at("sim").at(0).get<std::string>();
  };
  const std::string first = record("fid-s1-0000", "");
  record("fid-s1-0000", first);  // the GPU gave what the simulator gives: agreement
  args.backend = "recorded";
  ASSERT_EQ(tools::fidelity_main(args, out, err), 0) << out.str();
  EXPECT_NE(out.str().find("1 compared on GPUs, 1 agree"), std::string::npos) << out.str();
  record("fid-s1-0001", "error");  // a GPU run that failed agrees with nothing
  EXPECT_EQ(tools::fidelity_main(args, out, err), 1);
  EXPECT_NE(out.str().find("2 compared on GPUs, 1 agree"), std::string::npos) << out.str();
  std::ifstream kept(dir / "disagreements" / "fid-s1-0001.toml");
  std::stringstream text;
  text << kept.rdbuf();
  EXPECT_NE(text.str().find("# GPU: error — recorded by the test"), std::string::npos) << text.str();
  std::filesystem::remove_all(dir);
}

// A comparison that compared nothing is no agreement: exit 1, saying why.
TEST(Fidelity, RecordedWithNoGpuResultComparesNothingAndIsExitOne) {
  const auto dir = scratch_path("ppspec-fidelity-nothing");
  std::filesystem::remove_all(dir);
  tools::FidelityArgs args;
  args.programs = 3;
  args.out = dir.string();
  args.backend = "recorded";
  std::ostringstream out, err;
  EXPECT_EQ(tools::fidelity_main(args, out, err), 1) << out.str();
  EXPECT_NE(err.str().find("compared nothing: no GPU result is kept in"), std::string::npos) << err.str();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ppspec::testing
