// `ppspec fuzz`: a clean campaign finds nothing and reaches the engine's edges; a campaign with a
// fault finds it and shrinks it to a small file that `ppspec run` reproduces with the same verdict
// and kind; the case stream is deterministic and shards split it exactly; bad input is exit 2 with
// the file, line or flag.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fuzzer/campaign.h"
#include "loader/serving_loader.h"
#include "loader/program_loader.h"
#include "tools/fuzz_command.h"
#include "tools/run_command.h"

namespace ppspec::testing {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("ppspec_fuzz_" + name);
  fs::remove_all(d);
  return d;
}

struct Out {
  int code;
  std::string out, err;
};

Out fuzz(tools::FuzzArgs a) {
  std::ostringstream out, err;
  const int code = tools::fuzz_command(a, out, err);
  return {code, out.str(), err.str()};
}

TEST(Fuzz, ACleanCampaignFindsNothingAndReachesTheEdges) {
  fuzzer::FuzzOptions o;
  o.cases = 150;
  o.out_dir = fresh_dir("clean").string();
  std::ostringstream out, progress;
  const fuzzer::FuzzReport r = fuzzer::run_campaign(o, out, progress);
  EXPECT_EQ(r.failures, 0u) << out.str();
  EXPECT_EQ(r.cases, 150u);
  const fuzzer::Coverage& c = r.coverage;
  for (uint64_t reached : {c.programs, c.pp_gt1, c.drafts, c.graph_padding, c.chunked_prefill, c.slot_reuse, c.length_cap,
                           c.aborts, c.abort_in_flight})
    EXPECT_GT(reached, 0u) << out.str();
}

TEST(Fuzz, AFaultIsFoundAndShrunkToAFileThatReproducesIt) {
  const fs::path dir = fresh_dir("fault");
  const Out r = fuzz({.cases = "200", .out = dir.string(), .faults = "stale_drafts"});
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  const fuzzer::FuzzReport summary = fuzzer::read_summary(dir.string());
  ASSERT_EQ(summary.found.size(), 1u);
  const fuzzer::Found& f = summary.found.front();
  EXPECT_EQ(f.verdict, core::Verdict::stale_draft);
  EXPECT_EQ(f.kind, "draft-freshness");
  EXPECT_LE(f.requests, 4) << f.shrunk;
  // The file, run as a user runs it, meets the expectation the fuzzer wrote into it.
  std::ostringstream out, err;
  EXPECT_EQ(tools::run_command({.files = {f.file}}, out, err), 0) << out.str() << err.str();
  const serving::ServingScenario s = loader::parse_serving(
      [&] {
        std::ifstream in(f.file);
        return std::string(std::istreambuf_iterator<char>(in), {});
      }(),
      f.file);
  EXPECT_EQ(s.expect.verdict, core::Verdict::stale_draft);
  EXPECT_EQ(*s.expect.kind, "draft-freshness");
  EXPECT_TRUE(s.config.faults.stale_drafts);
}

TEST(Fuzz, TheCaseStreamIsDeterministicAndShardsSplitItExactly) {
  auto coverage = [](const fs::path& dir) { return fuzzer::read_summary(dir.string()); };
  const fs::path a = fresh_dir("a"), b = fresh_dir("b"), whole = fresh_dir("whole"), again = fresh_dir("again");
  ASSERT_EQ(fuzz({.cases = "20", .shard = "0/2", .out = a.string()}).code, 0);
  ASSERT_EQ(fuzz({.cases = "20", .shard = "1/2", .out = b.string()}).code, 0);
  ASSERT_EQ(fuzz({.cases = "40", .out = whole.string()}).code, 0);
  ASSERT_EQ(fuzz({.cases = "40", .out = again.string()}).code, 0);
  const fuzzer::FuzzReport merged = fuzzer::merge({coverage(a), coverage(b)});
  for (const fuzzer::FuzzReport& r : {merged, coverage(again)}) {
    const fuzzer::FuzzReport w = coverage(whole);
    EXPECT_EQ(r.cases, w.cases);
    EXPECT_EQ(r.coverage.programs, w.coverage.programs);
    EXPECT_EQ(r.coverage.drafts, w.coverage.drafts);
    EXPECT_EQ(r.coverage.slot_reuse, w.coverage.slot_reuse);
    EXPECT_EQ(r.coverage.length_cap, w.coverage.length_cap);
    EXPECT_EQ(r.coverage.aborts, w.coverage.aborts);
  }
  const Out m = fuzz({.merge = {a.string(), b.string()}});
  EXPECT_EQ(m.code, 0);
  EXPECT_NE(m.out.find("0 failures in 40 cases"), std::string::npos) << m.out;
}

TEST(Fuzz, BadInputIsExitTwoWithTheFileLineOrFlag) {
  const fs::path dir = fresh_dir("bad");
  fs::create_directories(dir);
  int files = 0;
  auto space = [&](const std::string& text) {
    const fs::path p = dir / ("space" + std::to_string(++files) + ".toml");
    std::ofstream(p) << text;
    return p.string();
  };
  struct Case {
    tools::FuzzArgs args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{.space = space("[space]\npp = [3, 2]\n"), .cases = "1"}, "space1.toml:2: [space] 'pp': an empty range: 3 > 2"},
      {{.space = space("[space]\nk = [0, 19]\n"), .cases = "1"}, "'k': [0, 19] leaves [0, 16]"},
      {{.space = space("[space]\nppp = [1, 2]\n"), .cases = "1"}, "space3.toml:2: [space]: unknown key 'ppp'"},
      {{.space = space("[space]\nfeedback = [\"fast\"]\n"), .cases = "1"}, "'feedback': expected a list of: three-message, single-payload"},
      {{.space = space("pp = 1\n"), .cases = "1"}, "space5.toml:1: the space file: unknown key 'pp'"},
      {{.shard = "3/2"}, "--shard '3/2': shard 3 of 2 does not exist"},
      {{.shard = "x"}, "--shard 'x': expected I/N"},
      {{.jobs = "0"}, "--jobs '0': expected a number of worker processes in [1, 256]"},
      {{.time = "5x"}, "--time '5x': expected seconds"},
      {{.cases = "0"}, "--cases '0': expected a count"},
      {{.faults = "stale_drafts,nope"}, "--faults: 'nope' is not a fault"},
      {{.merge = {dir.string()}}, "no summary here"},
      {{.backend = "gpu"}, "--backend 'gpu': fuzzing runs on the simulator"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    const Out r = fuzz(c.args);
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace ppspec::testing
