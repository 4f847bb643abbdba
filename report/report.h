// Turns run results into reports for people (text) and for programs (JSON).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/verdict.h"
#include "serving/paths_reached.h"
#include "verify/oracles/serving_oracles.h"

namespace ppspec::report {

// A fault the scenario switches on whose code path its deployment never runs
// (engine/fault_reach.h): its pass says nothing of the fault.
struct UnreachableFault {
  std::string fault;
  std::string why;
};

// What a serving run achieved (serving scenarios only).
struct ServingFigures {
  // The steps the engine numbered, warmup included (a finding's "engine step N" is one of
  // 0..engine_steps-1), the first warmup_steps of them warmup; serving_steps scheduled requests.
  int64_t engine_steps = 0;
  int64_t warmup_steps = 0;
  int64_t serving_steps = 0;
  int64_t requests = 0;
  int64_t output_tokens = 0;
  double acceptance_rate = 0;              // accepted drafts / verified drafts
  double tokens_per_step = 0;              // output tokens / serving step
  verify::OnlineCoverage model_oracle{};   // what the model oracle checked, and what it stopped checking
  int64_t prefix_evictions = 0;            // cached blocks given for new content
  serving::PathsReached paths{};           // the engine paths the run reached
  std::vector<std::string> unexercised{};  // mechanisms the scenario enables that the run never exercised
  std::vector<UnreachableFault> unreachable_faults{};
};

struct RunRecord {
  std::string file;
  std::string scenario;
  uint64_t seed = 0;
  std::string strategy;
  core::Verdict expected = core::Verdict::pass;
  bool has_expectation = true;      // false for `ppspec check`, which judges a trace on its own
  bool expectation_written = true;  // false: the scenario has no [expect] (explore mode; pass expected)
  bool gpu = false;                 // a run on real GPUs: times are wall-clock
  bool flight_recorder = false;     // `ppspec check DIR`: PyTorch Flight Recorder dumps, no time of ours
  bool ok = false;
  std::string mismatch;  // why the run did not meet its expectation
  double wall_ms = 0;
  std::string reproduce;
  core::RunResult result;
  std::optional<ServingFigures> serving{};
  std::optional<core::Verdict> recorded{};  // `ppspec check`: the verdict the trace's trailer records
  // A bug of ppspec (a broken invariant, an exception) that ended this run: no verdict. The other
  // scenarios and seeds still run; the command exits 3.
  std::string internal_error{};
};

// What the seeds of one scenario gave (`ppspec run --seeds N`), for its one summary line.
struct SeedSummary {
  std::string file;
  std::string scenario;
  std::string strategy;
  core::Verdict expected = core::Verdict::pass;
  uint64_t first_seed = 0;
  uint64_t seeds = 0;
  uint64_t as_expected = 0;
  std::optional<uint64_t> first_unexpected{};
  std::map<core::Verdict, uint64_t> verdicts{};  // ordered: the line is the same on every machine
  uint64_t internal_errors = 0;                  // seeds that ended in a bug of ppspec: no verdict
  double wall_ms = 0;
  // The first seed's first finding, in one line: what a person reads when every seed is as expected.
  std::optional<uint64_t> first_finding_seed{};
  std::string first_finding{};

  void add(const RunRecord& r);
};

std::string format_text(const RunRecord& r);
// One finding as format_text writes it: "    PREFIXverdict (kind) at TIME: summary", its details, where.
void append_finding(std::string& s, const core::Finding& f, std::string_view prefix);
// "ok   NAME  FILE  20 of 20 seeds as expected (...)" or "FAIL ... 17 of 20 seeds as expected;
// first unexpected: seed 4 (...)", one line.
std::string format_summary(const SeedSummary& s);
nlohmann::json to_json(const RunRecord& r);
nlohmann::json to_json(const core::Finding& f);

// "0.527 ms", "1.2 s"
std::string format_time(core::Time t);

// JSON text of a report; bytes that are not UTF-8 (a scenario name is user input) are replaced.
std::string dump_json(const nlohmann::json& j);

}  // namespace ppspec::report
