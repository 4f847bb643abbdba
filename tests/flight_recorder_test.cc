// PyTorch Flight Recorder dumps (`ppspec check DIR`): the corpus recorded on 2 H200s gives the
// answer its README states, one finding per root cause; every probe of
// traces/corpus/flight-recorder-probes/ gives the answer its README states (a hang is never
// `pass`); any number of ranks and groups; bad dumps are exit 2 with the file, record and field.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "tests/fr_dumps.h"
#include "tools/check_command.h"
#include "core/error.h"
#include "traces/flight_recorder.h"
#include "traces/pickle.h"
#include "verify/dumps/flight_recorder_check.h"
#include "tests/scratch.h"

namespace ppspec::testing {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

const std::string kCorpus = std::string(PPSPEC_SOURCE_DIR) + "/traces/corpus/flight-recorder/";
const std::string kProbes = std::string(PPSPEC_SOURCE_DIR) + "/traces/corpus/flight-recorder-probes/";

core::RunResult check_dir(const std::string& dir) {
  return verify::check_flight_recorder(traces::read_fr_dir(dir).dumps);
}
core::RunResult check_case(const std::string& name) { return check_dir(kCorpus + name); }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
bool any_detail(const core::Finding& f, const std::string& part) {
  return std::any_of(f.details.begin(), f.details.end(), [&](const std::string& d) { return has(d, part); });
}

TEST(FlightRecorder, TheCleanRunIsClean) {
  const core::RunResult r = check_case("clean");
  EXPECT_EQ(r.verdict, core::Verdict::pass);
  EXPECT_TRUE(r.findings.empty());
  EXPECT_EQ(r.stats.pairs, 6u) << "six sends, each paired with its receive";
  EXPECT_EQ(r.stats.collective_slots, 18u) << "eighteen broadcasts compared across both ranks";
}

TEST(FlightRecorder, ADoublePostIsOneRootCauseNamingTheExtraBroadcast) {
  const core::RunResult r = check_case("double_post");
  ASSERT_EQ(r.findings.size(), 1u) << "PyTorch's analyzer reports 9; the cause is one";
  const core::Finding& f = r.findings[0];
  EXPECT_EQ(f.verdict, core::Verdict::fifo_misalignment);
  EXPECT_EQ(core::to_string(f.kind), "collective-mismatch");
  EXPECT_TRUE(has(f.summary, "rank 1 posts an extra broadcast i64 [4, 5] on pg 1 (its collective_seq_id 10)"))
      << f.summary;
  ASSERT_GE(f.sites.size(), 2u);
  EXPECT_EQ(f.sites[0].rank, 1) << "the culprit first";
  EXPECT_EQ(f.culprit.rank, 1);
  EXPECT_EQ(f.culprit.what, core::Blame::extra);
  EXPECT_TRUE(any_detail(f, "rank 0: 15 of 24 operations completed; stuck from pg 1 collective_seq_id 10"))
      << f.details.front();
}

TEST(FlightRecorder, ANarrowBroadcastIsOneRootCauseNamingBothSizes) {
  const core::RunResult r = check_case("size_mismatch");
  ASSERT_EQ(r.findings.size(), 1u) << "PyTorch's analyzer reports 8";
  EXPECT_TRUE(has(r.findings[0].summary,
                  "pg 1 collective_seq_id 10: rank 1 posts broadcast i64 [4] where rank 0 posts broadcast i64 [4, 6]"))
      << r.findings[0].summary;
  EXPECT_EQ(r.findings[0].sites[0].rank, 1);
  EXPECT_EQ(r.findings[0].culprit.rank, 1);
}

TEST(FlightRecorder, TheCallersPythonFramesAreTheWhere) {
  const core::RunResult r = check_dir(kCorpus + "double_post/pickle");
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_TRUE(any_detail(
      r.findings[0], "rank 1's call: broadcast from step_feedback at fr_cases.py:21, from worker at fr_cases.py:48"))
      << r.findings[0].details.front();
}

// The pickles PyTorch's own analyzer reads hold what the JSON dumps hold, record for record.
TEST(FlightRecorder, ThePickleDumpsReadAsTheJsonOnesAndGiveTheSameAnswers) {
  std::vector<std::string> dirs;
  for (const char* c : {"clean", "double_post", "size_mismatch"}) dirs.push_back(kCorpus + c);
  for (const auto& p : fs::directory_iterator(kProbes))
    if (p.is_directory()) dirs.push_back(p.path().string());
  for (const std::string& dir : dirs) {
    SCOPED_TRACE(dir);
    const auto json = traces::read_fr_dir(dir + "/json").dumps;
    const auto pickle = traces::read_fr_dir(dir + "/pickle").dumps;
    ASSERT_EQ(json.size(), pickle.size());
    for (size_t r = 0; r < json.size(); ++r) {
      ASSERT_EQ(json[r].entries.size(), pickle[r].entries.size());
      for (size_t i = 0; i < json[r].entries.size(); ++i) {
        const auto& a = json[r].entries[i];
        const auto& b = pickle[r].entries[i];
        EXPECT_EQ(std::tie(a.record_id, a.group, a.collective_seq_id, a.p2p_seq_id, a.profiling_name, a.peer,
                           a.input_sizes, a.input_dtypes, a.state),
                  std::tie(b.record_id, b.group, b.collective_seq_id, b.p2p_seq_id, b.profiling_name, b.peer,
                           b.input_sizes, b.input_dtypes, b.state));
      }
      EXPECT_EQ(json[r].groups.size(), pickle[r].groups.size());
    }
    const core::RunResult a = verify::check_flight_recorder(json), b = verify::check_flight_recorder(pickle);
    EXPECT_EQ(a.verdict, b.verdict);
    ASSERT_EQ(a.findings.size(), b.findings.size());
    for (size_t i = 0; i < a.findings.size(); ++i) EXPECT_EQ(a.findings[i].kind, b.findings[i].kind);
  }
}

// ---- The probes (traces/corpus/flight-recorder-probes/README.md): each README answer ----

TEST(FlightRecorderProbes, AnAlignedHangIsAHangWithEachRanksFrontierNeverPass) {
  const core::RunResult r = check_dir(kProbes + "hang_aligned");
  ASSERT_EQ(r.verdict, core::Verdict::hang);
  const core::Finding& f = r.findings.at(0);
  EXPECT_EQ(core::to_string(f.kind), "stalled");
  EXPECT_TRUE(
      has(f.summary, "ranks 0,1 are at pg 1 collective_seq_id 16 (broadcast i64 [4, 6]), which every member posted"))
      << f.summary;
  EXPECT_TRUE(has(f.summary, "outside the communication order")) << f.summary;
  EXPECT_TRUE(any_detail(f, "rank 0: 21 of 24 operations completed; stuck from pg 1 collective_seq_id 16"));
  EXPECT_TRUE(any_detail(f, "rank 1: 21 of 24 operations completed; stuck from pg 1 collective_seq_id 16"));
}

TEST(FlightRecorderProbes, AnExtraSendIsAnUnmatchedP2pWhereRankZeroWaits) {
  const core::RunResult r = check_dir(kProbes + "extra_send");
  ASSERT_EQ(r.verdict, core::Verdict::fifo_misalignment);
  const core::Finding& f = r.findings.at(0);
  EXPECT_EQ(core::to_string(f.kind), "unmatched");
  EXPECT_TRUE(has(f.summary,
                  "the receive that pairs with rank 0's send #7 on pg 0 (default_pg) (f16 [4, 64], p2p_seq_id 7), "
                  "where rank 0 waits"))
      << f.summary;
  EXPECT_TRUE(has(f.summary, "rank 1 posted 6 receives from rank 0 where rank 0 posted 7")) << f.summary;
}

TEST(FlightRecorderProbes, AMissingReceiveIsLocatedAtStepThreeFromTheRecordOrder) {
  const core::RunResult r = check_dir(kProbes + "missing_recv");
  ASSERT_EQ(r.verdict, core::Verdict::fifo_misalignment);
  const core::Finding& f = r.findings.at(0);
  EXPECT_EQ(core::to_string(f.kind), "unmatched");
  EXPECT_TRUE(has(f.summary, "rank 1 posted 5 receives from rank 0 where rank 0 posted 6")) << f.summary;
  EXPECT_TRUE(any_detail(f, "the skipped one is most likely rank 1's receive for rank 0's send #3"))
      << f.details.front();
  EXPECT_EQ(f.culprit.rank, 1);
}

TEST(FlightRecorderProbes, ARankThatNeverJoinsAGroupIsTheCulprit) {
  const core::RunResult r = check_dir(kProbes + "rank1_never_joins");
  ASSERT_EQ(r.verdict, core::Verdict::fifo_misalignment);
  const core::Finding& f = r.findings.at(0);
  EXPECT_TRUE(has(f.summary, "rank 1 never posted pg 1 collective_seq_id 1 (broadcast i64 [4, 6]), where rank 0 waits"))
      << f.summary;
  EXPECT_TRUE(has(f.summary, "rank 1 never posted on pg 1, of which it is a member by the group table")) << f.summary;
  EXPECT_EQ(f.culprit.rank, 1);
  EXPECT_EQ(f.culprit.position, 0);
}

TEST(FlightRecorderProbes, SubgroupP2pNamesGroupLocalRanksAndTheSizeMismatchIsFound) {
  const core::RunResult r = check_dir(kProbes + "subgroup_p2p");
  EXPECT_EQ(r.stats.pairs, 6u) << "six pairs read, not zero";
  ASSERT_EQ(r.verdict, core::Verdict::fifo_misalignment);
  const core::Finding& f = r.findings.at(0);
  EXPECT_EQ(core::to_string(f.kind), "p2p-mismatch");
  EXPECT_TRUE(has(f.summary,
                  "pg 2 (activations): rank 0's send #3 to rank 1 is send f16 [4, 64], the receive it pairs with is "
                  "recv f16 [4, 32]"))
      << f.summary;
  EXPECT_EQ(f.sites.at(0).cseq, 3) << "p2p_seq_id 3";
}

TEST(FlightRecorderProbes, PyTorchsDefaultFileNamesReadLikeRankN) {
  for (const char* sub : {"json", "pickle"}) {
    const traces::FrDumpSet set = traces::read_fr_dir(kProbes + "default_names/" + sub);
    EXPECT_EQ(set.prefix, "nccl_trace_rank_");
    EXPECT_EQ(verify::check_flight_recorder(set.dumps).verdict, core::Verdict::pass);
  }
}

// One whole pattern before the mismatch is too little to tell the deviating rank by (the probe's
// README allows "cannot tell"); blaming rank 0 alone would be wrong.
TEST(FlightRecorderProbes, ASizeThatOccursElsewhereIsNeverBlamedOnTheRankThatKeepsThePattern) {
  const core::RunResult r = check_dir(kProbes + "common_size");
  ASSERT_EQ(r.findings.size(), 1u);
  const core::Finding& f = r.findings[0];
  EXPECT_TRUE(
      has(f.summary,
          "pg 1 collective_seq_id 4: rank 0 posts broadcast i64 [4, 6], rank 1 posts broadcast i64 [4, 5]; nothing "
          "tells which of them is wrong"))
      << f.summary;
  EXPECT_NE(f.culprit.rank, 0) << "never rank 0 alone";
}

TEST(FlightRecorderProbes, ACrossGroupCycleIsADeadlockWithEachRanksWait) {
  const core::RunResult r = check_dir(kProbes + "cross_group_cycle");
  ASSERT_EQ(r.verdict, core::Verdict::deadlock);
  const core::Finding& f = r.findings.at(0);
  EXPECT_EQ(core::to_string(f.kind), "cycle");
  for (const char* step : {"rank 0 waits at pg 3 (pp0) collective_seq_id 3 (broadcast i64 [4, 6]) for rank 2",
                           "rank 2 waits at pg 2 (tp1) collective_seq_id 3 (all_reduce f32 [4, 64]) for rank 3",
                           "rank 3 waits at pg 4 (pp1) collective_seq_id 3 (broadcast i64 [4, 6]) for rank 1",
                           "rank 1 waits at pg 1 (tp0) collective_seq_id 3 (all_reduce f32 [4, 64]) for rank 0"})
    EXPECT_TRUE(has(f.summary, step)) << step << "\n" << f.summary;
}

TEST(FlightRecorderProbes, AFourRankCountMismatchNamesTheShortRankAndWhoWaits) {
  const core::RunResult r = check_dir(kProbes + "four_rank_tp_skip");
  ASSERT_EQ(r.verdict, core::Verdict::fifo_misalignment);
  ASSERT_EQ(r.findings.size(), 1u);
  const core::Finding& f = r.findings[0];
  EXPECT_TRUE(
      has(f.summary, "rank 3 never posted pg 2 (tp1) collective_seq_id 8 (all_reduce f32 [4, 64]), where rank 2 waits"))
      << f.summary;
  EXPECT_TRUE(has(f.summary, "rank 3 posted 7 collective(s) on pg 2 (tp1)")) << f.summary;
  EXPECT_TRUE(has(f.summary, "equal operations cannot tell which")) << f.summary;
  EXPECT_TRUE(any_detail(f, "rank 0: all 8 operations completed"));
  EXPECT_TRUE(any_detail(f, "rank 1: all 8 operations completed"));
}

// ---- Any number of ranks and groups ----

// The seed PR's shape, pp 2 x tp 2: tp groups {0,1}, {2,3}; pp groups {0,2}, {1,3}; each step an
// all_reduce in each tp group, activations 0->2 and 1->3, feedback broadcasts on the pp groups.
FrDumps pp2_tp2(int steps, const std::function<bool(int rank, int step, const char* what)>& keep = nullptr) {
  FrDumps d(4);
  d.group("0", "default_pg", {0, 1, 2, 3});
  d.group("1", "tp0", {0, 1});
  d.group("2", "tp1", {2, 3});
  d.group("3", "pp0", {0, 2});
  d.group("4", "pp1", {1, 3});
  for (int s = 0; s < steps; ++s)
    for (int r = 0; r < 4; ++r) {
      auto on = [&](const char* what) { return !keep || keep(r, s, what); };
      const std::string tp = r < 2 ? "1" : "2", pp = r % 2 == 0 ? "3" : "4";
      if (on("ar")) d.collective(r, tp, "all_reduce", {4, 64}, "Float", "completed");
      if (on("act")) d.p2p(r, pp, r < 2, r < 2 ? r + 2 : r - 2, {4, 32}, "Half", "completed");
      if (on("bc")) d.collective(r, pp, "broadcast", {4, 6}, "Long", "completed");
    }
  return d;
}

TEST(FlightRecorderGeneral, FourRanksSixGroupsCleanPass) {
  const core::RunResult r = check_dir(pp2_tp2(5).write("pp2tp2_clean").string());
  EXPECT_EQ(r.verdict, core::Verdict::pass);
  EXPECT_EQ(r.stats.pairs, 10u) << "5 steps x 2 activation channels";
}

TEST(FlightRecorderGeneral, ARankWithoutADumpIsTheFirstSuspectAndNeverPass) {
  // Everything rank 3 did is unknown; rank 1's last broadcast on pp1 waits for it.
  FrDumps d = pp2_tp2(3);
  d.collective(1, "4", "broadcast", {4, 6}, "Long", "scheduled");
  const core::RunResult hung = check_dir(d.write("pp2tp2_missing", "rank_", 3).string());
  ASSERT_EQ(hung.verdict, core::Verdict::hang);
  EXPECT_EQ(core::to_string(hung.findings[0].kind), "missing-dump");
  EXPECT_TRUE(has(hung.findings[0].summary, "no dump of rank 3, which rank 1 waits for")) << hung.findings[0].summary;
  EXPECT_EQ(hung.findings[0].culprit.rank, 3);
  // Every present operation completed: still not a pass, with the missing rank named.
  const core::RunResult clean = check_dir(pp2_tp2(3).write("pp2tp2_missing_clean", "rank_", 2).string());
  EXPECT_EQ(clean.verdict, core::Verdict::hazard);
  EXPECT_EQ(core::to_string(clean.findings.at(0).kind), "unchecked-rank");
  EXPECT_TRUE(has(clean.findings[0].summary, "no dump of rank 2")) << clean.findings[0].summary;
}

TEST(FlightRecorderGeneral, AnOddOneOutAmongFourIsNamedByTheMajority) {
  FrDumps d(4);
  d.group("0", "world", {0, 1, 2, 3});
  for (int s = 0; s < 6; ++s)
    for (int r = 0; r < 4; ++r)
      d.collective(r, "0", "all_reduce", {r == 2 && s == 3 ? 8 : 16}, "Float", s < 3 ? "completed" : "scheduled");
  const core::RunResult r = check_dir(d.write("odd_one").string());
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].culprit.rank, 2);
  EXPECT_TRUE(has(r.findings[0].summary, "the odd one out")) << r.findings[0].summary;
}

