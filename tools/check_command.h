// `ppspec check TRACE...`: runs the checkers over recorded traces (simulator or GPU runs).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace ppspec::tools {

struct CheckArgs {
  std::vector<std::string> traces{};
  bool json = false;
};

// Exit status: 0 when every trace is clean, 1 when one has findings, 2 for bad input.
int check_command(const CheckArgs& args, std::ostream& out, std::ostream& err);

}  // namespace ppspec::tools
