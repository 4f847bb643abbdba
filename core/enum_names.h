// One table of names per enumeration, shared by its to_string, its parser and its error messages.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace ppspec::core {

template <typename E, size_t N>
struct EnumNames {
  std::array<std::pair<std::string_view, E>, N> table;

  constexpr std::string_view name(E value) const {
    for (const auto& [n, v] : table)
      if (v == value) return n;
    return "?";
  }
  constexpr std::optional<E> parse(std::string_view s) const {
    for (const auto& [n, v] : table)
      if (n == s) return v;
    return std::nullopt;
  }
  // "a, b, c", for messages that say what was expected.
  std::string list() const {
    std::string s;
    for (const auto& [n, v] : table) {
      if (!s.empty()) s += ", ";
      s += n;
    }
    return s;
  }
};

}  // namespace ppspec::core
