// The real dumps of traces/corpus/flight-recorder/ (PyTorch 2.11 on an H100 shared by 4 or 8
// processes, and Gloo on the CPU): every case gives the answer its README states, in both formats
// where both are kept. These are the oracles of the shapes real jobs write — wrapped rings, batched
// p2p closed by `coalesced`, uneven all_gather and all_to_all, _coalescing_manager's fast path,
// synchronous calls, Gloo's placeholder table, dumps taken while the job ran.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "core/finding_kinds.h"
#include "tools/check_command.h"
#include "traces/flight_recorder.h"
#include "verify/dumps/flight_recorder_check.h"

namespace ppspec::testing {
namespace fr_corpus {
namespace {

namespace fs = std::filesystem;

const std::string kCorpus = std::string(PPSPEC_SOURCE_DIR) + "/traces/corpus/flight-recorder/";

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

bool has_note(const core::RunResult& r, const std::string& kind) {
  return std::any_of(r.notes.begin(), r.notes.end(),
                     [&](const core::Finding& n) { return core::to_string(n.kind) == kind; });
}

// Every format kept of a case, each checked.
std::vector<core::RunResult> check_both(const std::string& name) {
  std::vector<core::RunResult> out;
  for (const char* format : {"json", "pickle"}) {
    const fs::path dir = fs::path(kCorpus) / name / format;
    if (fs::is_directory(dir)) out.push_back(verify::check_flight_recorder(traces::read_fr_dir(dir.string()).dumps));
  }
  EXPECT_FALSE(out.empty()) << name;
  return out;
}

struct Expected {
  const char* name;
  core::Verdict verdict;
  core::FindingKind kind;  // the first finding's; none for a pass
  const char* summary;     // a part of its summary (or of a note, for a pass)
};

class CorpusCase : public ::testing::TestWithParam<Expected> {};

TEST_P(CorpusCase, GivesTheAnswerItsReadmeStates) {
  const Expected& e = GetParam();
  for (const core::RunResult& r : check_both(e.name)) {
    ASSERT_EQ(r.verdict, e.verdict) << e.name << ": " << (r.findings.empty() ? "" : r.findings.front().summary);
    if (r.verdict == core::Verdict::pass) {
      EXPECT_TRUE(r.findings.empty());
      if (*e.summary != '\0') {
        EXPECT_TRUE(std::any_of(r.notes.begin(), r.notes.end(), [&](const core::Finding& n) {
          return has(n.summary, e.summary);
        })) << e.name;
      }
      continue;
    }
    EXPECT_EQ(r.findings.front().kind, e.kind) << e.name;
    EXPECT_TRUE(has(r.findings.front().summary, e.summary)) << e.name << ": " << r.findings.front().summary;
  }
}

const Expected kCases[] = {
    {"a2a_uneven_clean", core::Verdict::pass, core::FindingKind::none, ""},
    {"a2a_uneven_total", core::Verdict::fifo_misalignment, core::FindingKind::collective_mismatch,
     "pg 5 collective_seq_id 4: the members' all_to_all send 1024 elements in all and receive 1040"},
    {"a2a_skip", core::Verdict::fifo_misalignment, core::FindingKind::unmatched,
     "rank 3 never posted pg 5 collective_seq_id 6"},
    {"allgather_uneven_clean", core::Verdict::pass, core::FindingKind::none, ""},
    {"allgather_uneven_size", core::Verdict::fifo_misalignment, core::FindingKind::collective_mismatch,
     "rank 1 posts ALLGATHER_coalesced of 4 (_broadcast_oop f32 [1, 16]; _broadcast_oop f32 [3, 16]"},
    {"rs_coalesced_clean", core::Verdict::pass, core::FindingKind::none, ""},
    {"rs_coalesced_short", core::Verdict::fifo_misalignment, core::FindingKind::collective_mismatch,
     "rank 3 posts reduce_scatter_tensor_coalesced f32 [16], f32 [32], -> f32 [4], f32 [8] where"},
    {"misc_clean", core::Verdict::pass, core::FindingKind::none, ""},
    {"batch_skip_recv", core::Verdict::fifo_misalignment, core::FindingKind::unmatched,
     "rank 0's send #6 to rank 2 (f32 [512]) completed, and rank 2 never posted the receive"},
    {"batch_skip_recv_big", core::Verdict::fifo_misalignment, core::FindingKind::unmatched,
     "rank 2 never posted the receive that pairs with rank 0's send #6"},
    {"batch_skip_recv_timing", core::Verdict::fifo_misalignment, core::FindingKind::unmatched,
     "rank 2 never posted the receive that pairs with rank 0's send #6"},
    {"sync_skip_recv", core::Verdict::fifo_misalignment, core::FindingKind::unmatched,
     "rank 2 never posted the receive that pairs with rank 0's send #6"},
    {"sync_all_skip_recv", core::Verdict::fifo_misalignment, core::FindingKind::unmatched,
     "rank 2 never posted the receive that pairs with rank 0's send #6"},
    {"kernel_stall", core::Verdict::hang, core::FindingKind::stalled, "ranks 0,1 are at pg 1 collective_seq_id 4"},
    {"kernel_stall_timing", core::Verdict::hang, core::FindingKind::stalled,
     "rank 1's pg 1 collective_seq_id 4 (all_reduce f32 [8, 64]) never started, and none of its communication before "
     "it is stuck"},
    {"wrapped_clean", core::Verdict::pass, core::FindingKind::none, "ring buffers wrapped"},
    {"wrapped_uneven_clean", core::Verdict::pass, core::FindingKind::none, "its calls there repeat every 1 call(s)"},
    {"pipeline8_clean", core::Verdict::hang, core::FindingKind::stalled,
     "the dumps cannot tell a slow job from a stalled one"},
    {"healthy_snapshot", core::Verdict::pass, core::FindingKind::none, "in flight, no fault found"},
    {"healthy_inflight", core::Verdict::hang, core::FindingKind::stalled,
     "the dumps cannot tell a slow job from a stalled one"},
    {"gloo_clean", core::Verdict::pass, core::FindingKind::none,
     "the dumps record no progress (Gloo leaves every entry `scheduled`) and no p2p"},
    {"gloo_tp_skip", core::Verdict::fifo_misalignment, core::FindingKind::unmatched,
     "pg 2: rank 3 posted 5 collective(s) from collective_seq_id 1, rank 2 6"},
    {"g_clean", core::Verdict::pass, core::FindingKind::none, "a hang, and any p2p, cannot be"},
    {"g_tp_skip", core::Verdict::fifo_misalignment, core::FindingKind::unmatched,
     "pg 2: rank 3 posted 11 collective(s) from collective_seq_id 1, rank 2 12"},
};
INSTANTIATE_TEST_SUITE_P(FlightRecorderCorpus, CorpusCase, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Expected>& i) { return std::string(i.param.name); });

// A skipped receive of a synchronous job is located from each rank's record order.
TEST(FlightRecorderCorpus, ASynchronousJobsSkippedReceiveIsLocated) {
  for (const core::RunResult& r : check_both("sync_skip_recv"))
    EXPECT_TRUE(std::any_of(r.findings.front().details.begin(), r.findings.front().details.end(),
                            [](const std::string& d) {
                              return has(d, "the skipped one is most likely rank 2's receive for rank 0's send #4");
                            }))
        << r.findings.front().summary;
}

// Gloo's table lists no group: members come from the entries, and the report says so; no state
// progresses, so no hang is judged and no stall is claimed.
TEST(FlightRecorderCorpus, GloosGroupsComeFromItsEntriesAndNoHangIsJudged) {
  for (const char* name : {"gloo_clean", "g_clean", "gloo_tp_skip", "g_tp_skip"})
    for (const core::RunResult& r : check_both(name)) {
      EXPECT_TRUE(has_note(r, "groups-from-entries")) << name;
      EXPECT_TRUE(has_note(r, "no-progress-recorded")) << name;
      EXPECT_FALSE(has_note(r, "execution-model")) << name;
      for (const core::Finding& f : r.findings) EXPECT_NE(f.verdict, core::Verdict::hang) << name;
    }
}

// An uneven all_to_all's totals cannot tell whose splits are wrong: no culprit is named.
TEST(FlightRecorderCorpus, UnbalancedAllToAllNamesNoCulprit) {
  for (const core::RunResult& r : check_both("a2a_uneven_total")) EXPECT_LT(r.findings.front().culprit.rank, 0);
}

// The dumps of a healthy job taken while it ran are no fault: its operations were in flight.
TEST(FlightRecorderCorpus, ALiveSnapshotIsInFlightNotAHang) {
  for (const core::RunResult& r : check_both("healthy_snapshot")) {
    EXPECT_EQ(r.verdict, core::Verdict::pass);
    EXPECT_TRUE(has_note(r, "in-flight"));
  }
}

// docs/flight-recorder.md shows real output: each `$ ppspec check PATH [--calls M]` block's lines
// (but "..." elisions) are lines `ppspec check` prints for it today.
TEST(FlightRecorderCorpus, TheDocsShowRealOutput) {
  const std::string source = std::string(PPSPEC_SOURCE_DIR) + "/";
  std::ifstream page(source + "docs/flight-recorder.md");
  ASSERT_TRUE(page) << "docs/flight-recorder.md";
  std::vector<std::vector<std::string>> blocks;
  bool in = false;
  for (std::string line; std::getline(page, line);) {
    if (line.starts_with("```")) {
      in = !in;
      if (in) blocks.emplace_back();
      continue;
    }
    if (in) blocks.back().push_back(line);
  }
  size_t shown = 0;
  for (const std::vector<std::string>& b : blocks) {
    if (b.empty() || !b.front().starts_with("$ ppspec check ")) continue;
    std::istringstream words(b.front().substr(std::string_view("$ ppspec check ").size()));
    tools::CheckArgs args;
    for (std::string w; words >> w;) {
      if (w == "--calls")
        words >> args.calls;
      else
        args.traces.push_back(source + w);
    }
    std::ostringstream out, err;
    (void)tools::check_command(args, out, err);
    std::string real = out.str();
    for (size_t at; (at = real.find(source)) != std::string::npos;) real.erase(at, source.size());
    for (size_t i = 1; i < b.size(); ++i) {
      if (b[i].find("...") != std::string::npos) continue;
      EXPECT_NE(real.find(b[i] + "\n"), std::string::npos) << b[i] << "\nreal:\n" << real;
    }
    ++shown;
  }
  EXPECT_GE(shown, 2u);
}

}  // namespace
}  // namespace fr_corpus
}  // namespace ppspec::testing
