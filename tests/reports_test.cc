// Reports that explain the cause: each situation both ways — present, and the report
// says it; absent, and the report does not.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <string>

#include "core/misalignment.h"
#include "tests/test_util.h"
#include "verify/dumps/trace_check.h"
#include "tests/command_test.h"
#include "report/report.h"

namespace ppspec::testing {
namespace {

using core::Verdict;

// "test.toml:N" (as run_toml names the text): the 1-based line of `text` that holds `needle`,
// the first one after `after`.
std::string line_of(const std::string& text, const std::string& needle, const std::string& after = "") {
  const size_t at = text.find(needle, after.empty() ? 0 : text.find(after));
  EXPECT_NE(at, std::string::npos) << needle;
  const auto lines = std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n');
  return fmt::format("test.toml:{}", lines + 1);
}

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// ---- 1. a deadlock through an event names the event and the lines of its record and its wait ----

const std::string kWaitEvent = R"({ op = "wait_event", event = "got_reply", stream = "s2" },)";

TEST(Reports, AStreamEventWaitDeadlockNamesTheEventAndTheLinesOfItsRecordAndWait) {
  const std::string text = scenario_text("event_wait_deadlock.toml");
  const auto r = run_toml(text);
  ASSERT_EQ(r.verdict, Verdict::deadlock);
  const std::string report = all_text(r.findings[0]);
  const std::string record = line_of(text, R"(op = "record")");
  const std::string wait = line_of(text, kWaitEvent);
  EXPECT_TRUE(has(
      report, fmt::format("rank0.s2       waits (wait_event) for event 'got_reply', recorded on rank0.s1 at {} [{}]",
                          record, wait)))
      << report;
  EXPECT_TRUE(has(report, "has not reached the record of event 'got_reply'")) << report;
  bool wait_site = false;
  for (const core::Site& s : r.findings[0].sites) wait_site = wait_site || (s.actor == "rank0.s2" && s.origin == wait);
  EXPECT_TRUE(wait_site) << "the wait's line is the stream's site, for --json";
}

TEST(Reports, AHostEventSyncDeadlockNamesTheEventAndTheLinesOfItsRecordAndWait) {
  const std::string text =
      replaced(scenario_text("event_wait_deadlock.toml"), kWaitEvent, R"({ op = "event_sync", event = "got_reply" },)");
  const auto r = run_toml(text);
  ASSERT_EQ(r.verdict, Verdict::deadlock);
  const std::string report = all_text(r.findings[0]);
  EXPECT_TRUE(has(
      report, fmt::format("rank0.host     blocked in event_sync of event 'got_reply', recorded on rank0.s1 at {} [{}]",
                          line_of(text, R"(op = "record")"), line_of(text, R"(op = "event_sync")"))))
      << report;
}

TEST(Reports, ADeadlockWithoutAnEventSaysNothingOfEvents) {
  // The same cycle with the request sent from the reply's own stream: no event in it.
  std::string text = replaced(scenario_text("event_wait_deadlock.toml"), kWaitEvent, "");
  text = replaced(text, R"(stream = "s2", label = "request")", R"(stream = "s1", label = "request")");
  const auto r = run_toml(text);
  ASSERT_EQ(r.verdict, Verdict::deadlock);
  const std::string report = all_text(r.findings[0]);
  EXPECT_FALSE(has(report, "event '")) << report;
  EXPECT_FALSE(has(report, "recorded on")) << report;
}

// ---- 2. cross-communicator-order notes carry the lines of the operations on each rank ----

const std::string kRank1Order =
    R"(  { op = "all_reduce", comm = "B", dtype = "f32", count = 1024, stream = "s2", label = "grad.B" },
  { op = "all_reduce", comm = "A", dtype = "f32", count = 1024, stream = "s1", label = "grad.A" },)";

TEST(Reports, ACrossCommunicatorOrderNoteNamesTheLinesOfBothOrders) {
  const std::string text = scenario_text("comm_order_inversion_ok.toml");
  ASSERT_TRUE(has(text, kRank1Order));
  const auto r = run_toml(text);
  const core::Finding* note = nullptr;
  for (const auto& n : r.notes)
    if (core::to_string(n.kind) == "cross-communicator-order") note = &n;
  ASSERT_NE(note, nullptr) << "rank 1 issues B before A";
  const std::string report = all_text(*note);
  const std::string r0a = line_of(text, "label = \"grad.A\""), r0b = line_of(text, "label = \"grad.B\"");
  const std::string r1b = line_of(text, "label = \"grad.B\"", "[rank.1]"),
                    r1a = line_of(text, "label = \"grad.A\"", "[rank.1]");
  EXPECT_TRUE(
      has(report, fmt::format("rank0 issues 'A' #1 (all_reduce f32[1024] 'grad.A') on rank0.s1 at {}, then 'B' #1 "
                              "(all_reduce f32[1024] 'grad.B') on rank0.s2 at {}",
                              r0a, r0b)))
      << report;
  EXPECT_TRUE(
      has(report, fmt::format("rank1 issues 'B' #1 (all_reduce f32[1024] 'grad.B') on rank1.s2 at {}, then 'A' #1 "
                              "(all_reduce f32[1024] 'grad.A') on rank1.s1 at {}",
                              r1b, r1a)))
      << report;
  ASSERT_EQ(note->sites.size(), 4u);
  EXPECT_EQ(note->sites[0].origin, r0a);
  EXPECT_EQ(note->sites[3].origin, r1a);
}

TEST(Reports, TheSameOrderOnEveryRankGivesNoCrossCommunicatorNote) {
  const std::string same =
      R"(  { op = "all_reduce", comm = "A", dtype = "f32", count = 1024, stream = "s1", label = "grad.A" },
  { op = "all_reduce", comm = "B", dtype = "f32", count = 1024, stream = "s2", label = "grad.B" },)";
  const auto r = run_toml(replaced(scenario_text("comm_order_inversion_ok.toml"), kRank1Order, same));
  EXPECT_EQ(r.verdict, Verdict::pass);
  EXPECT_FALSE(has_note(r, "cross-communicator-order"));
}

