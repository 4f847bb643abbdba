// What the scenario fuzz targets share: one input is the text of one scenario file, read the way
// `ppspec run` reads it (tools/run_command.cc, load_scenario). Bad input is a core::InputError and
// ends the input there; any other exception escapes to libFuzzer, which reports it as a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "core/error.h"
#include "scenario/program_loader.h"
#include "scenario/serving_loader.h"
#include "program/program.h"
#include "serving/scenario.h"

namespace ppspec::fuzz {

using Scenario = std::variant<program::Program, serving::ServingScenario>;

// The name errors give the input (a scenario's default name is its file's stem).
inline constexpr const char* kScenarioFile = "fuzz.toml";

// The scenario in `data`, or nothing when it is bad input.
inline std::optional<Scenario> load_scenario(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const toml::table root = scenario::parse_toml_text(text, kScenarioFile);
    if (scenario::scenario_kind(root, kScenarioFile) == core::ScenarioKind::program)
      return scenario::read_program(root, kScenarioFile);
    return scenario::read_serving(root, kScenarioFile);  // scenario_kind accepts no other kind
  } catch (const core::InputError&) {
    return std::nullopt;
  }
}

}  // namespace ppspec::fuzz