TEST(FlightRecorderGeneral, AWrappedRingBufferIsComparedFromTheFirstIdEveryMemberHolds) {
  FrDumps d(2);
  d.group("0", "world", {0, 1});
  for (int s = 0; s < 40; ++s)
    for (int r = 0; r < 2; ++r) d.collective(r, "0", "all_reduce", {s % 2 ? 4 : 8}, "Float", "completed");
  d.wrap(0, 25);
  const core::RunResult r = check_dir(d.write("wrapped").string());
  EXPECT_EQ(r.verdict, core::Verdict::pass);
  EXPECT_EQ(r.stats.collective_slots, 25u);
  bool said = false;
  for (const core::Finding& n : r.notes)
    said = said || (core::to_string(n.kind) == "ring-buffer-wrapped" && has(n.summary, "rank 0 dropped its first 15"));
  EXPECT_TRUE(said) << "what was dropped is said";
}

TEST(FlightRecorderGeneral, GroupsThatShareANameBySplitGroupAreTwoGroups) {
  // split_group gives {0,1} and {2,3} the same name "5"; each pair agrees within itself.
  FrDumps d(4);
  d.group("5", "tp", {0, 1});
  FrDumps e(4);
  e.group("5", "tp", {2, 3});
  for (int s = 0; s < 3; ++s) {
    for (int r : {0, 1}) d.collective(r, "5", "all_reduce", {4}, "Float", "completed");
    for (int r : {2, 3}) e.collective(r, "5", "all_reduce", {8}, "Float", "completed");
  }
  const fs::path dir = d.write("split_a");
  for (int r : {2, 3}) std::ofstream(dir / ("rank_" + std::to_string(r) + ".json")) << e.dump(r).dump();
  EXPECT_EQ(check_dir(dir.string()).verdict, core::Verdict::pass);
}