// ---- the same message in two sizes is named as such, not as a shift ----

core::PostedOp broadcast_post(core::RankId rank, int64_t rows, int64_t cols, std::string_view label, int64_t step) {
  core::OpDesc d{core::OpKind::broadcast, core::Dtype::i64, rows * cols, cols, 1, core::Label{label, step}, false};
  return core::PostedOp{rank + 10, d, rank, rank == 0 ? "rank0.side" : "rank1.side", ""};
}

// A row the sender dropped: both ranks post step 2's 'feedback.sampled' in order, with different
// rows. The report says so (the sender first) instead of "pairs mismatched operations"; two
// different messages of one size still read as a shift.
TEST(Reports, TheSameMessageInTwoSizesIsNamedAsASizeMismatchNotAShift) {
  const auto f = core::misalignment(broadcast_post(0, 2, 6, "feedback.sampled", 2),
                                    broadcast_post(1, 1, 6, "feedback.sampled", 2), "pp_broadcast0", 0, false);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->verdict, Verdict::fifo_misalignment) << "R5: still a misalignment to NCCL";
  EXPECT_EQ(f->summary,
            "collective #0 on 'pp_broadcast0': the same message 'feedback.sampled@step2' in two sizes: count 6 vs 12 "
            "(1 row vs 2) — rank1 sends i64[1, 6], rank0 receives i64[2, 6]");
  EXPECT_TRUE(has(all_text(*f), "agree on which operation it is, not on its size")) << all_text(*f);
  const auto narrow = core::misalignment(broadcast_post(0, 2, 6, "feedback.sampled", 2),
                                         broadcast_post(1, 2, 1, "feedback.sampled", 2), "pp_broadcast0", 0, false);
  ASSERT_TRUE(narrow.has_value());
  EXPECT_TRUE(has(narrow->summary, "in two sizes: count 2 vs 12 (1 column per row vs 6)")) << narrow->summary;
  const auto shifted = core::misalignment(broadcast_post(0, 2, 6, "feedback.sampled", 3),
                                          broadcast_post(1, 1, 6, "feedback.sampled", 2), "pp_broadcast0", 0, false);
  ASSERT_TRUE(shifted.has_value());
  EXPECT_TRUE(has(shifted->summary,
                  "pairs mismatched operations: count 12 vs 6; label 'feedback.sampled@step3' vs "
                  "'feedback.sampled@step2'"))
      << shifted->summary;
  EXPECT_FALSE(has(all_text(*shifted), "not on its size")) << all_text(*shifted);
}

