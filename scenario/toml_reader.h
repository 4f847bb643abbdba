// Strict reading of TOML tables: every key must be known, every value of the right type and in
// range; anything else is an InputError naming the file, the line and what was expected.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "core/error.h"
#include "core/printable.h"

namespace ppspec::scenario {

int line_of(const toml::node& n);

// The longest string a scenario may give: names and labels, and free text (a description).
inline constexpr size_t kNameBytesMax = 256;
inline constexpr size_t kTextBytesMax = 64 * 1024;

class TableReader {
 public:
  // `where` names the table in messages, e.g. "[runtime]" or "ops[3] of [rank.0]".
  TableReader(const toml::table& table, const std::string& file, std::string where);

  bool has(std::string_view key) const;
  const toml::node* node(std::string_view key);  // marks the key as known

  std::optional<std::string> string(std::string_view key);
  std::optional<int64_t> integer(std::string_view key, int64_t min, int64_t max);
  std::optional<double> number(std::string_view key, double min, double max);  // integer or float
  std::optional<bool> boolean(std::string_view key);
  const toml::array* array(std::string_view key);
  const toml::table* table(std::string_view key);

  // A string that must be one of `allowed` (given as a comma-separated list for the message).
  template <typename T, typename Parse>
  std::optional<T> choice(std::string_view key, Parse parse, std::string_view allowed) {
    auto s = string(key);
    if (!s) return std::nullopt;
    auto v = parse(*s);
    if (!v) fail(key, "'" + core::printable(*s, 60) + "' is not one of: " + std::string(allowed));
    return v;
  }

  std::string string_or(std::string_view key, std::string fallback) {
    return string(key).value_or(std::move(fallback));
  }

  // Throws for the first key nobody asked for; `known` lists the accepted keys for the message.
  void finish(std::string_view known);
  // Throws for the first key (by line) not in the comma-separated `known` list; call it before
  // reading, so that a misspelt key is reported before the missing key it was meant to be.
  void only(std::string_view known) const;

  [[noreturn]] void fail(std::string_view key, const std::string& message) const;
  [[noreturn]] void fail_here(const std::string& message) const;
  int line() const { return line_of(table_); }
  int line(std::string_view key) const;
  const std::string& file() const { return file_; }
  const std::string& where() const { return where_; }

 private:
  const toml::table& table_;
  const std::string& file_;
  std::string where_;
  std::vector<std::string> used_;
};

// The kind of a value, in words, for messages.
std::string_view type_name(const toml::node& n);

}  // namespace ppspec::scenario
