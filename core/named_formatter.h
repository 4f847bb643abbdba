// An enumeration with a to_string formats as its name: `template <> struct fmt::formatter<E> :
// ppspec::core::NamedFormatter<E> {};` beside the enumeration.
#pragma once

#include <string_view>

#include <fmt/format.h>

namespace ppspec::core {

template <typename E>
struct NamedFormatter : fmt::formatter<std::string_view> {
  auto format(E value, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(to_string(value), ctx);
  }
};

}  // namespace ppspec::core
