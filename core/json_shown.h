// A JSON value echoed in an error message or a report (the trace readers, from-vllm): short,
// printable, and never a throw of its own (invalid UTF-8 in a string is replaced, not refused).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/printable.h"

namespace ppspec::core {

inline std::string shown(const nlohmann::json& v, size_t bytes = 40) {
  return printable(v.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace), bytes);
}

}  // namespace ppspec::core
