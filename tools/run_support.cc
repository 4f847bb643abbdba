#include "tools/run_support.h"

#include <charconv>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fmt/format.h>

namespace ppspec::tools {

std::optional<uint64_t> parse_count(std::string_view text, uint64_t min, uint64_t max) {
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || text.front() == '+' || ec != std::errc() || p != end || v < min || v > max) return std::nullopt;
  return v;
}

std::string file_safe(std::string_view name) {
  std::string s;
  for (char c : name.substr(0, 64))
    s.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ? c : '_');
  if (s.empty() || s.front() == '.') s.insert(s.begin(), '_');
  return s;
}

std::string TracePaths::next(const std::string& scenario, uint64_t seed) {
  if (!many_) return base_;
  const std::filesystem::path p(base_);
  const std::string stem = fmt::format("{}-{}-seed{}", p.stem().string(), file_safe(scenario), seed);
  std::string path = (p.parent_path() / (stem + p.extension().string())).string();
  for (int k = 2; !used_.insert(path).second; ++k)
    path = (p.parent_path() / fmt::format("{}-{}{}", stem, k, p.extension().string())).string();
  return path;
}

std::string shell_word(const std::string& s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("/._-+=:,@").find(c) != std::string_view::npos;
  });
  if (plain) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace ppspec::tools
