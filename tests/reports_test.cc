// Reports that explain the cause (issue 11): each situation both ways — present, and the report
// says it; absent, and the report does not.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/test_util.h"
#include "verify/trace_check.h"

namespace ppspec::testing {
namespace {

using core::Verdict;

const std::string kScenarios = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/programs/";

std::string scenario_text(const std::string& name) {
  std::ifstream in(kScenarios + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

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
  EXPECT_TRUE(has(report, fmt::format("rank0.s2       waits (wait_event) for event 'got_reply', recorded on rank0.s1 at {} [{}]",
                                      record, wait)))
      << report;
  EXPECT_TRUE(has(report, "has not reached the record of event 'got_reply'")) << report;
  bool wait_site = false;
  for (const core::Site& s : r.findings[0].sites) wait_site = wait_site || (s.actor == "rank0.s2" && s.origin == wait);
  EXPECT_TRUE(wait_site) << "the wait's line is the stream's site, for --json";
}

TEST(Reports, AHostEventSyncDeadlockNamesTheEventAndTheLinesOfItsRecordAndWait) {
  const std::string text = replaced(scenario_text("event_wait_deadlock.toml"), kWaitEvent,
                                    R"({ op = "event_sync", event = "got_reply" },)");
  const auto r = run_toml(text);
  ASSERT_EQ(r.verdict, Verdict::deadlock);
  const std::string report = all_text(r.findings[0]);
  EXPECT_TRUE(has(report, fmt::format("rank0.host     blocked in event_sync of event 'got_reply', recorded on rank0.s1 at {} [{}]",
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

// ---- 4. a deadlock at the eager-size boundary says the message exceeded eager_bytes ----

// Both ranks send 4 KiB, then receive (NVIDIA/nccl#2057), with this connection buffer.
std::string exchange(int64_t eager_bytes) {
  return replaced(scenario_text("send_before_recv_no_eager.toml"), "\neager_bytes = 0",
                  fmt::format("\neager_bytes = {}", eager_bytes));
}

TEST(Reports, ADeadlockAtTheEagerBoundarySaysTheMessageExceededEagerBytes) {
  const auto r = run_toml(exchange(1024));
  ASSERT_EQ(r.verdict, Verdict::deadlock);
  const std::string report = all_text(r.findings[0]);
  EXPECT_TRUE(has(report, "the message to rank1 (4096 bytes) exceeded eager_bytes (1024)")) << report;
  EXPECT_TRUE(has(report, "the message to rank0 (4096 bytes) exceeded eager_bytes (1024)")) << report;
}

TEST(Reports, ADeadlockWithoutEagerSendsOrAMessageThatFitsSaysNothingOfEagerBytes) {
  const auto r = run_toml(exchange(0));
  ASSERT_EQ(r.verdict, Verdict::deadlock) << "no eager sends at all: the boundary is not what decides";
  EXPECT_FALSE(has(all_text(r.findings[0]), "eager_bytes")) << all_text(r.findings[0]);
  EXPECT_EQ(run_toml(exchange(4096)).verdict, Verdict::pass) << "the message fits: no deadlock to explain";
}

}  // namespace
}  // namespace ppspec::testing