// ---- the cross-communicator order check: each side's own operation, and no cascade ----

constexpr std::string_view kSendThenReduce = R"(kind = "program"
name = "p2p-inversion"
ranks = 2
streams = ["s1", "s2"]
[runtime]
runtime_connect = false
concurrency = "ok"
[[communicator]]
name = "A"
ranks = [0, 1]
[[communicator]]
name = "B"
ranks = [0, 1]
[rank.0]
ops = [
  { op = "send", comm = "A", peer = 1, dtype = "f32", count = 64, stream = "s1" },
  { op = "all_reduce", comm = "B", dtype = "f32", count = 8, stream = "s2" },
]
[rank.1]
ops = [
  { op = "all_reduce", comm = "B", dtype = "f32", count = 8, stream = "s2" },
  { op = "recv", comm = "A", peer = 0, dtype = "f32", count = 64, stream = "s1" },
]
)";

// Rank 1 receives on A: the note says "recv ... from rank0" for rank 1, never rank 0's send.
TEST(Reports, AnOrderInversionDescribesEachRanksOwnOperation) {
  const auto r = run_toml(kSendThenReduce);
  const core::Finding* note = nullptr;
  for (const auto& n : r.notes)
    if (core::to_string(n.kind) == "cross-communicator-order") note = &n;
  ASSERT_NE(note, nullptr);
  const std::string text = all_text(*note);
  EXPECT_TRUE(has(text, "rank0 issues 'A' #0 (send f32[64] to rank1)")) << text;
  EXPECT_TRUE(has(text, "then 'A' #0 (recv f32[64] from rank0)")) << text;
  EXPECT_FALSE(has(text, "then 'A' #0 (send")) << text;
}

// An unlabelled double post run on as NCCL would (emulate): once the broadcasts are shifted, their
// pairings say nothing of the program's order, so no cross-communicator note follows from them.
TEST(Reports, AShiftAlreadyReportedAddsNoCrossCommunicatorNote) {
  std::string text = std::string(kSendThenReduce.substr(0, kSendThenReduce.find("[rank.0]")));
  text.replace(text.find("concurrency"), 0, "on_mismatch = \"emulate\"\n");
  text += R"(
[rank.0]
repeat = 3
ops = [
  { op = "send", comm = "A", peer = 1, dtype = "f32", count = 64, stream = "s1" },
  { op = "broadcast", comm = "B", root = 1, dtype = "i64", count = 12, stream = "s2" },
  { op = "broadcast", comm = "B", root = 1, dtype = "i64", count = 10, stream = "s2" },
  { op = "stream_sync", stream = "s2" },
]
[rank.1]
repeat = 3
ops = [
  { op = "recv", comm = "A", peer = 0, dtype = "f32", count = 64, stream = "s1" },
  { op = "broadcast", comm = "B", root = 1, dtype = "i64", count = 12, stream = "s2" },
  { op = "broadcast", comm = "B", root = 1, dtype = "i64", count = 10, stream = "s2" },
  { op = "broadcast", comm = "B", root = 1, dtype = "i64", count = 10, stream = "s2" },
  { op = "stream_sync", stream = "s2" },
]
)";
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    const auto r = run_toml(text, seed);
    EXPECT_TRUE(has_note(r, "collective-mismatch")) << "seed " << seed << ": the double post is reported";
    EXPECT_FALSE(has_note(r, "cross-communicator-order")) << "seed " << seed;
  }
}

