#include "tools/check_command.h"

#include <fmt/format.h>
#include <ostream>

#include "core/error.h"
#include "loader/program_loader.h"
#include "loader/serving_loader.h"
#include "loader/toml_reader.h"
#include "tools/report.h"
#include "traces/trace_reader.h"
#include "verify/findings.h"
#include "verify/serving_monitors.h"
#include "verify/trace_check.h"

namespace ppspec::tools {
namespace {

// A trace of a serving run names its scenario file: with it, the serving monitors run over the
// recorded events exactly as they ran online. Returns false when the trace is not of a serving run
// (or its scenario file is not readable here: then only the pairing checks apply, and we say so).
bool check_serving(const traces::Trace& t, core::RunResult& result, std::string& why_not) {
  const std::string file = t.header.value("file", std::string());
  if (file.empty() || !file.ends_with(".toml")) return false;
  try {
    const toml::table root = loader::parse_toml_file(file);
    if (loader::scenario_kind(root, file) != "serving") return false;
    const serving::ServingScenario s = loader::read_serving(root, file);
    std::vector<core::Finding> found;
    verify::ServingMonitors monitors(verify::serving_facts(s.config, engine::make_checkpoint(s.config.model)),
                                     [&found](core::Finding f) { found.push_back(std::move(f)); });
    for (const core::Event& e : t.events) monitors.on_event(e);
    // On a tie the monitors' findings go first: operations left unmatched at the very end of a run
    // that a monitor stopped are its consequence, not its cause.
    core::RunResult merged;
    merged.findings = std::move(found);
    merged.stats = result.stats;
    std::vector<core::Finding> recorded = std::move(result.findings);
    for (core::Finding& f : result.notes) recorded.push_back(std::move(f));
    verify::settle_verdict(merged, std::move(recorded), s.config.runtime.strict);
    result = std::move(merged);
    return true;
  } catch (const core::InputError& e) {
    why_not = fmt::format("the serving monitors did not run: {}", e.what());
    return false;
  }
}

}  // namespace

int check_command(const CheckArgs& args, std::ostream& out, std::ostream& err) {
  std::vector<traces::Trace> traces;
  for (const std::string& path : args.traces) {
    try {
      traces.push_back(traces::read_trace(path));
    } catch (const core::InputError& e) {
      err << "ppspec: " << e.what() << '\n';
      return 2;
    }
  }
  nlohmann::json all = nlohmann::json::array();
  int dirty = 0;
  for (size_t i = 0; i < traces.size(); ++i) {
    const traces::Trace& t = traces[i];
    RunRecord rec;
    rec.file = args.traces[i];
    rec.scenario = t.header.value("scenario", std::string("?"));
    rec.seed = t.header.value("seed", uint64_t{0});
    rec.strategy = t.header.value("strategy", std::string());
    rec.has_expectation = false;
    rec.result = verify::check_trace(t);
    std::string why_not;
    if (!check_serving(t, rec.result, why_not) && !why_not.empty()) err << "ppspec: " << rec.file << ": " << why_not << '\n';
    rec.ok = rec.result.verdict == core::Verdict::pass;
    if (!rec.ok) ++dirty;
    if (args.json)
      all.push_back(to_json(rec));
    else
      out << format_text(rec);
  }
  if (args.json) out << all.dump(2) << '\n';
  return dirty == 0 ? 0 : 1;
}

}  // namespace ppspec::tools
