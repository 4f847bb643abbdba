// Reads program scenarios (kind = "program") from TOML. Format: scenarios/README.md.
#pragma once

#include <string>
#include <string_view>

#include <toml++/toml.h>

#include "core/expect.h"
#include "core/scenario_kind.h"
#include "program/program.h"

namespace ppspec::scenario {

// Throws core::InputError with the file and line of the first problem.
program::Program load_program_file(const std::string& path);
program::Program parse_program(std::string_view text, const std::string& file);
program::Program read_program(const toml::table& root, const std::string& file);

// Reads [runtime] (and [runtime.cost]) into `cfg`; shared by every scenario kind.
class TableReader;
// `hang_timeout` receives hang_timeout_s, the real backend's watchdog limit (programs); null for a
// serving scenario, where that key means nothing (and memory_budget_mb means something).
void read_runtime(TableReader& runtime, core::WorldConfig& cfg, core::Time* hang_timeout);
// Reads [explore]'s seed, seeds and strategy (the caller checks which keys the table has); shared
// by every scenario kind.
void read_explore(TableReader& explore, uint64_t& seed, uint64_t& seeds, core::StrategySpec& strategy);

// The scenario's kind, from its top-level `kind` key.
core::ScenarioKind scenario_kind(const toml::table& root, const std::string& file);

class TableReader;
// [expect]: verdict, gpu_verdict, hazards. Only what a scenario of `kind` ("program" or "serving")
// can produce is accepted: an expectation nothing can meet is a typo, not a test.
core::Expect read_expect(TableReader& top, const std::string& file, core::ScenarioKind kind);

// Parses a file, turning TOML syntax errors into InputError; `content_hash` (if given) receives
// core::fnv1a_bytes of the bytes parsed.
toml::table parse_toml_file(const std::string& path, uint64_t* content_hash = nullptr);
toml::table parse_toml_text(std::string_view text, const std::string& file);

}  // namespace ppspec::scenario