TEST(FlightRecorderGeneral, GlooDumpsAreReadAndChecked) {
  FrDumps d(2, "gloo");
  d.group("0", "default_pg", {0, 1});
  for (int s = 0; s < 6; ++s)
    for (int r = 0; r < 2; ++r) d.collective(r, "0", "all_reduce", {r == 1 && s == 4 ? 3 : 6}, "Float", "completed");
  const core::RunResult r = check_dir(d.write("gloo").string());
  ASSERT_EQ(r.verdict, core::Verdict::fifo_misalignment);
  EXPECT_TRUE(has(r.findings[0].summary, "rank 1 posts all_reduce f32 [3] where rank 0 posts all_reduce f32 [6]"))
      << r.findings[0].summary;
}

TEST(FlightRecorderGeneral, DumpFilesNamedOneByOneAreOneJobAndAPrefixPicksTheirs) {
  const fs::path dir = pp2_tp2(2).write("files", "nccl_trace_rank_");
  std::vector<std::string> files;
  for (int r = 0; r < 4; ++r) files.push_back((dir / ("nccl_trace_rank_" + std::to_string(r) + ".json")).string());
  std::ostringstream out, err;
  EXPECT_EQ(tools::check_command({.traces = files}, out, err), 0) << out.str() << err.str();
  EXPECT_TRUE(has(out.str(), "flight-recorder (4 ranks, prefix 'nccl_trace_rank_')")) << out.str();
  // Two jobs' names in one folder: the prefix says which.
  pp2_tp2(2).write("files_other", "x_");
  for (int r = 0; r < 4; ++r)
    fs::copy_file(scratch_path("ppspec_frd_files_other") / ("x_" + std::to_string(r) + ".json"),
                  dir / ("x_" + std::to_string(r) + ".json"));
  std::ostringstream out2, err2;
  EXPECT_EQ(tools::check_command({.traces = {dir.string()}}, out2, err2), 2);
  EXPECT_TRUE(has(err2.str(), "dumps under several file-name prefixes: 'nccl_trace_rank_' (4 files), 'x_' (4 files)"))
      << err2.str();
  std::ostringstream out3, err3;
  EXPECT_EQ(tools::check_command({.traces = {dir.string()}, .prefix = "x_"}, out3, err3), 0) << err3.str();
}