// ---- 3. a collective mismatch among three or more ranks names the odd one out ----

// One all_reduce per rank with these counts (a negative count: the rank posts nothing), labelled
// "grad" or as `labels` says ("": no label).
std::string all_reduce(const std::vector<int>& counts, const std::vector<std::string>& labels = {}) {
  std::string s =
      fmt::format("kind = \"program\"\nranks = {}\n[[communicator]]\nname = \"tp\"\nranks = [", counts.size());
  for (size_t r = 0; r < counts.size(); ++r) s += fmt::format("{}{}", r ? ", " : "", r);
  s += "]\n";
  for (size_t r = 0; r < counts.size(); ++r) {
    s += fmt::format("[rank.{}]\n", r);
    s += counts[r] < 0 ? "ops = [ { op = \"sleep\", us = 10 } ]\n"
                       : fmt::format(
                             "ops = [ {{ op = \"all_reduce\", comm = \"tp\", count = {}{} }}, "
                             "{{ op = \"stream_sync\", stream = \"main\" }} ]\n",
                             counts[r],
                             r >= labels.size()  ? ", label = \"grad\""
                             : labels[r].empty() ? ""
                                                 : fmt::format(", label = \"{}\"", labels[r]));
  }
  return s + "[expect]\nverdict = \"fifo-misalignment\"\n";
}

// The run's first finding, and the trace checker's over the run's recorded events.
std::pair<core::Finding, core::Finding> both_ways(const std::string& text, uint64_t seed) {
  Recorder rec;
  const auto r = run_toml(text, seed, &rec);
  EXPECT_EQ(r.verdict, Verdict::fifo_misalignment);
  std::vector<std::string> lines{
      R"({"ppspec_trace":1,"backend":"sim","scenario":"t","file":"test.toml","seed":1,"strategy":"random"})"};
  lines.insert(lines.end(), rec.lines.begin(), rec.lines.end());
  const auto checked = verify::check_lines(lines, "t.jsonl");
  EXPECT_EQ(checked.verdict, Verdict::fifo_misalignment);
  if (r.findings.empty() || checked.findings.empty()) return {};
  return {r.findings.front(), checked.findings.front()};
}

TEST(Reports, ACollectiveMismatchAmongFourRanksNamesTheOddOneOutInTheRunAndInTheTrace) {
  const std::string text = all_reduce({1024, 1024, 512, 1024});
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    SCOPED_TRACE(seed);
    const auto [sim, trace] = both_ways(text, seed);
    EXPECT_EQ(core::to_string(sim.kind), "collective-mismatch");
    EXPECT_TRUE(has(sim.summary,
                    "count 1024 vs 512 — ranks 0,1,3 posted all_reduce f32[1024] 'grad'; rank 2 (the odd one "
                    "out) posted all_reduce f32[512] 'grad'"))
        << sim.summary;
    EXPECT_EQ(trace.summary, sim.summary) << "one formatter for the simulator and the trace checker";
    EXPECT_EQ(trace.time, sim.time) << "stamped when the first member disagreed";
    ASSERT_FALSE(sim.sites.empty());
    EXPECT_EQ(sim.sites[0].rank, 2) << "the odd one out is the first site";
    EXPECT_TRUE(has(all_text(sim), fmt::format("rank2 rank2.main posted all_reduce f32[512] 'grad' (op ")))
        << all_text(sim);
    EXPECT_TRUE(has(all_text(sim), line_of(text, "count = 512"))) << all_text(sim);
  }
}

