// `ppspec fuzz`: a clean campaign finds nothing and reaches the engine's edges; a campaign with a
// fault finds it and shrinks it to a small file that `ppspec run` reproduces with the same verdict
// and kind; the case stream is deterministic and shards split it exactly; bad input is exit 2 with
// the file, line or flag.
#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fstream>
#include <sstream>

#include "tests/ppspec_child.h"
#include "scenario/fuzzer/campaign.h"
#include "scenario/serving_loader.h"
#include "scenario/program_loader.h"
#include "tools/fuzz_command.h"
#include "tools/run_command.h"
#include "tests/command_test.h"
#include "tests/scratch.h"

namespace ppspec::testing {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path d = scratch_path("ppspec_fuzz_" + name);
  fs::remove_all(d);
  return d;
}

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
  for (uint64_t reached : {c.programs, c.pp_gt1, c.drafts, c.graph_padding, c.chunked_prefill, c.slot_reuse,
                           c.length_cap, c.aborts, c.abort_in_flight})
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
  const serving::ServingScenario s = scenario::parse_serving(
      [&] {
        std::ifstream in(f.file);
        return std::string(std::istreambuf_iterator<char>(in), {});
      }(),
      f.file);
  EXPECT_EQ(s.expect.verdict, core::Verdict::stale_draft);
  EXPECT_EQ(core::to_string(*s.expect.kind), "draft-freshness");
  EXPECT_TRUE(s.config.faults.stale_drafts);
}

// A finding the engine core owns is reported as a run's report says it: "where: engine (…)", the
// engine step it has, never a rank number (-1) the engine core does not have.
TEST(Fuzz, AnEngineCoreFindingIsReportedByItsActorNotAsRankMinusOne) {
  const fs::path dir = fresh_dir("starvation");
  const Out r = fuzz({.cases = "400", .seed = "24", .out = dir.string(), .faults = "partial_prefill_stays_in_flight"});
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  const fuzzer::FuzzReport summary = fuzzer::read_summary(dir.string());
  ASSERT_EQ(summary.found.size(), 1u);
  EXPECT_EQ(summary.found.front().kind, "starvation");
  std::ifstream in(fs::path(summary.found.front().file).replace_extension(".report.txt"));
  const std::string report(std::istreambuf_iterator<char>(in), {});
  EXPECT_NE(report.find("hang (starvation), engine step "), std::string::npos) << report;
  EXPECT_NE(report.find("\n  where: engine (the engine core's scheduler)"), std::string::npos) << report;
  EXPECT_EQ(report.find("rank-1"), std::string::npos) << report;
  EXPECT_EQ(report.find("engine step -1"), std::string::npos) << report;
}

// The output folder is said; one an earlier campaign used is refused (its found files would sit
// beside the new summary), unless --force, which replaces them.
TEST(Fuzz, TheOutputFolderIsSaidAndAUsedOneNeedsForce) {
  const fs::path dir = fresh_dir("used");
  Out r = fuzz({.cases = "20", .out = dir.string(), .faults = "stale_drafts"});
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("found files and summary.json go to " + dir.string() + "/"), std::string::npos) << r.err;
  r = fuzz({.cases = "5", .out = dir.string()});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("holds an earlier campaign's files"), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(dir / "summary.json"));  // untouched
  r = fuzz({.cases = "5", .out = dir.string(), .force = true});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_FALSE(e.path().filename().string().starts_with("found-")) << e.path();
}