// 8 ranks x 2,000 entries per rank (PyTorch's default ring buffer) judged in well under a second.
TEST(FlightRecorderGeneral, EightRanksOfTwoThousandEntriesAreCheckedFast) {
  FrDumps d(8);
  d.group("0", "world", {0, 1, 2, 3, 4, 5, 6, 7});
  for (int g = 0; g < 4; ++g) d.group(std::to_string(g + 1), "tp", {2 * g, 2 * g + 1});
  for (int s = 0; s < 666; ++s)
    for (int r = 0; r < 8; ++r) {
      d.collective(r, "0", "all_reduce", {64}, "Float", "completed");
      d.collective(r, std::to_string(r / 2 + 1), "broadcast", {4, s % 3 + 4}, "Long", "completed");
      d.p2p(r, std::to_string(r / 2 + 1), r % 2 == 0, r ^ 1, {4, 32}, "Half", "completed");
      // One extra broadcast on rank 5, mid-way: one root cause, every later broadcast of its group shifted.
      if (r == 5 && s == 333) d.collective(5, "3", "broadcast", {9}, "Long", "completed");
    }
  const fs::path dir = d.write("eight");
  const auto t0 = std::chrono::steady_clock::now();
  const core::RunResult r = check_dir(dir.string());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.verdict, core::Verdict::fifo_misalignment);
  EXPECT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(r.findings[0].culprit.rank, 5);
  EXPECT_EQ(r.findings[0].culprit.what, core::Blame::extra);
