// The command line on input that must not run: seeds out of range or that would wrap around, and
// names that would forge report lines or trace paths. Runs the ppspec binary itself, so that the
// argument parsing is the one a user gets.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>

namespace ppspec::testing {
namespace {

namespace fs = std::filesystem;

struct Ran {
  int code;
  std::string output;  // stdout and stderr
};

Ran ppspec(const std::string& args) {
  const std::string command = std::string(PPSPEC_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return {-1, "popen failed"};
  std::string out;
  std::array<char, 4096> buf{};
  for (size_t n; (n = fread(buf.data(), 1, buf.size(), p)) > 0;) out.append(buf.data(), n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

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
  EXPECT_NE(r.output.find("seed 9223372036854775808  random"), std::string::npos) << r.output;
  r = ppspec(fmt_args(kPass, "--seed 0"));
  EXPECT_EQ(r.code, 0) << r.output;
}

}  // namespace
}  // namespace ppspec::testing
