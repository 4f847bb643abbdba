#include "tools/run_support.h"

#include <charconv>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fmt/format.h>

#include "core/file_bytes.h"
#include "core/hash.h"
#include "loader/program_loader.h"
#include "loader/toml_content.h"
#include "loader/serving_loader.h"
#include "loader/toml_reader.h"

namespace ppspec::tools {

std::optional<uint64_t> parse_count(std::string_view text, uint64_t min, uint64_t max) {
  uint64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [p, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || text.front() == '+' || ec != std::errc() || p != end || v < min || v > max) return std::nullopt;
  return v;
}

Exploration exploration_of(const Scenario& sc) {
  if (const auto* p = std::get_if<program::Program>(&sc))
    return {p->name,           p->file,        p->explore.seed, p->explore.seeds, p->explore.strategy,
            p->expect.verdict, p->expect.given};
  const auto& s = std::get<serving::ServingScenario>(sc);
  return {s.name, s.file, s.seed, s.seeds, s.strategy, s.expect.verdict, s.expect.given};
}

namespace {

Loaded loaded_of(const toml::table& root, const std::string& file, uint64_t hash, std::string_view text) {
  const std::string kind = loader::scenario_kind(root, file);
  Loaded l{kind == "program" ? Scenario{loader::read_program(root, file)} : Scenario{loader::read_serving(root, file)},
           hash, kind, std::string(text), loader::toml_content_hash(text)};
  return l;
}

}  // namespace

Loaded load_scenario(const std::string& file) {
  const std::string text = core::file_bytes_or_throw(file);
  return scenario_of_text(text, file, core::fnv1a_bytes(text.data(), text.size()));
}

Loaded scenario_of_text(std::string_view text, const std::string& file, uint64_t hash) {
  return loaded_of(loader::parse_toml_text(text, file), file, hash, text);
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