#if !defined(__SANITIZE_ADDRESS__)
  EXPECT_LT(s, 1.0) << "reading and judging 8 x 2,000 entries";
#endif
  RecordProperty("seconds", std::to_string(s));
}

// ---- Bad input ----

// The clean dumps, edited: `edit` changes rank `rank`'s JSON.
fs::path edited(const std::string& name, int rank, const std::function<void(Json&)>& edit) {
  const fs::path dir = scratch_path("ppspec_fr_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (int r : {0, 1}) {
    std::ifstream in(kCorpus + "clean/json/rank_" + std::to_string(r) + ".json");
    Json j = Json::parse(in);
    if (r == rank) edit(j);
    if (!j.is_null()) std::ofstream(dir / ("rank_" + std::to_string(r) + ".json")) << j.dump();
  }
  return dir;
}

TEST(FlightRecorder, AReceiveOfAnotherSizeIsAP2pMismatch) {
  const fs::path dir = edited("p2p", 1, [](Json& j) {
    j["entries"][4]["input_sizes"] = Json::array({Json::array({4, 32})});
  });
  const core::RunResult r = check_dir(dir.string());
  ASSERT_EQ(r.findings.size(), 1u);
  EXPECT_EQ(core::to_string(r.findings[0].kind), "p2p-mismatch");
  EXPECT_TRUE(has(r.findings[0].summary,
                  "pg 0 (default_pg): rank 0's send #2 to rank 1 is send f16 [4, 64], the receive it pairs with is "
                  "recv f16 [4, 32]"))
      << r.findings[0].summary;
}