TEST(Reports, ACollectiveMismatchSaysWhoHasNotPostedAndWhenNoRankIsTheOddOneOut) {
  auto [sim, trace] = both_ways(all_reduce({1024, 1024, 512, 512}), 1);
  EXPECT_TRUE(
      has(sim.summary, "— ranks 0,1 posted all_reduce f32[1024] 'grad'; ranks 2,3 posted all_reduce f32[512] 'grad'"))
      << sim.summary;
  EXPECT_FALSE(has(sim.summary, "odd one out")) << "two against two: nobody is the odd one out";
  EXPECT_EQ(trace.summary, sim.summary);
  // Rank 3 never posts: the others' report does not wait for it forever.
  std::tie(sim, trace) = both_ways(all_reduce({1024, 512, 1024, -1}), 1);
  EXPECT_TRUE(has(sim.summary,
                  "— ranks 0,2 posted all_reduce f32[1024] 'grad'; rank 1 (the odd one out) posted all_reduce "
                  "f32[512] 'grad'; rank 3 has not posted collective #0"))
      << sim.summary;
  EXPECT_EQ(trace.summary, sim.summary);
}

TEST(Reports, ACollectiveMismatchBetweenTwoRanksOrAnAgreeingOneNamesNoOddOneOut) {
  const auto [sim, trace] = both_ways(all_reduce({1024, 512}), 1);
  EXPECT_FALSE(has(sim.summary, "odd one out")) << sim.summary;
  EXPECT_FALSE(has(sim.summary, " posted ")) << "two ranks: the pairwise report, as before: " << sim.summary;
  EXPECT_TRUE(has(all_text(sim), "receives:") || has(all_text(sim), "posted all_reduce")) << all_text(sim);
  EXPECT_EQ(trace.summary, sim.summary);
  const auto agree = run_toml(replaced(all_reduce({1024, 1024, 1024, 1024}), "fifo-misalignment", "pass"));
  EXPECT_EQ(agree.verdict, Verdict::pass);
  EXPECT_TRUE(agree.notes.empty());
}

TEST(Reports, TwoLabelsDisagreeWhicheverRankPostsFirstEvenBesideAnUnlabelledPost) {
  // Rank 0 claims nothing (no label); ranks 1 and 2 claim different purposes.
  const std::string text = all_reduce({4, 4, 4}, {"", "other", "grad"});
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    SCOPED_TRACE(seed);
    const auto [sim, trace] = both_ways(text, seed);
    EXPECT_TRUE(has(sim.summary, "label 'other' vs 'grad'")) << sim.summary;
    EXPECT_TRUE(
        has(sim.summary,
            "ranks 0,1 posted all_reduce f32[4] 'other'; rank 2 (the odd one out) posted all_reduce f32[4] 'grad'"))
        << sim.summary;
    EXPECT_EQ(trace.summary, sim.summary);
  }
}

TEST(Reports, RankListsAreRangesWithinBounds) {
  EXPECT_EQ(core::rank_list({2}), "rank 2");
  EXPECT_EQ(core::rank_list({3, 0, 1}), "ranks 0,1,3");
  std::vector<core::RankId> many;
  for (core::RankId r = 0; r < 1024; ++r)
    if (r != 512) many.push_back(r);
  EXPECT_EQ(core::rank_list(many), "ranks 0-511,513-1023");
  std::vector<core::RankId> even;
  for (core::RankId r = 0; r < 100; r += 2) even.push_back(r);
  EXPECT_EQ(core::rank_list(even), "ranks 0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30,… 50 ranks in all");
}

// ---- 4. a deadlock at the eager-size boundary says the message exceeded eager_bytes ----

// Both ranks send 4 KiB, then receive (NVIDIA/nccl#2057), after a grouped exchange connected
// the pair, with this connection buffer.
std::string exchange(int64_t eager_bytes) {
  return replaced(scenario_text("send_before_recv_eager.toml"), "\neager_bytes = 1048576",
                  fmt::format("\neager_bytes = {}", eager_bytes));
}

