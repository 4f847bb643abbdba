// `ppspec replay`: a recorded run re-executes byte for byte (a serving run and a program that
// deadlocks under PCT); a recording that differs from what the run does is nondeterminism with the
// first differing line; a changed scenario and a GPU trace are exit 2, saying why.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <cstring>

#include "tools/export_command.h"
#include "tools/replay_command.h"
#include "tools/run_command.h"
#include "tests/command_test.h"
#include "tests/scratch.h"

namespace ppspec::testing {
namespace {

namespace fs = std::filesystem;

const std::string kScenarioRoot = kSource + "/scenarios/";

Out replay(const std::string& trace, const std::string& scenario = {}) {
  std::ostringstream out, err;
  const int code = tools::replay_command({trace, scenario}, out, err);
  return {code, out.str(), err.str()};
}

fs::path record(const std::string& scenario, const std::string& name,
                std::optional<std::string> strategy = std::nullopt) {
  const fs::path trace = scratch_path("ppspec_replay_" + name + ".jsonl");
  std::ostringstream out, err;
  tools::RunArgs a;
  a.files = {scenario};
  a.trace = trace.string();
  a.strategy = strategy;
  a.seed = 3;
  a.seeds = 1;
  tools::run_command(a, out, err);
  EXPECT_TRUE(fs::exists(trace)) << err.str();
  return trace;
}

std::vector<std::string> lines(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> v;
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

TEST(Replay, RecordedRunsReplayByteForByte) {
  const Out s = replay(record(kScenarioRoot + "serving/pp2_tp1_k5.toml", "serving").string());
  EXPECT_EQ(s.code, 0) << s.out << s.err;
  EXPECT_NE(s.out.find("replayed byte for byte"), std::string::npos) << s.out;
  const Out p = replay(record(kScenarioRoot + "regressions/pre_56956.toml", "pre", "pct:3").string());
  EXPECT_EQ(p.code, 0) << p.out << p.err;
  EXPECT_NE(p.out.find("verdict deadlock"), std::string::npos) << p.out;
}

// A run stopped at its first finding records that one; `check` judges the whole trace afresh and
// finds both broadcast mismatches. Replay and export each say whose findings they count.
TEST(Replay, ReplayAndExportSayWhoseFindingsTheyCount) {
  const fs::path trace = record(kScenarioRoot + "regressions/pre_56956.toml", "whose", "pct:3");
  const Out r = replay(trace.string());
  EXPECT_NE(r.out.find("the run's own verdict deadlock and 1 finding(s)"), std::string::npos) << r.out;
  std::ostringstream out, err;
  tools::ExportArgs x;
  x.input = trace.string();
  x.out = scratch_path("ppspec_replay_whose.json").string();
  ASSERT_EQ(tools::export_command(x, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("the 2 finding(s) `ppspec check` gives"), std::string::npos) << out.str();
}

TEST(Replay, ARecordingTheRunDoesNotReproduceIsNondeterminismAtItsFirstLine) {
  const fs::path trace = record(kScenarioRoot + "serving/pp1_k5.toml", "edited");
  std::vector<std::string> l = lines(trace);
  ASSERT_GT(l.size(), 40u);
  const size_t at = l[40].find("\"t\":");
  ASSERT_NE(at, std::string::npos);
  l[40].insert(at + 4, "1");  // another time for event 40
  std::ofstream o(trace);
  for (const std::string& x : l) o << x << '\n';
  o.close();
  const Out r = replay(trace.string());
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict nondeterminism (replay-diverged): line 41 differs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("recorded: " + l[40]), std::string::npos) << r.out;
}

// The trailer records the findings (kind, summary, sites): one the replay does not give again is
// nondeterminism too, though every event agrees.
TEST(Replay, AFindingTheReplayDoesNotGiveAgainIsNondeterminism) {
  const fs::path trace = record(kScenarioRoot + "regressions/pre_56956.toml", "findings", "pct:3");
  std::vector<std::string> l = lines(trace);
  ASSERT_NE(l.back().find("\"findings\":[{\"verdict\":\"deadlock\""), std::string::npos) << l.back();
  const size_t at = l.back().find("\"summary\":\"");
  ASSERT_NE(at, std::string::npos);
  l.back().insert(at + 11, "another ");
  std::ofstream o(trace);
  for (const std::string& x : l) o << x << '\n';
  o.close();
  const Out r = replay(trace.string());
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find(fmt::format("line {} differs", l.size())), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("another verdict, schedule or findings"), std::string::npos) << r.out;
}

// A scenario named with --scenario must say what the recorded one said: comments and blank lines
// aside (then the trace's own copy runs, so that every file:line is the run's), or it is refused.
TEST(Replay, AChangedScenarioOrAGpuTraceIsExitTwo) {
  const fs::path copy = scratch_path("ppspec_replay_changed.toml");
  fs::copy_file(kScenarioRoot + "programs/double_post_broadcast.toml", copy, fs::copy_options::overwrite_existing);
  const fs::path trace = record(copy.string(), "changed");
  {
    std::ifstream in(copy);
    std::stringstream text;
    text << "# a comment of mine, shifting every line\n\n" << in.rdbuf();
    in.close();
    std::ofstream(copy) << text.str();
  }
  const Out commented = replay(trace.string(), copy.string());
  EXPECT_EQ(commented.code, 0) << commented.out << commented.err;
  EXPECT_NE(commented.err.find("only in comments and blank lines; using the scenario the trace embeds"),
            std::string::npos)
      << commented.err;
  std::ofstream(copy, std::ios::app) << "\n[explore]\nseeds = 3\n";
  const Out r = replay(trace.string(), copy.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("changed since this trace was recorded"), std::string::npos) << r.err;
  EXPECT_EQ(replay(trace.string()).code, 0);  // its own copy
  std::vector<std::string> l = lines(trace);
  const size_t at = l[0].find("\"backend\":\"sim\"");
  ASSERT_NE(at, std::string::npos) << l[0];
  l[0].replace(at, 15, "\"backend\":\"gpu\"");
  std::ofstream o(trace);
  for (const std::string& x : l) o << x << '\n';
  o.close();
  const Out g = replay(trace.string());
  EXPECT_EQ(g.code, 2);
  EXPECT_NE(g.err.find("hardware records no schedule to replay"), std::string::npos) << g.err;
}

// The scenario is found as `check` finds it (tools/trace_scenario.h): a header without a scenario
// hash is trusted only with --scenario, with a note saying so.
TEST(Replay, ATraceWithoutItsScenarioHashNeedsScenario) {
  const std::string scenario = kScenarioRoot + "regressions/pre_56956.toml";
  const fs::path trace = record(scenario, "nohash", "pct:3");
  std::vector<std::string> l = lines(trace);
  // The header as an older ppspec wrote it, its keys in their order (replay compares it too): the
  // hashes are 16 hex digits; the embedded scenario is the header's last field.
  for (const char* key : {"scenario_hash", "content_hash"}) {
    const size_t at = l[0].find(fmt::format(",\"{}\":\"", key));
    ASSERT_NE(at, std::string::npos) << key;
    l[0].erase(at, std::strlen(key) + 5 + 16 + 1);
  }
  const size_t text = l[0].find(",\"scenario_text\":\"");
  ASSERT_NE(text, std::string::npos);
  l[0].erase(text, l[0].size() - 1 - text);
  std::ofstream o(trace);
  for (const std::string& x : l) o << x << '\n';
  o.close();
  const Out r = replay(trace.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.err.find("records no scenario hash"), std::string::npos) << r.err;
  const Out named = replay(trace.string(), scenario);
  EXPECT_EQ(named.code, 0) << named.out << named.err;
  EXPECT_NE(named.err.find("note: no recorded scenario hash; trusting --scenario"), std::string::npos) << named.err;
}

}  // namespace
}  // namespace ppspec::testing
