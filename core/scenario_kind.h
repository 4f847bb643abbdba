// The two kinds of scenario: a program (communication calls, scripted per rank) and a serving run
// (the engine over a workload). The kind is the top-level `kind` key of a scenario file and the
// `kind` of a trace's header; everything that depends on it switches on this enum.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace ppspec::core {

enum class ScenarioKind : uint8_t { program, serving };

std::string_view to_string(ScenarioKind k);
std::optional<ScenarioKind> parse_scenario_kind(std::string_view s);

}  // namespace ppspec::core
