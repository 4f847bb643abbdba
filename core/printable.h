// User input echoed in messages and reports: control characters and bytes of no UTF-8 sequence
// escaped (a newline in a name must not forge a line of its own, a NUL must not cut a terminal's
// line, a stray byte must not make a JSON report unwritable) and, when `max_bytes` is given, cut
// short with "..." (a message never repeats a 100 KB value).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ppspec::core {

std::string printable(std::string_view s, size_t max_bytes = std::string_view::npos);

}  // namespace ppspec::core
