// What `ppspec run` shares between its backends: loaded scenarios, trace file names, and the
// command that reproduces a run.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>

#include "scenario/scenario.h"

namespace ppspec::tools {

using scenario::Exploration;
using scenario::exploration_of;
using scenario::load_scenario;
using scenario::Loaded;
using scenario::Scenario;
using scenario::scenario_of_text;

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
