#include "core/printable.h"

#include <fmt/format.h>

#include "core/utf8.h"

namespace ppspec::core {

std::string printable(std::string_view s, size_t max_bytes) {
  const bool cut = s.size() > max_bytes;
  if (cut) s = s.substr(0, max_bytes);
  std::string out;
  out.reserve(s.size() + (cut ? 3 : 0));
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    const auto u = static_cast<unsigned char>(c);
    const size_t n = utf8_sequence_at(s, i);
    if (c == '\n') {
      out += "\\n";
    } else if (u < 0x20 || u == 0x7f || n == 0) {  // a control byte, or one of no UTF-8 sequence
      out += fmt::format("\\x{:02x}", u);
    } else {
      out.append(s.substr(i, n));
      i += n;
      continue;
    }
    ++i;
  }
  if (cut) out += "...";
  return out;
}

}  // namespace ppspec::core
