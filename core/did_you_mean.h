// "did you mean ...?" for a misspelt name: the closest of the valid ones, if it is close enough to
// be a slip of the keyboard rather than another word.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppspec::core {

// Edits (insert, delete, replace, or swap two neighbours) from `a` to `b`, case-insensitive.
size_t edit_distance(std::string_view a, std::string_view b);

// The valid name closest to `name` within max(1, its length / 4) edits (ties: the first listed);
// nullopt when none is that close.
std::optional<std::string> closest_name(std::string_view name, const std::vector<std::string>& valid);

}  // namespace ppspec::core
