// Files the tests write: each under a folder of the test process's own (ctest runs tests in
// parallel, and the default and asan presets may run at once), removed when the process ends.
#pragma once

#include <filesystem>
#include <string>

namespace ppspec::testing {

// `name` inside this process's scratch folder, which is made on first use.
std::filesystem::path scratch_path(const std::string& name);

}  // namespace ppspec::testing