TEST(FlightRecorder, ATruncatedPickleOrOneThatNamesAClassIsExitTwo) {
  const fs::path dir = scratch_path("ppspec_fr_bad_pickle");
  std::ifstream in(kCorpus + "clean/pickle/rank_0", std::ios::binary);
  const std::string bytes(std::istreambuf_iterator<char>(in), {});
  const std::vector<std::pair<std::string, std::string>> cases = {
      {bytes.substr(0, 500), "pickle byte"},
      {std::string("\x80\x02"
                   "cos\nsystem\n."),
       "pickle byte 3: opcode 0x63 is not a plain object's"},
  };
  for (const auto& [content, message] : cases) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "rank_0", std::ios::binary) << content;
    std::ostringstream out, err;
    EXPECT_EQ(tools::check_command({.traces = {dir.string()}}, out, err), 2) << out.str();
    EXPECT_TRUE(has(err.str(), (dir / "rank_0").string() + ": " + message)) << err.str();
  }
}

TEST(FlightRecorder, BadDumpsAreExitTwoWithTheFileRecordAndField) {
  struct Bad {
    const char* name;
    std::function<void(Json&)> edit;
    const char* message;
  };
  const std::vector<Bad> cases = {
      {"version", [](Json& j) { j["version"] = "3.0"; }, "Flight Recorder format version '3.0' is not supported"},
      {"entries", [](Json& j) { j["entries"] = 5; }, "'entries': expected a list"},
      {"state", [](Json& j) { j["entries"][2]["state"] = "lost"; },
       "entry 2 (record 2): state 'lost' is not scheduled"},
      {"sizes", [](Json& j) { j["entries"][1]["input_sizes"] = "big"; },
       "entry 1 (record 1): 'input_sizes' is not a list"},
      {"peers", [](Json& j) { j["entries"][0]["profiling_name"] = "nccl:recv"; },
       "a p2p operation 'nccl:recv' without its peers"},
      {"peer_range", [](Json& j) { j["entries"][0]["profiling_name"] = "nccl:recv 1<-2"; },
       "names group-local rank 2, but group '0' has 2 members"},
      {"self", [](Json& j) { j["entries"][0]["profiling_name"] = "nccl:recv 0<-1"; },
       "group-local rank 0 of group '0' is global rank 0 (pg_config), but this is rank 1's dump"},
      {"ranks", [](Json& j) { j["pg_config"]["1"]["ranks"] = "[0, x]"; },
       "pg_config '1': ranks '[0, x]' are not a list"},
      {"twice", [](Json& j) { j["pg_config"]["1"]["ranks"] = "[1, 1]"; },
       "pg_config '1': ranks '[1, 1]' name a rank twice"},
      {"group",
       [](Json& j) {
         j["entries"][1]["process_group"] = Json::array({"7", "x"});
       },
       "names process group '7', which pg_config does not list"},
      {"float", [](Json& j) { j["entries"][1]["record_id"] = 1.0; },
       "entry 1: 'record_id' is 1.0 (number): expected an integer"},
      {"huge", [](Json& j) { j["entries"][1]["p2p_seq_id"] = 1e300; },
       "'p2p_seq_id' is 1e+300 (number): expected an integer"},
      {"u64", [](Json& j) { j["entries"][1]["pg_id"] = UINT64_MAX; },
       "'pg_id' is 18446744073709551615: out of [0, 9223372036854775807]"},
      {"dim", [](Json& j) { j["entries"][1]["input_sizes"] = Json::parse("[[4, 6.7]]"); },
       "'input_sizes'[0][1] is 6.7 (number): expected an integer"},
      {"mixed", [](Json& j) { j["pg_config"]["1"]["ranks"] = "[0, 1, 2]"; },
       "mixed runs in one folder? group '1' has members"},
  };
  for (const Bad& b : cases) {
    SCOPED_TRACE(b.name);
    const fs::path dir = edited(std::string("bad_") + b.name, 1, b.edit);
    std::ostringstream out, err;
    EXPECT_EQ(tools::check_command({.traces = {dir.string()}}, out, err), 2) << out.str();
    EXPECT_TRUE(has(err.str(), (dir / "rank_1.json").string())) << err.str();
    EXPECT_TRUE(has(err.str(), b.message)) << err.str();
  }
  // Truncated: not JSON at all, with the byte it stops at.
  const fs::path cut = edited("cut", -1, [](Json&) {});
  std::ofstream(cut / "rank_1.json") << "{\"version\": \"2.10\", \"entries\": [";
  std::ostringstream out, err;
  EXPECT_EQ(tools::check_command({.traces = {cut.string()}}, out, err), 2);
  EXPECT_TRUE(has(err.str(), "not JSON: a truncated or corrupt Flight Recorder dump (unreadable at byte 32 of 32)"))
      << err.str();
  // A number no integer or double holds: nlohmann's parser throws out_of_range, not parse_error
  // (found by fuzz_flight_recorder; it escaped as an uncaught exception).
  std::ofstream(cut / "rank_1.json")
      << R"({"version": "2.10", "pg_config": {}, "entries": [{"time_created_ns": 179604e286935756918}]})";
  std::ostringstream out3, err3;
  EXPECT_EQ(tools::check_command({.traces = {cut.string()}}, out3, err3), 2);
  EXPECT_TRUE(has(err3.str(), "holds a number too large for any field")) << err3.str();
  // A folder with no dump.
  const fs::path empty = scratch_path("ppspec_fr_empty");
  fs::remove_all(empty);
  fs::create_directories(empty / "json");
  std::ostringstream out2, err2;
  EXPECT_EQ(tools::check_command({.traces = {empty.string()}}, out2, err2), 2);
  EXPECT_TRUE(has(err2.str(), "holds no Flight Recorder dumps")) << err2.str();
}

