// The scenario: one model of the two kinds (program | serving, core::ScenarioKind), read from its
// TOML file by this folder's readers (program_loader.h, serving_loader.h) and written by its writers
// (program/toml_writer.h for programs, serving_case.h for serving runs). Every command that runs a
// scenario loads it here.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "core/scenario_kind.h"
#include "core/verdict.h"
#include "program/program.h"
#include "serving/scenario.h"
#include "core/strategy.h"

namespace ppspec::scenario {

using Scenario = std::variant<program::Program, serving::ServingScenario>;

struct Exploration {
  std::string name, file;
  uint64_t seed = 1, seeds = 1;
  core::StrategySpec strategy;
  core::Verdict expect = core::Verdict::pass;
  bool expect_given = true;  // false: no [expect] (explore mode)
};
Exploration exploration_of(const Scenario& sc);

struct Loaded {
  Scenario scenario;
  uint64_t hash = 0;  // of the file's bytes: traces record it, so `check` can prove it reads the same file
  core::ScenarioKind kind = core::ScenarioKind::program;
  std::string text;           // the file's bytes: traces embed them, so that a trace travels alone
  uint64_t content_hash = 0;  // scenario::toml_content_hash: what the file says, comments aside
};
// Throws core::InputError (file, line, what was expected).
Loaded load_scenario(const std::string& file);
// The same from the file's bytes, already read (and hashed: `hash`) by the caller.
Loaded scenario_of_text(std::string_view text, const std::string& file, uint64_t hash);

}  // namespace ppspec::scenario
