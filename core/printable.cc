#include "core/printable.h"

#include <fmt/format.h>

namespace ppspec::core {

std::string printable(std::string_view s, size_t max_bytes) {
  const bool cut = s.size() > max_bytes;
  if (cut) s = s.substr(0, max_bytes);
  std::string out;
  out.reserve(s.size() + (cut ? 3 : 0));
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n')
      out += "\\n";
    else if (u < 0x20 || u == 0x7f)
      out += fmt::format("\\x{:02x}", u);
    else
      out.push_back(c);
  }
  if (cut) out += "...";
  return out;
}

}  // namespace ppspec::core