TEST(FlightRecorder, DumpsWithNoEntryAreNothingCheckedNotAPass) {
  FrDumps d(2);
  d.group("0", "world", {0, 1});
  std::ostringstream out, err;
  EXPECT_EQ(tools::check_command({.traces = {d.write("empty_entries").string()}}, out, err), 2) << out.str();
  EXPECT_TRUE(has(err.str(), "no dump holds an entry: nothing to check")) << err.str();
}

// The reproducers of tests/robustness-readers/ (README there): each is exit 2 naming what is wrong.
TEST(FlightRecorder, TheRobustnessReproducersAreExitTwoQuickly) {
  const std::string dir = std::string(PPSPEC_SOURCE_DIR) + "/tests/robustness-readers/";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"fr_exit3_rank_file_is_directory", "rank_1.json: named like a Flight Recorder dump, but not a regular file"},
      {"fr_exit3_stoi_peer",
       "entry 0 (record 0): a p2p operation 'nccl:send 0->2147483648' whose peers are not group-local ranks"},
      {"fr_pickle_exit3_tuple_below_mark", "pickle byte 6: TUPLE2 of missing values (or of values below the MARK)"},
      {"fr_pickle_timeout_deep_append", "values nested more than 64 deep"},
      {"fr_pickle_timeout_memo_bomb", "pickle byte"},
      {"fr_silent_bad_sizes", "entry 1 (record 1): 'input_sizes'[0][0] is -4: out of"},
      {"fr_silent_negative_seq_ids", "entry 0 (record 0): 'p2p_seq_id' is -5: out of"},
      {"fr_silent_numeric_conversion", "entry 1 (record 1): 'collective_seq_id' is 1.5 (number): expected an integer"},
      {"fr_silent_pg_config_id_partial", "pg_config '1junk': its name is '1'"},
  };
  for (const auto& [name, message] : cases) {
    SCOPED_TRACE(name);
    const auto t0 = std::chrono::steady_clock::now();
    std::ostringstream out, err;
    EXPECT_EQ(tools::check_command({.traces = {dir + name}}, out, err), 2) << out.str();
    EXPECT_TRUE(has(err.str(), message)) << err.str();
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
  }
}

}  // namespace
}  // namespace ppspec::testing

namespace ppspec::testing {
namespace {

// A few hundred bytes of memo references that describe 2^30 values: refused within the budget.
TEST(Pickle, AMemoBombIsRefusedWithinItsBudget) {
  std::string p = "\x80\x02]";  // the outer list
  p += "]q";
  p.push_back('\0');  // level 0: an empty list, memo 0
  p += "a";
  for (int k = 1; k <= 30; ++k) {
    p += "](h";
    p.push_back(static_cast<char>(k - 1));
    p += "h";
    p.push_back(static_cast<char>(k - 1));
    p += "eq";
    p.push_back(static_cast<char>(k));
    p += "a";  // into the outer list
  }
  p += ".";
  const auto t0 = std::chrono::steady_clock::now();
  try {
    (void)traces::unpickle(p, "bomb");
    FAIL() << "expanded";
  } catch (const core::InputError& e) {
    EXPECT_TRUE(has(e.what(), "once memo references are expanded")) << e.what();
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 20.0);
}

}  // namespace
}  // namespace ppspec::testing
