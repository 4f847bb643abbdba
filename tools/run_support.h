// What `ppspec run` shares between its backends: loaded scenarios, trace file names, and the
// command that reproduces a run.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>

#include "core/verdict.h"
#include "program/program.h"
#include "serving/scenario.h"
#include "sim/policy.h"

namespace ppspec::tools {

using Scenario = std::variant<program::Program, serving::ServingScenario>;

struct Exploration {
  std::string name, file;
  uint64_t seed = 1, seeds = 1;
  sim::StrategySpec strategy;
  core::Verdict expect = core::Verdict::pass;
  bool expect_given = true;  // false: no [expect] (explore mode)
};
Exploration exploration_of(const Scenario& sc);

struct Loaded {
  Scenario scenario;
  uint64_t hash = 0;  // of the file's bytes: traces record it, so `check` can prove it reads the same file
  std::string kind;
  std::string text;           // the file's bytes: traces embed them, so that a trace travels alone
  uint64_t content_hash = 0;  // loader::toml_content_hash: what the file says, comments aside
};
// Throws core::InputError (file, line, what was expected).
Loaded load_scenario(const std::string& file);
// The same from the file's bytes, already read (and hashed: `hash`) by the caller.
Loaded scenario_of_text(std::string_view text, const std::string& file, uint64_t hash);

// A decimal integer in [min, max], digits only (no sign, no exponent): how every count and seed on
// the command line is read.
std::optional<uint64_t> parse_count(std::string_view text, uint64_t min, uint64_t max);

// A file name made of the scenario's name: letters, digits, '.', '-' and '_' only, so that a name
// cannot reach into another folder or hold a newline.
std::string file_safe(std::string_view name);

// Where the trace of one run goes: OUT itself for a single run, else OUT-<scenario>-seed<N>.jsonl,
// made unique when two scenarios share a name.
class TracePaths {
 public:
  TracePaths(std::string base, bool many) : base_(std::move(base)), many_(many) {}
  std::string next(const std::string& scenario, uint64_t seed);

 private:
  std::string base_;
  bool many_;
  std::set<std::string> used_;
};

// A file name as one word of a shell command.
std::string shell_word(const std::string& s);

}  // namespace ppspec::tools
