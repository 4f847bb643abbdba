// Reads serving scenarios (kind = "serving") from TOML. Format: scenarios/README.md.
#pragma once

#include <string>
#include <string_view>

#include <toml++/toml.h>

#include "serving/scenario.h"

namespace ppspec::scenario {

// Throws core::InputError with the file and line of the first problem.
serving::ServingScenario read_serving(const toml::table& root, const std::string& file);
serving::ServingScenario parse_serving(std::string_view text, const std::string& file);

}  // namespace ppspec::scenario
