// The one place a command turns bad input into its exit status: the message (file, line, what was
// expected) on `err` after the program's name, and exit 2.
#pragma once

#include <ostream>
#include <string_view>

#include "core/error.h"

namespace ppspec::tools {

inline constexpr int kExitBadInput = 2;

// Says `e` on `err` as "PROGRAM: message" and returns kExitBadInput.
int report_bad_input(std::ostream& err, const core::InputError& e, std::string_view program = "ppspec");

// Runs `body` (a command; it returns the exit status): bad input anywhere in it is exit 2.
template <class Body>
int exit_2_on_bad_input(std::ostream& err, std::string_view program, Body&& body) {
  try {
    return body();
  } catch (const core::InputError& e) {
    return report_bad_input(err, e, program);
  }
}

}  // namespace ppspec::tools
