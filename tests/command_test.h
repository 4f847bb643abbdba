// What the tests that call ppspec's commands share: where the sources are, and what a command
// (tools::*_command) returned and printed.
#pragma once

#include <string>

namespace ppspec::testing {

inline const std::string kSource = PPSPEC_SOURCE_DIR;
inline const std::string kScenarios = kSource + "/scenarios/programs/";

struct Out {
  int code;
  std::string out, err;
};

}  // namespace ppspec::testing
