// A file a command writes for the user (a scenario): refused when it is already there unless
// --force, so that a user's own file is never overwritten by surprise.
#pragma once

#include <string>

namespace ppspec::tools {

// Throws core::InputError: "already exists (--force overwrites it)", or "cannot be written".
void write_output_file(const std::string& path, const std::string& text, bool force);

}  // namespace ppspec::tools
