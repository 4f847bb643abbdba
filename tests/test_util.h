// Helpers shared by the unit tests.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <initializer_list>
#include <fstream>
#include <sstream>
#include <ostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/event.h"
#include "core/verdict.h"
#include "core/file_bytes.h"
#include "scenario/program_loader.h"
#include "scenario/serving_loader.h"
#include "program/runner.h"

namespace ppspec::testing {

// Keeps every event as its JSON line (events hold views into live state, so copy them out).
class Recorder final : public core::EventSink {
 public:
  void on_event(const core::Event& e) override {
    lines.push_back(core::to_json(e));
    kinds.push_back(e.kind);
    labels.emplace_back(e.has_op ? e.op.label.str() : "");
    ranks.push_back(e.rank);
    times.push_back(e.t);
  }
  // Index of the first event of `kind` whose label is `label` (and rank, if given); -1 if none.
  int find(core::EventKind kind, std::string_view label, core::RankId rank = -1) const {
    for (size_t i = 0; i < kinds.size(); ++i)
      if (kinds[i] == kind && labels[i] == label && (rank < 0 || ranks[i] == rank)) return static_cast<int>(i);
    return -1;
  }
  std::vector<std::string> lines;
  std::vector<core::EventKind> kinds;
  std::vector<std::string> labels;
  std::vector<core::RankId> ranks;
  std::vector<core::Time> times;
};

// A scenario text that must be rejected: at `line`, with `message` somewhere in the error.
struct Bad {
  std::string name;
  std::string text;
  int line;
  std::string message;
};
inline void PrintTo(const Bad& b, std::ostream* os) { *os << b.name; }

// `text` with the first occurrence of `from` replaced by `to`.
inline std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// Parses `b.text` as "bad.toml" with `parse`; expects an InputError with the file, line and message.
template <class Parse>
void expect_rejected(const Bad& b, Parse parse) {
  try {
    (void)parse(b.text, "bad.toml");
    ADD_FAILURE() << "accepted: " << b.name;
  } catch (const core::InputError& e) {
    EXPECT_EQ(e.file(), "bad.toml");
    EXPECT_EQ(e.line(), b.line) << e.what();
    EXPECT_NE(std::string(e.what()).find(b.message), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("bad.toml:", 0), 0u) << e.what();
  }
}

inline program::Program program_from(std::string_view toml) { return scenario::parse_program(toml, "test.toml"); }

inline core::RunResult run_toml(std::string_view toml, uint64_t seed = 1, core::EventSink* sink = nullptr,
                                core::StrategySpec strategy = {}) {
  const program::Program p = program_from(toml);
  sim::RunConfig o;
  o.seed = seed;
  o.strategy = strategy;
  if (sink != nullptr) o.sinks.push_back(sink);
  return program::run_on_sim(p, o);
}

// The grouped exchange a real program starts with: it connects the pair both ways at first contact
// (R1) and gives each direction a receiving side (R4), so that no later call of the test blocks
// in connection setup. A list of TOML operations, with a trailing comma.
inline std::string connect_group(std::string_view comm, int peer) {
  return fmt::format(
      R"({{ op = "group_start" }}, {{ op = "send", comm = "{0}", peer = {1}, label = "connect" }}, )"
      R"({{ op = "recv", comm = "{0}", peer = {1}, label = "connect" }}, {{ op = "group_end" }}, {{ op = "device_sync" }},)",
      comm, peer);
}

// 50 seeds under random scheduling and 50 under PCT:3, for what must not depend on the schedule
// (the hazards a program notes): `check(result, "random seed 7")` for each run.
template <typename Check>
void under_every_schedule(std::string_view toml, Check check) {
  for (const core::StrategySpec& strategy :
       {core::StrategySpec{}, core::StrategySpec{core::StrategySpec::Kind::pct, 3}})
    for (uint64_t seed = 1; seed <= 50; ++seed)
      check(run_toml(toml, seed, nullptr, strategy), strategy.str() + " seed " + std::to_string(seed));
}

// The head of a program scenario: ranks, streams ("" for the default), [runtime] lines ("" for
// none) and communicators, each a name and its ranks as a TOML array.
struct CommDecl {
  const char* name;
  const char* ranks;
};
inline std::string program_head(int ranks, std::string_view streams, std::string_view runtime,
                                std::initializer_list<CommDecl> comms) {
  std::string s = "kind = \"program\"\nranks = " + std::to_string(ranks) + "\n";
  if (!streams.empty()) s += "streams = " + std::string(streams) + "\n";
  if (!runtime.empty()) s += "[runtime]\n" + std::string(runtime) + "\n";
  for (const CommDecl& c : comms)
    s += "[[communicator]]\nname = \"" + std::string(c.name) + "\"\nranks = " + c.ranks + "\n";
  return s;
}

// The text of a scenario of scenarios/programs/.
inline std::string scenario_text(const std::string& name) {
  std::ifstream in(std::string(PPSPEC_SOURCE_DIR) + "/scenarios/programs/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A committed serving scenario, scenarios/serving/NAME, loaded as `ppspec run` loads it.
inline serving::ServingScenario committed_serving(const std::string& name) {
  const std::string path = std::string(PPSPEC_SOURCE_DIR) + "/scenarios/serving/" + name;
  return scenario::parse_serving(core::file_bytes_or_throw(path), path);
}

inline bool has_note(const core::RunResult& r, std::string_view kind) {
  for (const auto& f : r.notes)
    if (core::to_string(f.kind) == kind) return true;
  return false;
}

// The hazard kinds a run noted (or failed with, under strict), sorted and without repeats.
inline std::set<std::string> hazard_kinds(const core::RunResult& r) {
  std::set<std::string> kinds;
  for (const auto* list : {&r.notes, &r.findings})
    for (const auto& f : *list)
      if (f.verdict == core::Verdict::hazard) kinds.emplace(core::to_string(f.kind));
  return kinds;
}

inline std::string all_text(const core::Finding& f) {
  std::string s = f.summary + "\n";
  for (const auto& d : f.details) s += d + "\n";
  return s;
}

}  // namespace ppspec::testing
