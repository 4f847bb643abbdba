#include "scenario/toml_reader.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "core/printable.h"

namespace ppspec::scenario {

int line_of(const toml::node& n) { return static_cast<int>(n.source().begin.line); }

std::string_view type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a number";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    default: return "a date or time";
  }
}

TableReader::TableReader(const toml::table& table, const std::string& file, std::string where)
    : table_(table), file_(file), where_(std::move(where)) {}

bool TableReader::has(std::string_view key) const { return table_.contains(key); }

const toml::node* TableReader::node(std::string_view key) {
  if (std::find(used_.begin(), used_.end(), key) == used_.end()) used_.emplace_back(key);
  return table_.get(key);
}

int TableReader::line(std::string_view key) const {
  const toml::node* n = table_.get(key);
  return n != nullptr ? line_of(*n) : line();
}

void TableReader::fail(std::string_view key, const std::string& message) const {
  throw core::InputError(file_, line(key), fmt::format("{} '{}': {}", where_, core::printable(key, 60), message));
}

void TableReader::fail_here(const std::string& message) const {
  throw core::InputError(file_, line(), fmt::format("{}: {}", where_, message));
}

std::optional<std::string> TableReader::string(std::string_view key) {
  const toml::node* n = node(key);
  if (n == nullptr) return std::nullopt;
  if (!n->is_string()) fail(key, fmt::format("expected a string, found {}", type_name(*n)));
  const std::string& s = n->as_string()->get();
  // Strings end up in reports and file names: bounded, and free of control characters (a newline
  // in a name would forge a report line). Free text may hold line breaks and tabs.
  const bool free_text = key == "description";
  const size_t max_bytes = free_text ? kTextBytesMax : kNameBytesMax;
  if (s.size() > max_bytes) fail(key, fmt::format("a string of {} bytes (at most {})", s.size(), max_bytes));
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 || u == 0x7f) && !(free_text && (c == '\n' || c == '\t')))
      fail(key, fmt::format("a string with control character 0x{:02x}", static_cast<int>(u)));
  }
  return s;
}

std::optional<int64_t> TableReader::integer(std::string_view key, int64_t min, int64_t max) {
  const toml::node* n = node(key);
  if (n == nullptr) return std::nullopt;
  if (!n->is_integer()) fail(key, fmt::format("expected an integer, found {}", type_name(*n)));
  const int64_t v = n->as_integer()->get();
  if (v < min || v > max) fail(key, fmt::format("{} is out of range [{}, {}]", v, min, max));
  return v;
}

std::optional<double> TableReader::number(std::string_view key, double min, double max) {
  const toml::node* n = node(key);
  if (n == nullptr) return std::nullopt;
  double v = 0;
  if (n->is_integer())
    v = static_cast<double>(n->as_integer()->get());
  else if (n->is_floating_point())
    v = n->as_floating_point()->get();
  else
    fail(key, fmt::format("expected a number, found {}", type_name(*n)));
  if (!std::isfinite(v) || v < min || v > max) fail(key, fmt::format("{} is out of range [{}, {}]", v, min, max));
  return v;
}

std::optional<bool> TableReader::boolean(std::string_view key) {
  const toml::node* n = node(key);
  if (n == nullptr) return std::nullopt;
  if (!n->is_boolean()) fail(key, fmt::format("expected true or false, found {}", type_name(*n)));
  return n->as_boolean()->get();
}

const toml::array* TableReader::array(std::string_view key) {
  const toml::node* n = node(key);
  if (n == nullptr) return nullptr;
  if (!n->is_array()) fail(key, fmt::format("expected an array, found {}", type_name(*n)));
  return n->as_array();
}

const toml::table* TableReader::table(std::string_view key) {
  const toml::node* n = node(key);
  if (n == nullptr) return nullptr;
  if (!n->is_table()) fail(key, fmt::format("expected a table, found {}", type_name(*n)));
  return n->as_table();
}

void TableReader::only(std::string_view known) const {
  std::vector<std::string_view> names;
  for (size_t pos = 0; pos <= known.size();) {
    size_t comma = known.find(',', pos);
    if (comma == std::string_view::npos) comma = known.size();
    std::string_view name = known.substr(pos, comma - pos);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    names.push_back(name);
    pos = comma + 1;
  }
  const toml::node* worst = nullptr;
  std::string_view worst_key;
  for (const auto& [k, v] : table_) {
    if (std::find(names.begin(), names.end(), k.str()) != names.end()) continue;
    if (worst == nullptr || line_of(v) < line_of(*worst)) {
      worst = &v;
      worst_key = k.str();
    }
  }
  if (worst != nullptr)
    throw core::InputError(
        file_, line_of(*worst),
        fmt::format("{}: unknown key '{}' (expected one of: {})", where_, core::printable(worst_key, 60), known));
}

void TableReader::finish(std::string_view known) {
  for (const auto& [k, v] : table_) {
    const std::string_view key = k.str();
    if (std::find(used_.begin(), used_.end(), key) != used_.end()) continue;
    throw core::InputError(
        file_, line_of(v),
        fmt::format("{}: unknown key '{}' (expected one of: {})", where_, core::printable(key, 60), known));
  }
}

}  // namespace ppspec::scenario