// The prefix-cache space draws cases that hit the cache; with full_prefix_hit on, a case stores
// into a shared block, and the shrunk file says so with prefix caching on.
TEST(Fuzz, ThePrefixCacheSpaceHitsTheCacheAndFindsAWholeHit) {
  const std::string space = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/spaces/prefix_cache.toml";
  const fs::path clean = fresh_dir("prefix_clean"), fault = fresh_dir("prefix_fault");
  const Out c = fuzz({.space = space, .cases = "60", .out = clean.string()});
  ASSERT_EQ(c.code, 0) << c.out << c.err;
  EXPECT_GT(fuzzer::read_summary(clean.string()).coverage.prefix_hits, 0u) << c.out;
  const Out r = fuzz({.space = space, .cases = "300", .out = fault.string(), .faults = "full_prefix_hit"});
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  const fuzzer::FuzzReport summary = fuzzer::read_summary(fault.string());
  ASSERT_EQ(summary.found.size(), 1u);
  EXPECT_EQ(summary.found.front().verdict, core::Verdict::kv_violation);
  EXPECT_EQ(summary.found.front().kind, "kv-ownership");
  EXPECT_NE(summary.found.front().shrunk.find("prefix-caching"), std::string::npos) << summary.found.front().shrunk;
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
      {{.space = space("[space]\nfeedback = [\"fast\"]\n"), .cases = "1"},
       "'feedback': expected a list of: three-message, single-payload"},
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

namespace ppspec::testing {
namespace {

// The ppspec binary in a child process, its output captured; the exit status.
int ppspec_child(const std::string& env, const std::string& args, std::string& output) {
  const Ran r = run_ppspec(args, env);
  output = r.output;
  return r.code < 0 ? 128 : r.code;
}

// ppspec failing on a case (the test hook makes every serving case of 2 stages fail as a bug
// would) is a finding of its own class: kept, shrunk within it, exit 3, with --jobs too.
TEST(FuzzInternalErrors, AreFindingsKeptAndShrunkAndExitThreeWithAndWithoutJobs) {
  for (const char* jobs : {"1", "2"}) {
    SCOPED_TRACE(jobs);
    const fs::path dir = fresh_dir(std::string("internal_") + jobs);
    std::string out;
    const int code = ppspec_child("PPSPEC_FUZZ_TEST_THROW_IF_PP=2",
                                  fmt::format("fuzz --cases 80 --seed 1 --jobs {} --out {}", jobs, dir.string()), out);
    EXPECT_EQ(code, 3) << out;
    EXPECT_NE(out.find("ERROR internal-error at case"), std::string::npos) << out;
    const fuzzer::FuzzReport r = fuzzer::read_summary(dir.string());
    ASSERT_FALSE(r.found.empty()) << out;
    const fuzzer::Found& f = r.found.front();
    EXPECT_TRUE(f.internal);
    EXPECT_EQ(f.kind, "internal-error");
    EXPECT_NE(f.shrunk.find("pp2"), std::string::npos) << f.shrunk << ": shrunk within its class, still 2 stages";
    EXPECT_TRUE(fs::exists(f.file)) << f.file;
  }
}

// A case that kills a worker: the parent keeps it as a finding of the crash class, exit 3. The hook
// raises SIGSEGV; in a sanitizer build the sanitizer reports it and exits with its own status.
TEST(FuzzInternalErrors, AWorkerThatCrashesLeavesItsCaseKeptAndExitThree) {
  const fs::path dir = fresh_dir("crash");
  std::string out;
  const int code = ppspec_child("PPSPEC_FUZZ_TEST_CRASH_AT_CASE=1",
                                fmt::format("fuzz --cases 6 --seed 1 --jobs 2 --out {}", dir.string()), out);
  EXPECT_EQ(code, 3) << out;
  EXPECT_TRUE(out.find("died of signal 11 (Segmentation fault) at case 1") != std::string::npos ||
              out.find("exited with status 86 (a sanitizer's report) at case 1") != std::string::npos)
      << out;
  EXPECT_NE(out.find("ERROR crash at case 1"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(dir / "job-1" / "found-seed1-case1-crash.toml")) << out;
}

// A fake ppspec that runs `crash` on any case of 2 stages and `otherwise` on the rest, and the
// first case of 2 stages of seed 1's stream.
struct FakeCrash {
  fs::path fake;
  fuzzer::FuzzOptions options;
  uint64_t index = 0;
};
FakeCrash fake_crash(const std::string& name, const std::string& crash, const std::string& otherwise) {
  FakeCrash c;
  const fs::path dir = fresh_dir(name);
  fs::create_directories(dir);
  c.fake = dir / "fake-ppspec";
  std::ofstream(c.fake) << fmt::format("#!/bin/sh\ngrep -q '^pp = 2$' \"$2\" && {}\n{}\n", crash, otherwise);
  fs::permissions(c.fake, fs::perms::owner_all);
  c.options.seed = 1;
  c.options.out_dir = dir.string();
  while (fuzzer::draw(c.options, c.index).value().is_program ||
         fuzzer::draw(c.options, c.index).value().serving.pp != 2)
    ++c.index;
  return c;
}

// Shrinking a crash reruns candidates in child processes; one stopped at its limit says so.
TEST(FuzzInternalErrors, ACrashIsShrunkInChildProcessesAndACappedShrinkIsNotCalledMinimal) {
  // Dies of SIGSEGV on any case of 2 stages, as a crashing ppspec would.
  const FakeCrash c = fake_crash("crash_shrink", "kill -SEGV $$", "exit 0");
  const fuzzer::FuzzOptions& o = c.options;
  const uint64_t index = c.index;
  const std::string fake = c.fake.string();
  const fuzzer::Found full = fuzzer::settle_crash(o, index, fuzzer::Death{SIGSEGV, 0}, fake, 200);
  EXPECT_TRUE(full.internal);
  EXPECT_EQ(full.kind, "crash");
  EXPECT_GT(full.shrink_steps, 0);
  EXPECT_NE(full.shrunk.find("pp2"), std::string::npos) << full.shrunk;
  EXPECT_TRUE(fs::exists(full.file));
  const fuzzer::Found capped = fuzzer::settle_crash(o, index, fuzzer::Death{SIGSEGV, 0}, fake, 2);
  EXPECT_TRUE(capped.capped);
  fuzzer::FuzzReport r;
  r.found.push_back(capped);
  EXPECT_NE(fuzzer::format_report(r).find("(not minimal: stopped after 2 runs)"), std::string::npos)
      << fuzzer::format_report(r);
}

// How a child ended: ppspec's own exits (0 to 3) are not deaths; a signal or a sanitizer's status is.
TEST(FuzzInternalErrors, OnlyASignalOrAStatusPpspecNeverUsesIsADeath) {
  const auto run = [](const char* script) {
    const pid_t pid = fork();
    if (pid == 0) {
      execl("/bin/sh", "sh", "-c", script, static_cast<char*>(nullptr));
      _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return fuzzer::death_of(status);
  };
  for (const char* ours : {"exit 0", "exit 1", "exit 2", "exit 3"}) EXPECT_FALSE(run(ours).has_value()) << ours;
  const auto segv = run("kill -SEGV $$");
  ASSERT_TRUE(segv.has_value());
  EXPECT_EQ(*segv, (fuzzer::Death{SIGSEGV, 0}));
  EXPECT_EQ(fuzzer::describe(*segv), "died of signal 11 (Segmentation fault)");
  const auto sanitizer = run("exit 86");
  ASSERT_TRUE(sanitizer.has_value());
  EXPECT_EQ(fuzzer::describe(*sanitizer), "exited with status 86 (a sanitizer's report)");
  EXPECT_EQ(fuzzer::describe(*run("exit 42")), "exited with status 42, which ppspec never uses");
}

// A crash's shrink follows the same death: a fake ppspec that exits as a sanitizer does on cases of
// 2 stages is shrunk within them, and the file says how it died.
TEST(FuzzInternalErrors, ASanitizersExitIsShrunkLikeASignal) {
  const FakeCrash c = fake_crash("sanitizer_shrink", "exit 86", "exit 1");
  const fuzzer::Found f =
      fuzzer::settle_crash(c.options, c.index, fuzzer::Death{0, fuzzer::kSanitizerExitStatus}, c.fake.string(), 200);
  EXPECT_GT(f.shrink_steps, 0);
  EXPECT_NE(f.shrunk.find("pp2"), std::string::npos) << f.shrunk;
  EXPECT_NE(f.summary.find("exited with status 86 (a sanitizer's report)"), std::string::npos) << f.summary;
}

}  // namespace
}  // namespace ppspec::testing

namespace ppspec::testing {
namespace {

// Ctrl-C ends a long campaign or seed sweep with its summary so far (and fuzz's summary.json),
// exit 130 as a shell reports an interrupt, not a silent 130 with nothing printed. The signal is
// sent once the command says it is under way (its first line), whatever the machine's load (at most
// a minute's wait, then sent anyway: a command that never starts fails the test, not hangs it).
struct Interrupted {
  int code = -1;
  std::string output;
  bool sent = false;  // the signal reached the command while it ran
};

// `from_terminal`: the command gets SIGINT's default action, as a shell's foreground job does (sh
// starts a background job with SIGINT ignored, which the command then keeps ignored).
Interrupted interrupt_once_started(const std::string& args, const std::string& started, const fs::path& dir,
                                   bool from_terminal = true) {
  fs::create_directories(dir);
  const std::string out = (dir / "output.txt").string();
  const std::string launch = from_terminal ? "env --default-signal=INT '" : "'";
  const std::string script = launch + std::string(PPSPEC_BINARY) + "' " + args + " > '" + out + "' 2>&1 & p=$!; " +
                             "i=0; while ! grep -q '" + started + "' '" + out +
                             "' && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; " +
                             "kill -INT $p && echo sent; wait $p; echo \"exit $?\"";
  FILE* p = popen(script.c_str(), "r");  // popen's own sh runs it
  std::string status;
  char buf[256];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) status.append(buf, n);
  pclose(p);
  std::ifstream in(out);
  Interrupted r{-1, std::string(std::istreambuf_iterator<char>(in), {})};
  r.sent = status.starts_with("sent\n");
  if (const size_t at = status.find("exit "); at != std::string::npos) r.code = std::stoi(status.substr(at + 5));
  return r;
}

TEST(CtrlC, EndsFuzzAndRunSeedsWithTheirSummarySoFar) {
  const fs::path dir = scratch_path("ppspec_fuzz_ctrl_c");
  fs::remove_all(dir);
  const Interrupted f =
      interrupt_once_started("fuzz --time 120 --out " + (dir / "out").string(), "found files", dir / "fuzz");
  EXPECT_TRUE(f.sent) << f.output;
  EXPECT_EQ(f.code, 130) << f.output;
  EXPECT_NE(f.output.find("interrupted (Ctrl-C), the campaign so far: 0 failures in "), std::string::npos) << f.output;
  const fuzzer::FuzzReport r = fuzzer::read_summary((dir / "out").string());
  EXPECT_TRUE(r.interrupted);
  const std::string scenario = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/serving/pp2_tp2_k5.toml";
  const Interrupted s = interrupt_once_started("run " + scenario + " --seeds 5000 --verbose", "^ok", dir / "run");
  EXPECT_EQ(s.code, 130) << s.output;
  EXPECT_NE(s.output.find("seeds as expected"), std::string::npos) << s.output;
  EXPECT_NE(s.output.find("ppspec run: interrupted (Ctrl-C) after "), std::string::npos) << s.output;
}

// An interrupt sent to a `--jobs` campaign's own process (kill -INT, not the terminal's Ctrl-C to the
// whole group) reaches its workers too: each stops after its case, and the merged summary says so.
TEST(CtrlC, EndsAWorkersCampaignSentToItsParentAlone) {
  const fs::path dir = scratch_path("ppspec_fuzz_jobs_ctrl_c");
  fs::remove_all(dir);
  const Interrupted f =
      interrupt_once_started("fuzz --jobs 2 --time 300 --out " + (dir / "out").string(), "worker processes", dir);
  ASSERT_TRUE(f.sent) << f.output;
  EXPECT_EQ(f.code, 130) << f.output;
  EXPECT_NE(f.output.find("interrupted (Ctrl-C), the campaign so far: "), std::string::npos) << f.output;
  EXPECT_TRUE(fuzzer::read_summary((dir / "out").string()).interrupted);
  for (int j = 0; j < 2; ++j)
    EXPECT_TRUE(fuzzer::read_summary((dir / "out" / fmt::format("job-{}", j)).string()).interrupted);
}

// A command started with Ctrl-C ignored (a script's background job, nohup) keeps it ignored: the
// signal changes nothing, and every seed runs.
TEST(CtrlC, AnIgnoredInterruptStaysIgnored) {
  const fs::path dir = scratch_path("ppspec_ctrl_c_ignored");
  fs::remove_all(dir);
  const std::string scenario = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/serving/pp2_tp1_k5.toml";
  const Interrupted s = interrupt_once_started("run " + scenario + " --seeds 60 --verbose", "^ok", dir, false);
  ASSERT_TRUE(s.sent) << "the run ended before the signal: " << s.output;
  EXPECT_EQ(s.code, 0) << s.output;
  EXPECT_NE(s.output.find("60 of 60 seeds as expected"), std::string::npos) << s.output;
  EXPECT_EQ(s.output.find("interrupted"), std::string::npos) << s.output;
}

}  // namespace
}  // namespace ppspec::testing
