// The checker of recorded traces: GPU runs where NCCL noticed nothing, hang dumps, bad files.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>

#include "core/error.h"
#include "core/expect.h"
#include "traces/trace_reader.h"
#include "verify/dumps/trace_check.h"

namespace ppspec::testing {
namespace {

const std::string kHeader =
    R"({"ppspec_trace":1,"backend":"gpu","scenario":"t","file":"t.toml","seed":0,"strategy":"hardware"})";

std::string posted(int seq, int rank, const char* op, int peer, const char* label, int count = 8, int cseq = 0) {
  return fmt::format(
      R"({{"seq":{},"t":{},"ev":"op_posted","rank":{},"actor":"rank{}.main","comm":"pp","op_id":{},"cseq":{},"op":"{}","dtype":"i64","count":{},"{}":{},"label":"{}"}})",
      seq, seq * 1000, rank, rank, seq, cseq, op, count, std::string(op) == "broadcast" ? "root" : "peer", peer, label);
}

core::RunResult check(const std::vector<std::string>& lines) {
  std::vector<std::string> all{kHeader};
  all.insert(all.end(), lines.begin(), lines.end());
  return verify::check_lines(all, "t.jsonl");
}

TEST(Verify, SameSizeSwappedLabelsOnAGpuRunAreAMisalignment) {
  // Real NCCL completes this run: both messages are 8 x i64. The labels say they crossed.
  auto r = check({posted(0, 0, "send", 1, "sampled"), posted(1, 0, "send", 1, "drafts", 8, 1),
                  posted(2, 1, "recv", 0, "drafts"), posted(3, 1, "recv", 0, "sampled", 8, 1),
                  R"({"seq":4,"t":5000,"ev":"verdict","text":"pass"})"});
  ASSERT_EQ(r.verdict, core::Verdict::fifo_misalignment);
  EXPECT_EQ(r.findings.size(), 2u) << "both pairings are wrong";
  EXPECT_NE(r.findings[0].summary.find("label 'sampled' vs 'drafts'"), std::string::npos) << r.findings[0].summary;
  EXPECT_TRUE(r.findings[0].involves_rank(0));
  EXPECT_TRUE(r.findings[0].involves_rank(1));
}

TEST(Verify, MatchedTraceIsClean) {
  auto r = check({posted(0, 0, "send", 1, "x"), posted(1, 1, "recv", 0, "x"), posted(2, 0, "broadcast", 1, "b"),
                  posted(3, 1, "broadcast", 1, "b")});
  EXPECT_EQ(r.verdict, core::Verdict::pass);
  EXPECT_EQ(r.stats.pairs, 2u);
}

TEST(Verify, CollectiveCountMismatchIsFoundBeforeTheHang) {
  auto r = check(
      {posted(0, 1, "broadcast", 1, "drafts", 10, 2), posted(1, 0, "broadcast", 1, "sampled", 12, 2),
       R"({"seq":2,"t":9000,"ev":"op_pending","rank":0,"actor":"rank0.side","comm":"pp","op_id":1,"cseq":2,"op":"broadcast","dtype":"i64","count":12,"root":1,"label":"sampled","value":5000000000})",
       R"J({"seq":3,"t":9000,"ev":"actor_blocked","rank":1,"actor":"rank1.host","text":"cudaStreamSynchronize(rank1.side)","value":5000000000})J",
       R"({"seq":4,"t":9000,"ev":"verdict","text":"hang","value":5000000000})"});
  ASSERT_EQ(r.verdict, core::Verdict::fifo_misalignment) << "the earliest finding decides";
  ASSERT_EQ(r.findings.size(), 2u);
  EXPECT_EQ(r.findings[1].verdict, core::Verdict::hang);
  const std::string dump = r.findings[1].summary + r.findings[1].details[0] + r.findings[1].details[1];
  EXPECT_NE(dump.find("rank0: 1"), std::string::npos) << dump;
  EXPECT_NE(dump.find("pending broadcast i64[12]"), std::string::npos) << dump;
  EXPECT_NE(dump.find("inside cudaStreamSynchronize(rank1.side)"), std::string::npos) << dump;
}

// Recorded on an H200 (the GPU hang dump of scenarios/programs/persistent_kernel_lazy_deadlock.toml):
// the watchdog reports the persistent kernel that never finished as op_pending of a kernel, which
// names no communicator and no op_id. It is a hang dump, not bad input.
TEST(Verify, APendingKernelInAGpuHangDumpIsAHangNotBadInput) {
  auto r = check(
      {R"({"seq":0,"t":202184191,"ev":"actor_start","rank":0,"actor":"rank0.copier"})",
       R"({"seq":1,"t":202222350,"ev":"actor_start","rank":0,"actor":"rank0.host"})",
       R"({"seq":2,"t":203875052,"ev":"kernel_launched","rank":0,"kernel":"first_time","text":"work"})",
       R"({"seq":3,"t":3419289405,"ev":"op_pending","rank":0,"actor":"rank0.persistent","kernel":"wait_flag","spec":"exit","text":"persistent_kernel_lazy_deadlock.toml:16","value":3216521605})",
       R"J({"seq":4,"t":3419289405,"ev":"actor_blocked","rank":0,"actor":"rank0.copier","text":"cudaMemcpyAsync set_flag('exit') on rank0.copy","value":3016963398})J",
       R"J({"seq":5,"t":3419289405,"ev":"actor_blocked","rank":0,"actor":"rank0.host","text":"launch first_time[] on rank0.work","value":3215414614})J",
       R"({"seq":6,"t":3419289405,"ev":"verdict","text":"hang","value":3000000000})"});
  ASSERT_EQ(r.verdict, core::Verdict::hang);
  ASSERT_EQ(r.findings.size(), 1u);
  const std::string dump = fmt::format("{}", fmt::join(r.findings[0].details, "\n"));
  EXPECT_NE(dump.find("kernel wait_flag('exit') still running"), std::string::npos) << dump;
  // An operation's pending report still needs its communicator, and a report is of a kernel or an
  // operation, not both.
  EXPECT_THROW((void)check({R"({"seq":0,"t":1,"ev":"op_pending","rank":0,"actor":"rank0.main","op_id":3,"value":5})"}),
               core::InputError);
  EXPECT_THROW(
      (void)check(
          {posted(0, 0, "send", 1, "x"),
           R"({"seq":1,"t":2,"ev":"op_pending","rank":0,"actor":"rank0.main","kernel":"k","comm":"pp","op_id":0,"op":"send","dtype":"i64","count":8,"peer":1,"value":5})"}),
      core::InputError);
}

TEST(Verify, UnmatchedSendAtTheEndOfACompletedRun) {
  auto r = check({posted(0, 0, "send", 1, "x"), posted(1, 1, "recv", 0, "x"), posted(2, 0, "send", 1, "extra", 8, 1)});
  ASSERT_EQ(r.verdict, core::Verdict::fifo_misalignment);
  EXPECT_EQ(core::to_string(r.findings[0].kind), "unmatched");
}

TEST(Verify, MalformedTracesAreInputErrorsWithTheLine) {
  try {
    (void)verify::check_lines({kHeader, posted(0, 0, "send", 1, "x"), "{not json"}, "bad.jsonl");
    FAIL();
  } catch (const core::InputError& e) {
    EXPECT_EQ(e.line(), 3);
  }
  try {
    (void)verify::check_lines({posted(0, 0, "send", 1, "x")}, "bad.jsonl");
    FAIL();
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("trace header"), std::string::npos);
  }
  EXPECT_THROW((void)verify::check_lines({kHeader, R"({"seq":0,"t":0,"ev":"teleport"})"}, "bad.jsonl"),
               core::InputError);
}

}  // namespace
}  // namespace ppspec::testing

