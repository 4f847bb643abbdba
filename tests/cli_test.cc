// `ppspec run`: exit codes, reports, reproduce commands, --seeds, --trace, --json.
#include <gtest/gtest.h>

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "tools/check_command.h"
#include "tools/run_command.h"
#include "tests/command_test.h"
#include "tests/scratch.h"

namespace ppspec::testing {
namespace {

Out run(tools::RunArgs args) {
  std::ostringstream out, err;
  const int code = tools::run_command(args, out, err);
  return {code, out.str(), err.str()};
}

std::string temp_file(const std::string& name, const std::string& text) {
  const auto path = scratch_path("ppspec_test_" + name);
  std::ofstream(path) << text;
  return path.string();
}

TEST(Cli, LazyLoadReportShowsTheCycleAndExitsZeroWhenExpected) {
  auto r = run({.files = {kScenarios + "lazy_load_deadlock.toml"}});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("verdict deadlock (expected deadlock)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank0.host → module load → rank0.side (recv on bcast) → rank1.host → stream_sync → rank1.main "
                       "(recv on act) → rank0.host"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("digraph deadlock"), std::string::npos);
  EXPECT_NE(r.out.find("reproduce: ppspec run " + kScenarios + "lazy_load_deadlock.toml --seed 1 --strategy random"),
            std::string::npos)
      << r.out;
}

TEST(Cli, UnexpectedVerdictExitsOneWithTheReproduceCommand) {
  std::ifstream in(kScenarios + "lazy_load_deadlock.toml");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  const std::string expected = "verdict = \"deadlock\"\nkind = \"cycle\"";
  text.replace(text.find(expected), expected.size(), "verdict = \"pass\"");
  const std::string file = temp_file("unexpected.toml", text);
  auto r = run({.files = {file}, .seed = 7, .seeds = 5});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("FAIL lazy-load-deadlock  " + file +
                       "  0 of 5 seeds as expected; first unexpected: seed 7  "
                       "(verdicts: deadlock 5; expected pass)  seeds 7..11"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("not as expected: verdict deadlock, expected pass"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reproduce: ppspec run " + file + " --seed 7 --strategy random"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("seed 8"), std::string::npos) << "only the first unexpected seed's report is printed";
}

// A race between rank 0's two threads: which broadcast rank 0 posts first decides the verdict.
const char* const kRace = R"(kind = "program"
ranks = 2
[[communicator]]
name = "c"
ranks = [0, 1]
[rank.0.thread.a]
ops = [ { op = "broadcast", comm = "c", root = 1, label = "a" }, { op = "stream_sync", stream = "main" } ]
[rank.0.thread.b]
ops = [ { op = "sleep", us = 1 }, { op = "broadcast", comm = "c", root = 1, label = "b" }, { op = "stream_sync", stream = "main" } ]
[rank.1]
ops = [ { op = "broadcast", comm = "c", root = 1, label = "a" }, { op = "broadcast", comm = "c", root = 1, label = "b" },
        { op = "stream_sync", stream = "main" } ]
[expect]
verdict = "pass"
)";

TEST(Cli, SeedsPrintOneSummaryLineAndTheReportOfTheFirstUnexpectedSeedOnly) {
  const std::string file = temp_file("race.toml", kRace);
  // Each seed on its own, to know which the summary must count.
  uint64_t expected = 0, first_unexpected = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    const auto one = run({.files = {file}, .seed = seed, .seeds = 1});
    if (one.code == 0)
      ++expected;
    else if (first_unexpected == 0)
      first_unexpected = seed;
  }
  ASSERT_GT(expected, 0u) << "the race goes both ways over ten seeds";
  ASSERT_NE(first_unexpected, 0u) << "the race goes both ways over ten seeds";
  const auto r = run({.files = {file}, .seed = 1, .seeds = 10});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(
      r.out.rfind(
          fmt::format("FAIL ppspec_test_race  {}  {} of 10 seeds as expected; first unexpected: seed {}  (verdicts: ",
                      file, expected, first_unexpected),
          0),
      0u)
      << r.out;
  // The one report is the first unexpected seed's, after the summary line.
  EXPECT_NE(r.out.find(fmt::format("\nFAIL ppspec_test_race  {}  verdict ", file)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(fmt::format("seed {}  random  [", first_unexpected)), std::string::npos) << r.out;
  size_t reports = 0;
  for (size_t at = r.out.find("reproduce: "); at != std::string::npos; at = r.out.find("reproduce: ", at + 1))
    ++reports;
  EXPECT_EQ(reports, 1u) << r.out;
  EXPECT_EQ(r.out.find("ok   ppspec_test_race"), std::string::npos)
      << "no report of a seed that met the expectation" << r.out;
}

TEST(Cli, BadInputExitsTwoWithFileAndLine) {
  const std::string file = temp_file("bad.toml", "kind = \"program\"\nranks = 2\nbogus = 1\n");
  auto r = run({.files = {file}});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(file + ":3: scenario: unknown key 'bogus'"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << "nothing runs when any input is bad";
}

TEST(Cli, BadStrategyExitsTwo) {
  auto r = run({.files = {kScenarios + "lazy_load_eager.toml"}, .strategy = std::string("pct:zero")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--strategy 'pct:zero'"), std::string::npos);
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Cli, SeedsRunsEverySeedWhenAllMeetExpectationsAndSaysSoInOneLine) {
  const std::string file = kScenarios + "double_post_broadcast.toml";
  auto r = run({.files = {file}, .seeds = 20, .strategy = std::string("pct:2")});
  EXPECT_EQ(r.code, 0) << r.out;
  const std::string summary = r.out.substr(0, r.out.find('\n') + 1);
  EXPECT_EQ(summary,
            fmt::format("ok   double-post-broadcast  {}  20 of 20 seeds as expected  (verdicts: fifo-misalignment 20; "
                        "expected fifo-misalignment)  seeds 1..20  pct:2  [{}",
                        file, summary.substr(summary.rfind('[') + 1)))
      << r.out;
  // Then the first finding in one line: what the seeds found, not only how many met their expectation.
  EXPECT_EQ(
      r.out.substr(summary.size()).rfind("    first finding (seed 1): fifo-misalignment (collective-mismatch): ", 0),
      0u)
      << r.out;
  EXPECT_EQ(count_of(r.out, "\n"), 2u) << r.out;
}

TEST(Cli, VerboseSeedsPrintEverySeedsReportAndTheSummary) {
  const std::string file = kScenarios + "double_post_broadcast.toml";
  auto r = run({.files = {file}, .seeds = 20, .strategy = std::string("pct:2"), .verbose = true});
  EXPECT_EQ(r.code, 0) << r.out;
  // Each seed's report, or a line saying it is the one before it but for the seed and its times.
  const size_t full = count_of(r.out, "ok   double-post-broadcast  " + file + "  verdict fifo-misalignment");
  const size_t same = count_of(r.out, ": the same report as seed ");
  EXPECT_EQ(full + same, 20u) << r.out;
  EXPECT_GT(same, 0u) << r.out;
  EXPECT_EQ(count_of(r.out, "reproduce: "), full) << r.out;
  EXPECT_EQ(count_of(r.out, "20 of 20 seeds as expected"), 1u) << r.out;
}

TEST(Cli, OneSeedPrintsItsReportWithoutASummary) {
  auto r = run({.files = {kScenarios + "double_post_broadcast.toml"}, .seeds = 1});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("seeds as expected"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.rfind("ok   double-post-broadcast", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("reproduce: "), std::string::npos) << r.out;
}

TEST(Cli, TraceHasAHeaderEventsAndATrailer) {
  const auto trace = scratch_path("ppspec_test_trace.jsonl").string();
  auto r = run({.files = {kScenarios + "lazy_load_deadlock.toml"}, .seed = 3, .trace = trace});
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream in(trace);
  std::vector<nlohmann::json> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  ASSERT_GT(lines.size(), 10u);
  EXPECT_EQ(lines.front()["ppspec_trace"], 1);
  EXPECT_EQ(lines.front()["scenario"], "lazy-load-deadlock");
  EXPECT_EQ(lines.front()["seed"], 3);
  EXPECT_EQ(lines.front()["strategy"], "random");
  EXPECT_EQ(lines[lines.size() - 2]["ev"], "verdict");
  EXPECT_EQ(lines[lines.size() - 2]["text"], "deadlock");
  EXPECT_EQ(lines.back()["verdict"], "deadlock");
  EXPECT_TRUE(lines.back()["decisions"].is_array());
}

TEST(Cli, JsonGivesVerdictFirstFindingAndSites) {
  auto r = run({.files = {kScenarios + "double_post_broadcast.toml"}, .json = true});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u);
  EXPECT_EQ(j[0]["verdict"], "fifo-misalignment");
  EXPECT_EQ(j[0]["ok"], true);
  const auto& first = j[0]["first"];
  EXPECT_EQ(first["kind"], "collective-mismatch");
  ASSERT_EQ(first["sites"].size(), 2u);
  EXPECT_EQ(first["sites"][0]["rank"], 1);
  EXPECT_EQ(first["sites"][0]["comm"], "pp_broadcast");
  EXPECT_EQ(first["sites"][0]["cseq"], 2);
  EXPECT_NE(first["sites"][0]["what"].get<std::string>().find("i64[10]"), std::string::npos);
  EXPECT_NE(first["sites"][1]["what"].get<std::string>().find("i64[12]"), std::string::npos);
}

TEST(Cli, ServingScenarioReportsItsFiguresAsTextAndJson) {
  const std::string file = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/serving/pp2_tp1_k5.toml";
  auto r = run({.files = {file}});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("ok   pp2-tp1-k5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("24 requests"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" (0-2 warmup), acceptance 0."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tokens/serving step"), std::string::npos) << r.out;
  const std::string text = r.out;
  r = run({.files = {file}, .json = true});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j[0]["verdict"], "pass");
  EXPECT_EQ(j[0]["serving"]["requests"], 24);
  // Warmup's two synthetic steps and pp 2's feedback step are numbered first; of the later steps,
  // those that scheduled requests are the serving steps (the others scheduled none: each running
  // request still had a step in flight).
  EXPECT_EQ(j[0]["serving"]["warmup_steps"], 3);
  EXPECT_GT(j[0]["serving"]["serving_steps"].get<int64_t>(), 0);
  EXPECT_GE(j[0]["serving"]["engine_steps"].get<int64_t>(), 3 + j[0]["serving"]["serving_steps"].get<int64_t>());
  EXPECT_NE(text.find("engine steps 0-" + std::to_string(j[0]["serving"]["engine_steps"].get<int64_t>() - 1)),
            std::string::npos)
      << text;
  EXPECT_GT(j[0]["serving"]["acceptance_rate"].get<double>(), 0.2);
  EXPECT_GT(j[0]["serving"]["tokens_per_step"].get<double>(), 1.0);
}

// The headline's engine steps are the steps its findings name: every regression's first finding
// falls on one of them, and after warmup when the fault is a serving one.
TEST(Cli, AFindingsEngineStepIsOneTheHeadlineCounts) {
  const std::string dir = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/regressions";
  const auto r = run({.files = {dir}, .seeds = 1, .json = true});
  const auto j = nlohmann::json::parse(r.out);
  int checked = 0;
  for (const auto& rec : j) {
    if (!rec.contains("serving") || rec["first"].is_null() || rec["first"]["engine_step"].is_null()) continue;
    const int64_t step = rec["first"]["engine_step"].get<int64_t>();
    EXPECT_GE(step, 0) << rec["file"];
    EXPECT_LT(step, rec["serving"]["engine_steps"].get<int64_t>()) << rec["file"];
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

TEST(Cli, AWrongServingExpectationFailsWithTheReproduceCommand) {
  std::ifstream in(std::string(PPSPEC_SOURCE_DIR) + "/scenarios/serving/pp1_k5.toml");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  text.replace(text.find("verdict = \"pass\""), 16, "verdict = \"deadlock\"");
  const std::string file = temp_file("serving_unexpected.toml", text);
  auto r = run({.files = {file}, .seed = 4});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("not as expected: verdict pass, expected deadlock"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reproduce: ppspec run " + file + " --seed 4 --strategy random"), std::string::npos) << r.out;
}

TEST(Cli, ServingOnAMachineWithoutGpusIsBadInputNamingWhatIsMissing) {
  for (const char* backend : {"gpu", "both"}) {
    SCOPED_TRACE(backend);
    auto r = run({.files = {std::string(PPSPEC_SOURCE_DIR) + "/scenarios/serving/pp1_k5.toml"}, .backend = backend});
    if (r.code == 0) GTEST_SKIP() << "this machine has a GPU";
    EXPECT_EQ(r.code, 2) << r.err;
    // Built without CUDA: says so; built with it on a machine without GPUs: how many it needs and has.
    const bool says = r.err.find("built without the GPU backend") != std::string::npos ||
                      r.err.find("needs one GPU per rank; this machine has 0") != std::string::npos;
    EXPECT_TRUE(says) << r.err;
  }
}

TEST(Cli, BothBackendsCompareServingScenariosOnly) {
  auto r = run(
      {.files = {std::string(PPSPEC_SOURCE_DIR) + "/scenarios/programs/lazy_load_deadlock.toml"}, .backend = "both"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("compares serving scenarios"), std::string::npos) << r.err;
}

TEST(Cli, UnknownScenarioKindIsBadInput) {
  const std::string file = temp_file("kind.toml", "kind = \"replay\"\n");
  auto r = run({.files = {file}});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find(file + ":1: kind \"replay\" is not supported (expected \"program\" or \"serving\")"),
            std::string::npos)
      << r.err;
}

const std::string kRegressions = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/regressions/";

// `ppspec run FILE --seed N --strategy S`, as a report prints it, back into arguments.
tools::RunArgs parse_reproduce(const std::string& command, bool json) {
  std::istringstream in(command);
  std::string word, file, strategy;
  uint64_t seed = 0;
  in >> word >> word >> file;
  while (in >> word) {
    if (word == "--seed") in >> seed;
    if (word == "--strategy") in >> strategy;
  }
  return {.files = {file}, .seed = seed, .strategy = strategy, .json = json};
}

TEST(Cli, EveryFaultIsReportedWhereItHappenedAndReproducesWithThePrintedCommand) {
  for (const char* fault :
       {"stale_drafts", "double_post_drafts", "lazy_post_update", "warmup_feedback", "narrow_sampled_width",
        "uncleared_padding", "router_ignores_padding", "alias_target_embed", "pre_56956"}) {
    SCOPED_TRACE(fault);
    const std::string file = kRegressions + fault + ".toml";
    auto r = run({.files = {file}, .seeds = 1, .strategy = "pct:3", .json = true});
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    const auto first = nlohmann::json::parse(r.out).at(0);
    const std::string command = first.at("reproduce");
    EXPECT_EQ(command, "ppspec run " + file + " --seed 1 --strategy pct:3");
    // Where: a rank and its stream or host thread, and the step, in the text a person reads.
    auto text = run({.files = {file}, .seeds = 1, .strategy = "pct:3"}).out;
    EXPECT_TRUE(first.at("first").at("sites").at(0).contains("rank")) << text;
    EXPECT_NE(text.find("step"), std::string::npos) << text;
    EXPECT_TRUE(text.find(".side") != std::string::npos || text.find(".main") != std::string::npos ||
                text.find(".host") != std::string::npos)
        << text;
    EXPECT_NE(text.find("request"), std::string::npos) << text;
    EXPECT_NE(text.find("reproduce: " + command), std::string::npos) << text;
    // The printed command gives the same verdict and the same first finding.
    auto again = run(parse_reproduce(command, true));
    const auto second = nlohmann::json::parse(again.out).at(0);
    EXPECT_EQ(second.at("verdict"), first.at("verdict"));
    EXPECT_EQ(second.at("first"), first.at("first"));
  }
}

TEST(Cli, DoublePostPairsTheWideSampledReceiveWithTheNarrowDraftSend) {
  auto r = run({.files = {kRegressions + "double_post_drafts.toml"}, .seeds = 1});
  EXPECT_EQ(r.code, 0) << r.out;
  // K = 5: the extra drafts broadcast is [N, K] = [2, 5]; the next step's sampled receive [N, K+1].
  EXPECT_TRUE(std::regex_search(
      r.out,
      std::regex(R"(rank[23] rank[23]\.side sends: broadcast i64\[2, 5\] root rank[23] 'feedback\.drafts@step2')")))
      << r.out;
  EXPECT_TRUE(std::regex_search(
      r.out,
      std::regex(R"(rank[01] rank[01]\.side receives: broadcast i64\[4, 6\] root rank[23] 'feedback\.sampled@step3')")))
      << r.out;
}

TEST(Cli, ThePre56956DeadlockRunsThroughTheModuleLoadAndTheSideStreamReceive) {
  auto r = run({.files = {kRegressions + "pre_56956.toml"}, .seeds = 1});
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("rank0.host → module load → rank0.main (event wait) → rank0.side (broadcast on pp_broadcast0) → "
                       "rank2.side (event wait) → rank2.main (recv on pp0) → rank0.host"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("blocked in the module load of post_update[deferred]"), std::string::npos) << r.out;
}

TEST(Cli, JsonGivesTheVerdictTheFirstFindingAndAllFindings) {
  auto r = run({.files = {kRegressions + "warmup_feedback.toml"}, .seeds = 1, .json = true});
  const auto j = nlohmann::json::parse(r.out).at(0);
  EXPECT_EQ(j.at("verdict"), "fifo-misalignment");
  EXPECT_EQ(j.at("first"), j.at("findings").at(0));
  for (const char* key : {"verdict", "kind", "time_ns", "engine_step", "summary", "details", "sites"})
    EXPECT_TRUE(j.at("first").contains(key)) << key;
  EXPECT_EQ(j.at("notes").at(0).at("kind"), "feedback-during-warmup") << "hazards are listed after the verdict";
}

TEST(Cli, TheServingMonitorsRunOverARecordedTraceAsTheyDidOnline) {
  for (const char* name : {"stale_drafts", "uncleared_padding", "alias_target_embed", "stale_drafts_off"}) {
    SCOPED_TRACE(name);
    const std::string trace = scratch_path(std::string("ppspec_test_") + name + ".jsonl").string();
    auto online = run({.files = {kRegressions + name + ".toml"}, .seeds = 1, .trace = trace, .json = true});
    ASSERT_EQ(online.code, 0) << online.out;
    const auto live = nlohmann::json::parse(online.out).at(0);
    std::ostringstream out, err;
    const int code = tools::check_command({.traces = {trace}, .json = true}, out, err);
    const auto offline = nlohmann::json::parse(out.str()).at(0);
    EXPECT_EQ(offline.at("verdict"), live.at("verdict")) << out.str();
    EXPECT_EQ(code, live.at("verdict") == "pass" ? 0 : 1);
    if (live.at("verdict") != "pass") {
      EXPECT_EQ(offline.at("first").at("summary"), live.at("first").at("summary"));
    }
    EXPECT_EQ(err.str(), "");
  }
}

}  // namespace
}  // namespace ppspec::testing

namespace ppspec::testing {
namespace {

// One scenario's internal error (the test hook fails it as a bug of ppspec would) never loses the
// other scenarios' results, in text or --json: each is reported, and the command exits 3.
TEST(Cli, AnInternalErrorInOneScenarioKeepsTheOthersResults) {
  const std::string a = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/programs/lazy_load_deadlock.toml";
  const std::string b = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/programs/lazy_load_eager.toml";
  setenv("PPSPEC_TEST_INTERNAL_ERROR_IN", "lazy-load-deadlock", 1);
  const Out text = run({.files = {a, b}});
  tools::RunArgs j;
  j.files = {a, b};
  j.json = true;
  const Out json = run(j);
  unsetenv("PPSPEC_TEST_INTERNAL_ERROR_IN");
  EXPECT_EQ(text.code, 3);
  EXPECT_NE(text.out.find("ERROR lazy-load-deadlock"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("internal error of ppspec, no verdict: test hook in scenario lazy-load-deadlock"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("reproduce: ppspec run"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("ok   lazy-load-eager"), std::string::npos) << text.out << ": the other scenario still ran";
  EXPECT_EQ(json.code, 3);
  const nlohmann::json all = nlohmann::json::parse(json.out);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_TRUE(all[0].at("verdict").is_null());
  EXPECT_NE(all[0].at("internal_error").get<std::string>().find("test hook"), std::string::npos);
  EXPECT_EQ(all[1].at("verdict"), "pass");
}

}  // namespace
}  // namespace ppspec::testing

namespace ppspec::testing {
namespace {

// What the model oracle checked is in the report and in --json, with the requests it stopped
// following (never a silent stop).
TEST(Cli, TheModelOraclesCoverageIsInTheReportAndTheJson) {
  const std::string file = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/serving/pp2_tp1_k5.toml";
  const Out text = run({.files = {file}});
  EXPECT_NE(text.out.find("model oracle: "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("greedy samples checked over"), std::string::npos) << text.out;
  tools::RunArgs a;
  a.files = {file};
  a.json = true;
  const Out json = run(a);
  const nlohmann::json m = nlohmann::json::parse(json.out).at(0).at("model_oracle");
  EXPECT_GT(m.at("rows_checked").get<uint64_t>(), 0u);
  EXPECT_GT(m.at("samples_checked").get<uint64_t>(), 0u);
  EXPECT_GT(m.at("requests_followed").get<uint64_t>(), 0u);
  for (const char* k : {"requests_unfollowable", "requests_forgotten_idle", "requests_forgotten_for_room"})
    EXPECT_TRUE(m.contains(k)) << k;
}

}  // namespace
}  // namespace ppspec::testing
