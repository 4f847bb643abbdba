#include "scenario/scenario.h"

#include "core/file_bytes.h"
#include "core/hash.h"
#include "scenario/program_loader.h"
#include "scenario/serving_loader.h"
#include "scenario/toml_content.h"
#include "scenario/toml_reader.h"

namespace ppspec::scenario {

Exploration exploration_of(const Scenario& sc) {
  if (const auto* p = std::get_if<program::Program>(&sc))
    return {p->name,           p->file,        p->explore.seed, p->explore.seeds, p->explore.strategy,
            p->expect.verdict, p->expect.given};
  const auto& s = std::get<serving::ServingScenario>(sc);
  return {s.name, s.file, s.seed, s.seeds, s.strategy, s.expect.verdict, s.expect.given};
}

namespace {

Loaded loaded_of(const toml::table& root, const std::string& file, uint64_t hash, std::string_view text) {
  const core::ScenarioKind kind = scenario_kind(root, file);
  Loaded l{
      kind == core::ScenarioKind::program ? Scenario{read_program(root, file)} : Scenario{read_serving(root, file)},
      hash, kind, std::string(text), toml_content_hash(text)};
  return l;
}

}  // namespace

Loaded load_scenario(const std::string& file) {
  const std::string text = core::file_bytes_or_throw(file);
  return scenario_of_text(text, file, core::fnv1a_bytes(text.data(), text.size()));
}

Loaded scenario_of_text(std::string_view text, const std::string& file, uint64_t hash) {
  return loaded_of(parse_toml_text(text, file), file, hash, text);
}

}  // namespace ppspec::scenario
