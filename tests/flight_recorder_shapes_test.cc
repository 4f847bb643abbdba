// The shapes real jobs leave in their Flight Recorder dumps, each both ways — clean (no finding) and
// with one fault (found, and only it): rings wrapped at different points with p2p aligned by
// p2p_seq_id; PyTorch's synchronous calls queueing across groups; uneven all_to_all; coalesced
// groups and batched p2p closed by each closer; an unmatched operation before any cycle; runs told
// apart; dumps taken while the job ran. The dumps are written as PyTorch writes them
// (traces/fr_writer.h), pinned to PyTorch's own by FrWriterAsPyTorch below.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.h"
#include "core/finding_kinds.h"
#include "tests/fr_runs.h"
#include "tests/scratch.h"

namespace ppspec::testing {
namespace fr_shapes {
namespace {

namespace fs = std::filesystem;
using core::OpKind;
using Json = nlohmann::json;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
bool has_note(const core::RunResult& r, const std::string& kind) {
  return std::any_of(r.notes.begin(), r.notes.end(),
                     [&](const core::Finding& n) { return core::to_string(n.kind) == kind; });
}

// PyTorch's defaults: no started states.
traces::FrWriteOptions pytorch() {
  traces::FrWriteOptions o;
  o.timing = false;
  return o;
}

// pp = n on "world": stage r receives from r - 1 and sends to r + 1 in one batch, then the last
// stage broadcasts; `skip_rank` posts no batch at `skip_step`; steps from `hang_from` on do not complete.
FrJobBuilder pipeline(int n, int steps, int skip_rank = -1, int skip_step = -1, int hang_from = 1 << 30) {
  FrJobBuilder b;
  b.comm_of_all("world", n);
  int64_t group = 0;
  for (int s = 0; s < steps; ++s)
    for (int r = 0; r < n; ++r) {
      const bool done = s < hang_from;
      if (!(r == skip_rank && s == skip_step)) {
        if (r > 0) b.post(r, "world", OpKind::recv, 512, r - 1, done, group);
        if (r + 1 < n) b.post(r, "world", OpKind::send, 512, r + 1, done, group);
        ++group;
      }
      b.post(r, "world", OpKind::broadcast, 8, n - 1, done);
    }
  return b;
}

TEST(FlightRecorderShapes, RingsWrappedAtDifferentPointsAlignP2pByItsSeqIdsClean) {
  traces::FrWriteOptions o = pytorch();
  o.buffer = 90;  // the middle stages record 4 a step, the ends 3: every ring wraps at its own point
  const core::RunResult r = pipeline(8, 60).check(o);
  EXPECT_EQ(r.verdict, core::Verdict::pass) << (r.findings.empty() ? "" : r.findings.front().summary);
  EXPECT_TRUE(has_note(r, "p2p-aligned-by-pattern"));
}

TEST(FlightRecorderShapes, RingsWrappedAtDifferentPointsStillShowASkippedBatch) {
  traces::FrWriteOptions o = pytorch();
  o.buffer = 90;
  const core::RunResult r = pipeline(8, 60, 4, 55, 55).check(o);  // rank 4 skips its batch of step 55
  ASSERT_NE(r.verdict, core::Verdict::pass);
  EXPECT_TRUE(r.findings.front().involves_rank(4) || r.findings.front().culprit.rank == 4 ||
              has(r.findings.front().summary, "rank 4"))
      << r.findings.front().summary;
}

TEST(FlightRecorderShapes, SixtyFourRanksOfWrappedRingsAreCheckedCleanInUnderThreeSeconds) {
  traces::FrWriteOptions o = pytorch();
  o.buffer = 60;
  const std::vector<traces::FrDump> dumps = pipeline(64, 40).dumps(o);
  const auto start = std::chrono::steady_clock::now();
  const core::RunResult r = verify::check_flight_recorder(dumps);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.verdict, core::Verdict::pass) << (r.findings.empty() ? "" : r.findings.front().summary);
  EXPECT_LT(s, 3.0);
}

// pp 2 × tp 2: tp {0,1} {2,3}, pp {0,2} {1,3}; a step: a tp all_reduce, the pp broadcast from the
// last stage, the activations 0 -> 2 and 1 -> 3 as batches on "world". From step `die_step` on,
// rank `dead` calls nothing; a call with it, or behind one that waits for it, never completes.
FrJobBuilder pp2_tp2(int steps, int skip_recv_rank, int skip_step, int dead = -1, int die_step = 1 << 30) {
  FrJobBuilder b;
  b.comm("world", {0, 1, 2, 3});
  b.comm("tp0", {0, 1});
  b.comm("tp1", {2, 3});
  b.comm("pp0", {0, 2});
  b.comm("pp1", {1, 3});
  std::set<int> stuck;  // ranks at or behind a call that waits for the dead one
  int64_t group = 0;
  for (int s = 0; s < steps; ++s) {
    if (s == die_step) stuck.insert(dead);
    auto call = [&](std::vector<int> members, auto post) {
      const bool waits = std::any_of(members.begin(), members.end(), [&](int m) { return stuck.count(m) > 0; });
      for (int m : members)
        if (m != dead || s < die_step) post(m, !waits);
      if (waits) stuck.insert(members.begin(), members.end());
    };
    for (int t = 0; t < 2; ++t)
      call({2 * t, 2 * t + 1},
           [&](int r, bool done) { b.post(r, t == 0 ? "tp0" : "tp1", OpKind::all_reduce, 512, -1, done); });
    for (int c = 0; c < 2; ++c)
      call({c, c + 2}, [&](int r, bool done) { b.post(r, c == 0 ? "pp0" : "pp1", OpKind::broadcast, 8, c + 2, done); });
    for (int c = 0; c < 2; ++c)
      call({c, c + 2}, [&](int r, bool done) {
        if (r == skip_recv_rank && s == skip_step) return;
        b.post(r, "world", r < 2 ? OpKind::send : OpKind::recv, 512, r < 2 ? r + 2 : r - 2, done, group++);
      });
  }
  return b;
}

TEST(FlightRecorderShapes, SynchronousCallsQueueBehindTheFirstStuckOneOneFindingForAMissingDump) {
  FrJobBuilder b = pp2_tp2(6, -1, -1, 3, 3);  // rank 3 died at step 3, its dump lost
  std::vector<traces::FrDump> dumps = b.dumps(pytorch());
  std::erase_if(dumps, [](const traces::FrDump& d) { return d.rank == 3; });
  const core::RunResult r = verify::check_flight_recorder(dumps);
  ASSERT_EQ(r.verdict, core::Verdict::hang) << r.findings.front().summary;
  EXPECT_EQ(r.findings.front().kind, core::FindingKind::missing_dump);
  EXPECT_EQ(r.findings.size(), 1u)
      << r.findings.back().summary;  // every later call is queued behind, not a stall of its own
}

TEST(FlightRecorderShapes, ASkippedReceiveInABatchIsTheCauseNotALaterStall) {
  // Rank 2 skips its batched receive at step 3: rank 0's sends from there pair one later, and its
  // last never does; the all_reduce rank 0 calls after it queues behind it, and rank 1's waits.
  FrJobBuilder b = pp2_tp2(6, 2, 3);
  b.run.posts[0].back().completed = -1;
  b.post(0, "tp0", OpKind::all_reduce, 512, -1, false);
  b.post(1, "tp0", OpKind::all_reduce, 512, -1, false);
  const core::RunResult r = b.check(pytorch());
  ASSERT_EQ(r.verdict, core::Verdict::fifo_misalignment) << r.findings.front().summary;
  EXPECT_EQ(r.findings.front().kind, core::FindingKind::unmatched);
  EXPECT_TRUE(has(r.findings.front().summary, "rank 2")) << r.findings.front().summary;
  EXPECT_EQ(pp2_tp2(6, -1, -1).check(pytorch()).verdict, core::Verdict::pass);
}

// An all_to_all of uneven splits: one send and one receive with every member in one group, each
// rank's own totals recorded.
FrJobBuilder moe(int n, int steps, int64_t off_by) {
  FrJobBuilder b;
  b.comm_of_all("ep", n);
  int64_t group = 0;
  for (int s = 0; s < steps; ++s)
    for (int r = 0; r < n; ++r, ++group)
      for (int j = 0; j < n; ++j) {
        b.post(r, "ep", OpKind::send, 16 * (r + j + 1), j, true, group, core::Dtype::bf16, 16);
        const int64_t extra = r == 1 && j == 0 && s == steps - 1 ? off_by : 0;
        b.post(r, "ep", OpKind::recv, 16 * (j + r + 1) + extra, j, true, group, core::Dtype::bf16, 16);
      }
  return b;
}

TEST(FlightRecorderShapes, UnevenAllToAllIsCleanAndItsTotalsMustBalance) {
  EXPECT_EQ(moe(4, 4, 0).check(pytorch()).verdict, core::Verdict::pass);
  const core::RunResult r = moe(4, 4, 16).check(pytorch());
  ASSERT_EQ(r.verdict, core::Verdict::fifo_misalignment);
  EXPECT_TRUE(has(r.findings.front().summary, "send 1024 elements in all and receive 1040"))
      << r.findings.front().summary;
}

// An all_gather of uneven sizes (a broadcast from each member in turn: `_broadcast_oop` members
// closed by `ALLGATHER_coalesced`), and all_reduces coalesced, both ways.
FrJobBuilder gathers(int n, int steps, int odd_rank) {
  FrJobBuilder b;
  b.comm_of_all("ep", n);
  int64_t group = 0;
  for (int s = 0; s < steps; ++s)
    for (int r = 0; r < n; ++r) {
      for (int j = 0; j < n; ++j)
        b.post(r, "ep", OpKind::broadcast, 16 * (j + 1) + (r == odd_rank && j == 1 && s == 2 ? 16 : 0), j, true, group);
      ++group;
      for (int k = 0; k < 2; ++k) b.post(r, "ep", OpKind::all_reduce, 64 * (k + 1), -1, true, group);
      ++group;
    }
  return b;
}

TEST(FlightRecorderShapes, CoalescedGroupsAreOneCallEachCloserRecognised) {
  for (bool fast : {true, false}) {
    traces::FrWriteOptions o = pytorch();
    o.fast_coalescing = fast;
    EXPECT_EQ(gathers(4, 4, -1).check(o).verdict, core::Verdict::pass);
    const core::RunResult r = gathers(4, 4, 3).check(o);
    ASSERT_EQ(r.verdict, core::Verdict::fifo_misalignment);
    EXPECT_EQ(r.findings.front().culprit.rank, 3) << r.findings.front().summary;
    EXPECT_TRUE(has(r.findings.front().summary, "ALLGATHER_coalesced")) << r.findings.front().summary;
  }
}

// A rank posts its batched send twice: the extra one waits for a receive rank 1 never posts, and rank
// 1's all_reduce waits for rank 0's, queued behind that send. The cause is the unmatched send, not a
// cycle; the report must not claim the sequences agree.
TEST(FlightRecorderShapes, AnUnmatchedOperationComesBeforeAnyCycle) {
  FrJobBuilder b;
  b.comm("world", {0, 1});
  b.comm("c", {0, 1});
  int64_t group = 0;
  for (int s = 0; s < 3; ++s) {
    const bool last = s == 2;
    b.post(0, "world", OpKind::send, 512, 1, true, group++);
    if (last) b.post(0, "world", OpKind::send, 512, 1, false, group++);
    b.post(0, "c", OpKind::all_reduce, 64, -1, !last);
    b.post(1, "world", OpKind::recv, 512, 0, true, group++);
    b.post(1, "c", OpKind::all_reduce, 64, -1, !last);
  }
  const core::RunResult r = b.check(pytorch());
  ASSERT_EQ(r.verdict, core::Verdict::fifo_misalignment) << r.findings.front().summary;
  EXPECT_EQ(r.findings.front().kind, core::FindingKind::unmatched);
  EXPECT_TRUE(has(r.findings.front().summary, "rank 1 posted 3 receives from rank 0 where rank 0 posted 4"))
      << r.findings.front().summary;
}

// A send to the wrong member of a group (named by group-local ranks): the receive it was for never
// comes and the other member never asked for it; an unmatched operation, never a cycle.
TEST(FlightRecorderShapes, ASendToTheWrongPeerIsUnmatchedNotACycle) {
  FrJobBuilder b;
  b.comm("g", {0, 1, 2, 3});
  int64_t group = 0;
  for (int s = 0; s < 3; ++s) {
    const bool last = s == 2;
    b.post(1, "g", OpKind::send, 64, last ? 3 : 2, !last, group++);
    b.post(2, "g", OpKind::recv, 64, 1, !last, group++);
    for (int r = 0; r < 4; ++r) b.post(r, "g", OpKind::all_reduce, 8, -1, !last);
  }
  const core::RunResult r = b.check(pytorch());
  ASSERT_NE(r.verdict, core::Verdict::pass);
  EXPECT_NE(r.verdict, core::Verdict::deadlock) << r.findings.front().summary;
  EXPECT_EQ(r.findings.front().kind, core::FindingKind::unmatched) << r.findings.front().summary;
  // Rank 2 waits for the send rank 1 gave rank 3: rank 1 never posted it.
  EXPECT_EQ(r.findings.front().culprit.rank, 1) << r.findings.front().summary;
}

// A collective that completed on one member only: no member completes an all_reduce before every
// member called it, so a dump without it that records later times is of a rank that never called it;
// one that may predate it is a job in flight, which the dumps cannot tell from that.
TEST(FlightRecorderShapes, ACollectiveCompletedWithoutAMemberIsAMisalignmentWhereTheDumpsDateIt) {
  FrJobBuilder b;
  b.comm("tp", {0, 1});
  b.comm("solo", {1});
  for (int s = 0; s < 3; ++s)
    for (int r : {0, 1}) b.post(r, "tp", OpKind::all_reduce, 512);
  b.post(0, "tp", OpKind::all_reduce, 512);  // completed: in the simulator, a rank 1 that posted it elsewhere
  const core::RunResult maybe = b.check(pytorch());
  EXPECT_EQ(maybe.verdict, core::Verdict::pass) << (maybe.findings.empty() ? "" : maybe.findings.front().summary);
  EXPECT_TRUE(has_note(maybe, "in-flight")) << "not judged, and said so";
  b.post(1, "solo", OpKind::all_reduce, 8);  // rank 1 records a time after it completed
  const core::RunResult proven = b.check(pytorch());
  ASSERT_EQ(proven.verdict, core::Verdict::fifo_misalignment);
  EXPECT_EQ(proven.findings.front().kind, core::FindingKind::unmatched);
  EXPECT_TRUE(
      has(proven.findings.front().summary, "its collective_seq_id 4 (all_reduce f32 [512]) has no partner on rank 1"))
      << proven.findings.front().summary;
}

// A rank whose wrapped ring holds none of its calls on a group may have posted the counterpart the
// others wait for: where a full ring says it never did, a wrapped one cannot say.
TEST(FlightRecorderShapes, ARingThatHoldsNoneOfARanksCallsThereNamesNoCulprit) {
  FrJobBuilder b;
  b.comm("world", {0, 1});
  b.comm("pair", {1, 2});
  for (int s = 0; s < 2; ++s)
    for (int r : {0, 1}) b.post(r, "world", OpKind::all_reduce, 64);
  b.post(0, "world", OpKind::all_reduce, 64, -1, false);  // rank 1 never posts it
  for (int s = 0; s < 30; ++s)
    for (int r : {1, 2}) b.post(r, "pair", OpKind::all_reduce, 8);
  const core::RunResult full = b.check(pytorch());
  ASSERT_EQ(full.verdict, core::Verdict::fifo_misalignment) << full.findings.front().summary;
  EXPECT_EQ(full.findings.front().culprit.rank, 1) << full.findings.front().summary;
  traces::FrWriteOptions ring = pytorch();
  ring.buffer = 20;  // rank 1's ring keeps only its calls on "pair"
  const core::RunResult wrapped = b.check(ring);
  ASSERT_EQ(wrapped.verdict, core::Verdict::hang) << wrapped.findings.front().summary;
  EXPECT_EQ(wrapped.findings.front().culprit.rank, -1);
  EXPECT_TRUE(has(wrapped.findings.front().summary, "whether rank 1 posted the counterpart, the dumps cannot say"))
      << wrapped.findings.front().summary;
}

// Ranks that went on posting long after they got stuck: where their rings still hold the first stuck
// call, it is found; where they hold none of their completed calls, where they are stuck is unknown —
// one finding that says so, naming no one.
TEST(FlightRecorderShapes, RingsThatHoldNoCompletedCallSayWhereTheRanksAreStuckIsUnknown) {
  const FrJobBuilder b = pipeline(4, 40, -1, -1, 5);
  const core::RunResult full = b.check(pytorch());
  ASSERT_EQ(full.verdict, core::Verdict::hang);
  EXPECT_TRUE(has(full.findings.front().summary, "which every member posted")) << full.findings.front().summary;
  traces::FrWriteOptions ring = pytorch();
  ring.buffer = 30;
  const core::RunResult wrapped = b.check(ring);
  ASSERT_EQ(wrapped.verdict, core::Verdict::hang);
  ASSERT_EQ(wrapped.findings.size(), 1u) << wrapped.findings.back().summary;
  EXPECT_TRUE(has(wrapped.findings.front().summary, "the rings of ranks 0-3 hold none of their completed calls"))
      << wrapped.findings.front().summary;
  EXPECT_EQ(wrapped.findings.front().culprit.rank, -1);
}

// Two runs' dumps in one folder: the ranks of one job record side by side, and their tables agree.
TEST(FlightRecorderShapes, DumpsOfTwoRunsAreToldApartAndRefused) {
  const fs::path corpus = fs::path(PPSPEC_SOURCE_DIR) / "traces/corpus/flight-recorder";
  const fs::path dir = scratch_path("ppspec_fr_mixed");
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (int r : {0, 1})
    fs::copy_file(corpus / "a2a_uneven_clean/json" / fmt::format("rank_{}.json", r),
                  dir / fmt::format("rank_{}.json", r));
  for (int r : {2, 3})
    fs::copy_file(corpus / "allgather_uneven_clean/json" / fmt::format("rank_{}.json", r),
                  dir / fmt::format("rank_{}.json", r));
  EXPECT_NO_THROW(traces::read_fr_dir((corpus / "a2a_uneven_clean/json").string()));
  try {
    (void)traces::read_fr_dir(dir.string());
    ADD_FAILURE() << "two runs read as one";
  } catch (const core::InputError& e) {
    EXPECT_TRUE(has(e.what(), "mixed runs")) << e.what();
  }
  // The same job, half of it two hours later: refused by time alone.
  FrJobBuilder b = pipeline(4, 3);
  for (int r : {2, 3})
    for (traces::FrPosted& p : b.run.posts[r])
      p.posted += int64_t{7200} * 1000000000, p.completed += int64_t{7200} * 1000000000;
  EXPECT_THROW((void)b.dumps(pytorch()), core::InputError);
  fs::remove_all(dir);
}

// Dumps taken while a healthy job runs (each rank at its own moment): what was in flight is no
// fault where a completion found at the dump dates it, and "cannot tell" where nothing does.
TEST(FlightRecorderShapes, ADumpTakenWhileRunningIsInFlightNotAHang) {
  FrJobBuilder b = pipeline(4, 20);
  for (auto& [rank, posts] : b.run.posts)
    for (traces::FrPosted& p : posts) p.completed = p.posted + 40000;  // each call takes 40 us
  traces::FrWriteOptions o = pytorch();
  o.at = 30000 * 4;  // mid-run
  o.skew = 300;
  o.poll = 100000;  // the watchdog polls every 100 us: completions since its last poll are found by the dump
  const core::RunResult dated = b.check(o);
  EXPECT_EQ(dated.verdict, core::Verdict::pass) << (dated.findings.empty() ? "" : dated.findings.front().summary);
  EXPECT_TRUE(has_note(dated, "in-flight"));
  o.poll = 0;  // found at once, retired at once: nothing dates the dumps
  const core::RunResult undated = b.check(o);
  if (undated.verdict != core::Verdict::pass) {
    EXPECT_EQ(undated.verdict, core::Verdict::hang);
    EXPECT_TRUE(has(undated.findings.front().summary, "cannot tell a slow job from a stalled one"))
        << undated.findings.front().summary;
  }
}

std::vector<int64_t> numels(const Json& sizes) {
  std::vector<int64_t> out;
  for (const Json& dims : sizes) {
    int64_t n = 1;
    for (const Json& d : dims) n *= d.get<int64_t>();
    out.push_back(n);
  }
  return out;
}

// The writer writes what PyTorch wrote for the same program: the records of the real dumps of
// traces/corpus/flight-recorder/a2a_uneven_clean, field for field but the clock and group names.
TEST(FlightRecorderShapes, FrWriterAsPyTorch) {
  FrJobBuilder b;
  b.comm("a_world", {0, 1, 2, 3});  // pg 0 in the real job
  b.comm("b_tp0", {0, 1});
  b.comm("c_tp1", {2, 3});
  b.comm("d_pp0", {0, 2});
  b.comm("e_pp1", {1, 3});
  b.comm("f_ep", {0, 1, 2, 3});
  int64_t group = 0;
  for (int s = 0; s < 6; ++s)
    for (int r = 0; r < 4; ++r) {
      b.post(r, r < 2 ? "b_tp0" : "c_tp1", OpKind::all_reduce, 512, -1, true, -1, core::Dtype::f32, 64);
      for (int j = 0; j < 4; ++j) {
        b.post(r, "f_ep", OpKind::send, 16 * (r + j + 1), j, true, group, core::Dtype::f32, 16);
        b.post(r, "f_ep", OpKind::recv, 16 * (j + r + 1), j, true, group, core::Dtype::f32, 16);
      }
      ++group;
      b.post(r, r % 2 == 0 ? "d_pp0" : "e_pp1", OpKind::broadcast, 8, (r % 2) + 2, true, -1, core::Dtype::i64, 1);
      b.post(r, "a_world", r < 2 ? OpKind::send : OpKind::recv, 512, r < 2 ? r + 2 : r - 2, true, group++,
             core::Dtype::f32, 1);
    }
  const traces::FrExport e = traces::flight_recorder_of(b.run, pytorch());
  for (int r = 0; r < 4; ++r) {
    std::ifstream in(fs::path(PPSPEC_SOURCE_DIR) / "traces/corpus/flight-recorder/a2a_uneven_clean/json" /
                     fmt::format("rank_{}.json", r));
    const Json real = Json::parse(in);
    const Json& mine = e.dumps.at(r);
    ASSERT_EQ(real["entries"].size(), mine["entries"].size()) << "rank " << r;
    for (size_t i = 0; i < real["entries"].size(); ++i) {
      const Json& x = real["entries"][i];
      const Json& y = mine["entries"][i];
      for (const char* key : {"record_id", "collective_seq_id", "p2p_seq_id", "op_id", "profiling_name", "input_dtypes",
                              "output_dtypes", "state", "retired", "is_p2p"})
        EXPECT_EQ(x[key], y[key]) << "rank " << r << " record " << i << " " << key << ": PyTorch " << x[key]
                                  << ", ppspec " << y[key];
      // A program's buffer has rows and columns; PyTorch records the tensor's shape ([8, 1]): the
      // elements of each tensor agree.
      for (const char* key : {"input_sizes", "output_sizes"})
        EXPECT_EQ(numels(x[key]), numels(y[key])) << "rank " << r << " record " << i << " " << key;
    }
  }
}

}  // namespace
}  // namespace fr_shapes
}  // namespace ppspec::testing
