// The command line on input that must not run: seeds out of range or that would wrap around, and
// names that would forge report lines or trace paths. Runs the ppspec binary itself, so that the
// argument parsing is the one a user gets.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/ppspec_child.h"

namespace ppspec::testing {
namespace {

namespace fs = std::filesystem;

Ran ppspec(const std::string& args) { return run_ppspec(args); }

std::string fmt_args(const std::string& file, const std::string& more) { return "run '" + file + "' " + more; }

const std::string kDeadlock = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/programs/lazy_load_deadlock.toml";
const std::string kPass = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/programs/lazy_load_eager.toml";

TEST(CliInput, SeedsThatRunNothingOrWrapAreExitTwo) {
  for (const char* seed : {"-1", "18446744073709551615", "9223372036854775808", "1e3", "7x", "", "+5", "0x10"}) {
    SCOPED_TRACE(seed);
    const Ran r = ppspec(fmt_args(kDeadlock, std::string("--seed '") + seed + "'"));
    EXPECT_EQ(r.code, 2) << r.output;
    EXPECT_NE(r.output.find("--seed"), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("verdict"), std::string::npos) << "nothing ran";
  }
  for (const char* seeds : {"0", "-3", "1099511627777"}) {
    SCOPED_TRACE(seeds);
    const Ran r = ppspec(fmt_args(kDeadlock, std::string("--seeds ") + seeds));
    EXPECT_EQ(r.code, 2) << r.output;
  }
}

TEST(CliInput, TheLargestSeedsRunAndAreJudged) {
  Ran r = ppspec(fmt_args(kDeadlock, "--seed 9223372036854775807 --seeds 2"));
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("2 of 2 seeds as expected"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("seeds 9223372036854775807..9223372036854775808"), std::string::npos) << r.output;
  r = ppspec(fmt_args(kDeadlock, "--seed 9223372036854775807 --seeds 2 --verbose"));
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("seed 9223372036854775807  random"), std::string::npos) << r.output;
  const bool second =
      r.output.find("seed 9223372036854775808  random") != std::string::npos ||
      r.output.find("seed 9223372036854775808: the same report as seed 9223372036854775807") != std::string::npos;
  EXPECT_TRUE(second) << r.output;
  r = ppspec(fmt_args(kPass, "--seed 0"));
  EXPECT_EQ(r.code, 0) << r.output;
}

}  // namespace
}  // namespace ppspec::testing