TEST(Reports, ADeadlockAtTheEagerBoundarySaysTheMessageExceededEagerBytes) {
  const auto r = run_toml(exchange(1024));
  ASSERT_EQ(r.verdict, Verdict::deadlock);
  const std::string report = all_text(r.findings[0]);
  EXPECT_TRUE(has(report, "the message to rank1 (4096 bytes) exceeded eager_bytes (1024)")) << report;
  EXPECT_TRUE(has(report, "the message to rank0 (4096 bytes) exceeded eager_bytes (1024)")) << report;
}

TEST(Reports, AFirstContactExchangeSaysItsDataWentToAConnectionWiredWrongly) {
  // The same exchange without the connecting one: both sends complete, their data is lost, both
  // receives hang, at any size (measured on H200).
  const auto r = run_toml(scenario_text("send_before_recv_no_eager.toml"));
  ASSERT_EQ(r.verdict, Verdict::deadlock);
  EXPECT_FALSE(has(all_text(r.findings[0]), "exceeded eager_bytes")) << all_text(r.findings[0]);
  ASSERT_EQ(r.notes.size(), 2u);
  for (const core::Finding& n : r.notes) {
    EXPECT_EQ(core::to_string(n.kind), "p2p-data-lost");
    EXPECT_TRUE(has(n.summary, "went to a connection wired wrongly")) << n.summary;
    EXPECT_EQ(n.sites[0].origin.rfind("test.toml:", 0), 0u) << n.sites[0].origin;
  }
}

TEST(Reports, ADeadlockWithoutEagerSendsOrAMessageThatFitsSaysNothingOfEagerBytes) {
  const auto r = run_toml(exchange(0));
  ASSERT_EQ(r.verdict, Verdict::deadlock) << "no eager sends at all: the boundary is not what decides";
  EXPECT_FALSE(has(all_text(r.findings[0]), "eager_bytes")) << all_text(r.findings[0]);
  EXPECT_EQ(run_toml(exchange(4096)).verdict, Verdict::pass) << "the message fits: no deadlock to explain";
}

// A seed that ended in a bug of ppspec has no verdict: the summary never counts it as expected
// (it once said "ok ... 0 of 0 seeds as expected" for two such seeds).
TEST(Reports, ASeedThatEndedInAnInternalErrorIsNeverCountedAsExpected) {
  ppspec::report::SeedSummary s{"f.toml", "x", "random", core::Verdict::pass, 1};
  ppspec::report::RunRecord r;
  r.seed = 1;
  r.internal_error = "assertion failed";
  s.add(r);
  const std::string line = ppspec::report::format_summary(s);
  EXPECT_EQ(line.rfind("FAIL x  f.toml  0 of 1 seeds as expected; first unexpected: seed 1", 0), 0u) << line;
  EXPECT_NE(line.find("(verdicts: internal error of ppspec 1; expected pass)"), std::string::npos) << line;
}

}  // namespace
}  // namespace ppspec::testing

namespace ppspec::testing {
namespace {

// A serving pass whose monitors skipped something says what, in the text and in --json; one that
// skipped nothing prints neither.
TEST(Reports, APassSaysWhatTheMonitorsSkippedAndOnlyThen) {
  report::RunRecord r;
  r.scenario = "s";
  r.ok = true;
  r.serving = report::ServingFigures{};
  r.serving->model_oracle.requests_followed = 1;
  EXPECT_EQ(report::format_text(r).find("monitors skipped"), std::string::npos) << report::format_text(r);
  EXPECT_FALSE(report::to_json(r).contains("monitor_skips"));
  r.serving->model_oracle.monitor_skips["draft freshness: decode rows whose request has no proposal on record"] = 3;
  const std::string text = report::format_text(r);
  EXPECT_NE(
      text.find("    monitors skipped: draft freshness: decode rows whose request has no proposal on record (3)\n"),
      std::string::npos)
      << text;
  EXPECT_EQ(report::to_json(r)["monitor_skips"]["draft freshness: decode rows whose request has no proposal on record"],
            3);
}

}  // namespace
}  // namespace ppspec::testing
