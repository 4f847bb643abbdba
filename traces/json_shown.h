// A JSON value echoed in an error message (both trace formats' readers): short, printable, and never
// a throw of its own (invalid UTF-8 in a string is replaced, not refused).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/printable.h"

namespace ppspec::traces {

inline std::string shown(const nlohmann::json& v) {
  return core::printable(v.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace), 40);
}

}  // namespace ppspec::traces
