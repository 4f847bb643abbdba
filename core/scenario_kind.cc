#include "core/scenario_kind.h"

#include "core/enum_names.h"

namespace ppspec::core {

namespace {

constexpr EnumNames<ScenarioKind, 2> kScenarioKindNames{
    {{{"program", ScenarioKind::program}, {"serving", ScenarioKind::serving}}}};

}  // namespace

std::string_view to_string(ScenarioKind k) { return kScenarioKindNames.name(k); }
std::optional<ScenarioKind> parse_scenario_kind(std::string_view s) { return kScenarioKindNames.parse(s); }

}  // namespace ppspec::core
