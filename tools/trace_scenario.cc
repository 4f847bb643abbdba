#include "tools/trace_scenario.h"

#include <filesystem>
#include <fmt/format.h>
#include <optional>
#include <ostream>
#include <vector>

#include "core/error.h"
#include "core/file_bytes.h"
#include "core/hash.h"
#include "core/printable.h"
#include "scenario/toml_content.h"

namespace ppspec::tools {
namespace {

namespace fs = std::filesystem;

// The file's bytes; nullopt when it cannot be read (absent, a folder): the next candidate is tried.
std::optional<std::string> candidate_bytes(const std::string& path) {
  core::FileBytes f = core::read_file_bytes(path);
  if (!f.ok()) return std::nullopt;
  return std::move(f.bytes);
}

std::vector<std::string> candidates_of(const traces::TraceHeader& h, const std::string& trace, const std::string& cli) {
  if (!cli.empty()) return {cli};
  if (h.file.empty()) return {};
  std::vector<std::string> out{h.file};
  const fs::path beside = fs::path(trace).parent_path() / h.file;
  if (fs::path(h.file).is_relative() && beside.string() != h.file) out.push_back(beside.string());
  return out;
}

[[noreturn]] void not_found(const traces::TraceHeader& h, const std::string& trace, const std::string& cli) {
  if (!cli.empty())
    throw core::InputError(trace, 1,
                           fmt::format("cannot find the scenario '{}' named by --scenario", core::printable(cli, 200)));
  if (h.file.empty())
    throw core::InputError(trace, 1, "the trace's header names no scenario file; name it with --scenario FILE");
  throw core::InputError(trace, 1,
                         fmt::format("cannot find the scenario '{}' this trace was recorded with (looked here and "
                                     "beside the trace); name it with --scenario FILE",
                                     core::printable(h.file, 200)));
}

// The scenario the trace carries, named as it was when recorded (so that every origin a report
// cites, file:line, is the run's).
Loaded embedded_scenario(const traces::TraceHeader& h, const std::string& trace) {
  const uint64_t hash = core::fnv1a_bytes(h.scenario_text.data(), h.scenario_text.size());
  if (hash != *h.scenario_hash)
    throw core::InputError(trace, 1,
                           fmt::format("the scenario embedded in the header hashes to {}, not to its recorded "
                                       "scenario_hash {}: the trace was edited",
                                       traces::hash_hex(hash), traces::hash_hex(*h.scenario_hash)));
  return scenario_of_text(h.scenario_text, h.file.empty() ? trace : h.file, hash);
}

}  // namespace

Loaded trace_scenario(const traces::TraceHeader& h, const std::string& trace, const std::string& cli_scenario,
                      std::ostream& err) {
  if (!h.scenario_hash && cli_scenario.empty())
    throw core::InputError(trace, 1,
                           "a trace whose header records no scenario hash (an older ppspec): its scenario cannot be "
                           "told from another file of that name; name it with --scenario FILE");
  if (cli_scenario.empty() && !h.scenario_text.empty()) return embedded_scenario(h, trace);
  std::string changed;
  for (const std::string& path : candidates_of(h, trace, cli_scenario)) {
    const auto text = candidate_bytes(path);
    if (!text) continue;
    const uint64_t hash = core::fnv1a_bytes(text->data(), text->size());
    if (h.scenario_hash && hash != *h.scenario_hash) {
      if (h.content_hash && scenario::toml_content_hash(*text) == *h.content_hash) {
        // What it says is the recording's; its lines may not be. The embedded text keeps every
        // file:line a report cites (and a replay compares) as the run had it.
        const bool embedded = !h.scenario_text.empty();
        err << fmt::format(
            "ppspec: {}: note: {} differs from the recorded scenario only in comments and blank lines{}\n", trace, path,
            embedded ? "; using the scenario the trace embeds" : "");
        return embedded ? embedded_scenario(h, trace) : scenario_of_text(*text, path, hash);
      }
      changed = fmt::format("{} has changed since this trace was recorded (hash {}, recorded {})", path,
                            traces::hash_hex(hash), traces::hash_hex(*h.scenario_hash));
      continue;
    }
    if (!h.scenario_hash)
      err << fmt::format("ppspec: {}: note: no recorded scenario hash; trusting --scenario {}\n", trace, path);
    return scenario_of_text(*text, path, hash);
  }
  if (!changed.empty())
    throw core::InputError(trace, 1,
                           fmt::format("the scenario {}: what it runs now proves nothing of the recording; name "
                                       "the scenario as it was with --scenario FILE",
                                       changed));
  not_found(h, trace, cli_scenario);
}

void limit_to_embedded_ranks(traces::TraceReader& reader) {
  const traces::TraceHeader& h = reader.header();
  if (h.scenario_text.empty() || !h.scenario_hash) return;
  std::optional<Loaded> l;
  try {
    l = embedded_scenario(h, reader.where());
  } catch (const core::InputError&) {
    return;
  }
  const int ranks = std::holds_alternative<program::Program>(l->scenario)
                        ? std::get<program::Program>(l->scenario).num_ranks
                        : std::get<serving::ServingScenario>(l->scenario).config.runtime_ranks();
  if (ranks > 0)
    reader.limit_ranks(ranks, fmt::format("the {}-rank scenario '{}'", ranks, core::printable(h.scenario, 80)));
}

}  // namespace ppspec::tools