namespace ppspec::testing {
namespace {

TEST(Verify, CollectivePostedByOneMemberOnlyIsUnmatched) {
  auto r =
      check({R"({"seq":0,"t":0,"ev":"comm_init","rank":0,"comm":"pp"})",
             R"({"seq":1,"t":0,"ev":"comm_init","rank":1,"comm":"pp"})", posted(2, 1, "broadcast", 1, "drafts", 8, 0),
             posted(3, 0, "broadcast", 1, "drafts", 8, 0), posted(4, 1, "broadcast", 1, "drafts", 8, 1)});
  ASSERT_EQ(r.verdict, core::Verdict::fifo_misalignment);
  EXPECT_EQ(core::to_string(r.findings[0].kind), "unmatched");
  EXPECT_NE(r.findings[0].summary.find("collective #1"), std::string::npos) << r.findings[0].summary;
}

// The root cause of a recorded mismatch is judged from the operations posted before it; their labels
// come from lines the reader has since moved past, so the checker keeps its own copies (short
// labels were silently compared as the latest line's, long ones read freed memory under ASan).
TEST(Verify, ARecordedDoublePostIsNamedFromTheLabelsOfEarlierLines) {
  std::vector<std::string> lines;
  int seq = 0;
  const char* labels[] = {"feedback.sampled@step0", "b", "feedback.sampled@step2", "d"};
  for (int k = 0; k < 4; ++k) lines.push_back(posted(seq++, 0, "broadcast", 0, labels[k], 8, k));
  const char* rank1[] = {"feedback.sampled@step0", "b", "b", "feedback.sampled@step2"};
  for (int k = 0; k < 4; ++k) lines.push_back(posted(seq++, 1, "broadcast", 0, rank1[k], 8, k));
  const auto r = check(lines);
  ASSERT_EQ(r.verdict, core::Verdict::fifo_misalignment);
  ASSERT_FALSE(r.findings[0].details.empty());
  EXPECT_NE(r.findings[0].details[0].find(
                "rank1 posted an extra broadcast i64[8] root rank0 'b', the same one twice in a row (#1 and #2)"),
            std::string::npos)
      << r.findings[0].details[0];
}

// `check` runs the serving monitors only over a trace with engine probes: which kinds those are is
// said kind by kind (core/event.cc), never by the enum's order.
TEST(Verify, EngineProbesAreTheKindsTheEnginePublishes) {
  for (const auto k : {core::EventKind::batch_scheduled, core::EventKind::warmup_phase, core::EventKind::stage_output,
                       core::EventKind::request_scheduled, core::EventKind::gate})
    EXPECT_TRUE(core::is_engine_probe(k)) << core::to_string(k);
  for (const auto k : {core::EventKind::op_posted, core::EventKind::actor_blocked, core::EventKind::note,
                       core::EventKind::verdict, core::EventKind::module_load})
    EXPECT_FALSE(core::is_engine_probe(k)) << core::to_string(k);
}

// [expect] kind: the right verdict for the wrong reason does not meet the expectation.
TEST(Expect, KindPinsTheFirstFindingsReason) {
  core::RunResult r;
  r.verdict = core::Verdict::fifo_misalignment;
  core::Finding f;
  f.verdict = core::Verdict::fifo_misalignment;
  f.kind = core::FindingKind::gate_disagreement;
  r.findings.push_back(f);
  core::Expect x;
  x.verdict = core::Verdict::fifo_misalignment;
  EXPECT_EQ(core::expectation_mismatch(x, r), "");  // no kind pinned: the verdict alone decides
  x.kind = core::FindingKind::gate_disagreement;
  EXPECT_EQ(core::expectation_mismatch(x, r), "");
  x.kind = core::FindingKind::collective_mismatch;
  EXPECT_EQ(core::expectation_mismatch(x, r),
            "verdict fifo-misalignment of kind gate-disagreement, expected kind collective-mismatch");
}

}  // namespace
}  // namespace ppspec::testing