namespace ppspec::testing {
namespace {

const std::string kScenarioDir = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/programs";

// A misspelt option is named first, with the closest one, before whatever CLI11 would meet next;
// a misspelt command too. Nothing runs.
TEST(CliHygiene, AnUnknownOptionOrCommandIsSaidWithDidYouMean) {
  Ran r = ppspec(fmt_args(kDeadlock, "--sedes 4"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("run: unknown option --sedes: did you mean '--seeds'?"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("File does not exist"), std::string::npos) << r.output;
  r = ppspec("rnu x.toml");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown command 'rnu': did you mean 'run'?"), std::string::npos) << r.output;
  r = ppspec(fmt_args(kDeadlock, "--frobnicate"));
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown option --frobnicate (ppspec run --help lists them)"), std::string::npos) << r.output;
}

TEST(CliHygiene, VersionNamesTheCommit) {
  const Ran r = ppspec("--version");
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_EQ(r.output.rfind("ppspec ", 0), 0u) << r.output;
  EXPECT_GT(r.output.size(), std::string("ppspec \n").size()) << r.output;
}

// A folder runs its *.toml, and many files end with a total line.
TEST(CliHygiene, AFolderRunsItsScenariosAndManyEndWithATotal) {
  const Ran r = ppspec("run '" + kScenarioDir + "'");
  EXPECT_EQ(r.code, 0) << r.output;
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(kScenarioDir)) files += e.path().extension() == ".toml";
  EXPECT_NE(
      r.output.find("total: " + std::to_string(files) + " scenario files, " + std::to_string(files) + " as expected"),
      std::string::npos)
      << r.output;
}

// Several seeds print the first finding's line, not only a count; --verbose does not repeat a
// report that is the same but for its seed.
TEST(CliHygiene, SeveralSeedsShowTheFirstFindingAndVerboseDoesNotRepeatItself) {
  Ran r = ppspec(fmt_args(kDeadlock, "--seeds 4"));
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("4 of 4 seeds as expected"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("    first finding (seed 1): deadlock (cycle): nothing can run"), std::string::npos)
      << r.output;
  const std::string same = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/programs/double_post_broadcast.toml";
  r = ppspec(fmt_args(same, "--seeds 3 --verbose"));
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("seed 2: the same report as seed 1"), std::string::npos) << r.output;
}

// A hazard that leaves the verdict pass says how to make it fail.
TEST(CliHygiene, AHazardOnlyRunSaysHowToMakeItFail) {
  const std::string inversion = kScenarioDir + "/comm_order_inversion_ok.toml";
  const Ran r = ppspec(fmt_args(inversion, ""));
  EXPECT_EQ(r.code, 0) << r.output;
  EXPECT_NE(r.output.find("note: hazard"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("set strict = true to make them fail the run"), std::string::npos) << r.output;
}

// A scenario without [expect] is explored: it runs, says what happened, and only a pass is as expected.
TEST(CliHygiene, AScenarioWithoutExpectIsExplored) {
  const fs::path dir = fs::temp_directory_path() / ("ppspec-explore-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ifstream in(kDeadlock);
  std::string text((std::istreambuf_iterator<char>(in)), {});
  text = text.substr(0, text.find("[expect]"));
  std::ofstream(dir / "explore.toml") << text;
  const Ran r = ppspec("run '" + (dir / "explore.toml").string() + "'");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("verdict deadlock (no [expect]: exploring, pass expected)"), std::string::npos) << r.output;
  fs::remove_all(dir);
}

// --json says null where nothing is known (a dump records no time; check has no expectation), and
// the culprit's rank as a field of its own.
TEST(CliHygiene, JsonSaysNullWhereNothingIsKnownAndNamesTheCulprit) {
  const Ran r =
      ppspec("check '" + std::string(PPSPEC_SOURCE_DIR) + "/traces/corpus/flight-recorder/double_post/pickle' --json");
  EXPECT_EQ(r.code, 1) << r.output;
  const nlohmann::json j = nlohmann::json::parse(r.output, nullptr, false);
  ASSERT_TRUE(j.is_array() && !j.empty()) << r.output;
  EXPECT_TRUE(j[0]["expected"].is_null());
  const nlohmann::json& f = j[0]["findings"][0];
  EXPECT_TRUE(f["time_ns"].is_null());
  EXPECT_TRUE(f["engine_step"].is_null());
  EXPECT_EQ(f["culprit_rank"], 1);
  EXPECT_TRUE(f["culprit"]["peer"].is_null());
}

// A serving finding names its request and engine step as fields, not only inside its text.
TEST(CliHygiene, JsonNamesTheRequestAndEngineStepOfAServingFinding) {
  const Ran r = ppspec("run '" + std::string(PPSPEC_SOURCE_DIR) + "/scenarios/found/stale_drafts.toml' --json");
  EXPECT_EQ(r.code, 0) << r.output;  // as expected: the scenario expects its stale draft
  const nlohmann::json j = nlohmann::json::parse(r.output, nullptr, false);
  ASSERT_TRUE(j.is_array() && !j.empty()) << r.output;
  const nlohmann::json& f = j[0]["first"];
  ASSERT_TRUE(f.is_object()) << r.output;
  EXPECT_EQ(f["verdict"], "stale-draft") << r.output;
  ASSERT_TRUE(f["request"].is_number_integer()) << r.output;
  ASSERT_TRUE(f["engine_step"].is_number_integer()) << r.output;
  const std::string summary = f["summary"];
  EXPECT_NE(summary.find(fmt::format("request {}", f["request"].get<int64_t>())), std::string::npos) << summary;
  EXPECT_NE(summary.find(fmt::format("engine step {}", f["engine_step"].get<int64_t>())), std::string::npos) << summary;
}

}  // namespace
}  // namespace ppspec::testing
