#include "tools/check_command.h"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <memory>
#include <ostream>
#include <variant>

#include "core/assert.h"
#include "core/plural.h"
#include "core/error.h"
#include "core/finding_kinds.h"
#include "tools/bad_input.h"
#include "report/report.h"
#include "tools/trace_scenario.h"
#include "traces/flight_recorder.h"
#include "traces/trace_reader.h"
#include "verify/dumps/flight_recorder_check.h"
#include "verify/findings.h"
#include "verify/monitors/serving_monitors.h"
#include "verify/dumps/trace_check.h"
#include "watch/job_files.h"

namespace ppspec::tools {
namespace {

// The scenario a serving trace was recorded with (tools/trace_scenario.h): its content must hash
// to what the header recorded, so that the monitors are configured exactly as they were online.
serving::ServingScenario serving_scenario_of(const traces::TraceReader& reader, const std::string& cli_scenario,
                                             std::ostream& err) {
  Loaded l = trace_scenario(reader.header(), reader.where(), cli_scenario, err);
  if (l.kind != core::ScenarioKind::serving)
    throw core::InputError(exploration_of(l.scenario).file, 1,
                           "the scenario of a serving trace must be a serving scenario");
  return std::get<serving::ServingScenario>(std::move(l.scenario));
}

// The recorded verdict is the run's own: a failure the events alone do not show (a deadlock found
// by the simulator, an oracle's divergence) must not turn into a clean check.
void cross_check_trailer(const traces::TraceReader& reader, core::RunResult& result) {
  const auto& trailer = reader.trailer();
  if (!trailer || !verify::is_failure(trailer->verdict) || verify::is_failure(result.verdict)) return;
  core::Finding f;
  f.verdict = trailer->verdict;
  f.kind = core::FindingKind::recorded_verdict;
  f.time = result.stats.sim_time;
  f.summary = fmt::format(
      "the run recorded verdict {} (trailer, line {}), which the recorded events alone do not show; "
      "re-run the scenario to see its report",
      core::to_string(trailer->verdict), trailer->line);
  result.findings.insert(result.findings.begin(), std::move(f));
  result.verdict = trailer->verdict;
}

// The simulator stops a run at its first failure: operations posted then and left unmatched are
// that stop's consequence, not another bug. When the trace is such a run's, they are notes, said to
// follow from the stop; and when they were all the events show, the failure the trailer recorded
// (a deadlock's cycle, which events alone do not show) is the finding, in the run's own words.
void demote_stop_consequences(const traces::TraceReader& reader, core::RunResult& result) {
  const auto& trailer = reader.trailer();
  if (reader.header().backend != traces::TraceBackend::sim || !trailer || !verify::is_failure(trailer->verdict)) return;
  auto unmatched = [](const core::Finding& f) { return f.kind == core::FindingKind::unmatched; };
  const bool only_unmatched = std::all_of(result.findings.begin(), result.findings.end(), unmatched);
  if (only_unmatched && (result.findings.empty() || trailer->findings.empty())) return;
  std::vector<core::Finding> kept;
  if (only_unmatched)
    for (const traces::RecordedFinding& r : trailer->findings) {
      core::Finding f;
      f.verdict = r.verdict;
      f.kind = r.kind;
      f.time = result.stats.sim_time;
      f.summary = r.summary;
      f.details = r.sites;
      f.details.push_back(fmt::format("as the run recorded it (trailer, line {})", trailer->line));
      kept.push_back(std::move(f));
    }
  for (core::Finding& f : result.findings) {
    if (!unmatched(f)) {
      kept.push_back(std::move(f));
      continue;
    }
    f.summary = "left unmatched when the run stopped at its first failure: " + f.summary;
    result.notes.push_back(std::move(f));
  }
  result.findings = std::move(kept);
  result.verdict = result.findings.front().verdict;
}

// PyTorch Flight Recorder dumps, one per rank: checked for root causes.
report::RunRecord check_dumps(const traces::FrDumpSet& set, const std::string& calls) {
  report::RunRecord rec;
  rec.file = set.where;
  rec.scenario = fmt::format("flight-recorder ({}, prefix '{}')",
                             core::count_of(static_cast<int64_t>(set.dumps.size()), "rank"), set.prefix);
  rec.strategy = "hardware";
  rec.flight_recorder = true;
  rec.has_expectation = false;
  const std::optional<verify::FrCalls> model = verify::parse_fr_calls(calls);
  PPSPEC_ASSERT(model.has_value(), "--calls '{}' passed the option's check", calls);
  rec.result = verify::check_flight_recorder(set.dumps, verify::FrCheckOptions{*model});
  rec.ok = rec.result.verdict == core::Verdict::pass;
  return rec;
}

// A job's NCCL profiler plugin traces (a folder of them, or the files named): checked as `ppspec
// watch` checks them live.
report::RunRecord check_job(const std::vector<std::string>& files, const std::string& where) {
  const watch::JobCheck job = watch::check_plugin_traces(files);
  report::RunRecord rec;
  rec.file = where;
  rec.scenario = fmt::format("nccl job ({} rank{}, NCCL profiler plugin traces)", job.ranks, job.ranks == 1 ? "" : "s");
  rec.strategy = "hardware";
  rec.has_expectation = false;
  rec.result = job.result;
  rec.ok = rec.result.verdict == core::Verdict::pass;
  return rec;
}

std::optional<std::string> prefix_of(const CheckArgs& args) {
  if (args.prefix.empty()) return std::nullopt;
  return args.prefix;
}

report::RunRecord check_one(const std::string& path, const CheckArgs& args, std::ostream& err) {
  if (std::filesystem::is_directory(path) && watch::is_plugin_trace_path(path))
    return check_job(watch::plugin_trace_files({path}), path);
  if (std::filesystem::is_directory(path)) {
    if (!traces::is_fr_dir(path))
      throw core::InputError(path, 0,
                             "a folder that holds no Flight Recorder dumps (files named PREFIX + rank: rank_0, "
                             "rank_0.json, nccl_trace_rank_0; or a json/ or pickle/ folder of them) and no NCCL "
                             "profiler plugin traces (rankN.HOST.PID.jsonl)");
    return check_dumps(traces::read_fr_dir(path, prefix_of(args)), args.calls);
  }
  if (traces::is_fr_file(path)) {
    return check_dumps(traces::read_fr_files({path}, prefix_of(args)), args.calls);
  }
  traces::TraceReader reader(path, traces::TraceReader::Options{});
  limit_to_embedded_ranks(reader);
  const traces::TraceHeader& h = reader.header();
  std::optional<serving::ServingScenario> scenario;
  if (h.kind == core::ScenarioKind::serving || (!h.kind && !args.scenario.empty()))
    scenario = serving_scenario_of(reader, args.scenario, err);
  if (scenario)  // the monitors keep state per rank of the scenario: a rank outside it is refused first
    reader.limit_ranks(scenario->config.runtime_ranks(),
                       fmt::format("the {}-rank scenario '{}'", scenario->config.runtime_ranks(),
                                   core::printable(scenario->name, 80)));
  std::vector<core::Finding> found;
  std::unique_ptr<verify::ServingMonitors> monitors;
  if (scenario)
    monitors = std::make_unique<verify::ServingMonitors>(
        verify::serving_facts(scenario->config, engine::make_checkpoint(scenario->config.model)),
        [&found](core::Finding f) { found.push_back(std::move(f)); });
  verify::TraceChecker checker;
  while (const core::Event* e = reader.next()) {
    if (!monitors && core::is_engine_probe(e->kind))
      throw core::InputError(path, reader.line(),
                             "a serving probe in a trace whose header does not say it is of a serving run: the serving "
                             "monitors cannot be configured; name its scenario with --scenario FILE");
    checker.on_event(*e);
    if (monitors) monitors->on_event(*e);
  }
  report::RunRecord rec;
  rec.file = path;
  rec.scenario = h.scenario.empty() ? "?" : h.scenario;
  rec.seed = h.seed;
  rec.strategy = h.strategy;
  rec.has_expectation = false;
  if (reader.trailer()) rec.recorded = reader.trailer()->verdict;
  rec.result = checker.result();
  if (monitors) {
    // On a tie the monitors' findings go first: operations left unmatched at the very end of a run
    // that a monitor stopped are its consequence, not its cause.
    core::RunResult merged;
    merged.findings = std::move(found);
    merged.stats = rec.result.stats;
    std::vector<core::Finding> recorded = std::move(rec.result.findings);
    for (core::Finding& f : rec.result.notes) recorded.push_back(std::move(f));
    verify::settle_verdict(merged, std::move(recorded), scenario->runtime.strict);
    rec.result = std::move(merged);
  }
  demote_stop_consequences(reader, rec.result);
  cross_check_trailer(reader, rec.result);
  rec.ok = rec.result.verdict == core::Verdict::pass;
  return rec;
}

}  // namespace

core::RunResult check_path(const std::string& path, const std::string& scenario, std::ostream& err) {
  CheckArgs a;
  a.scenario = scenario;
  return check_one(path, a, err).result;
}

int check_command(const CheckArgs& args, std::ostream& out, std::ostream& err) {
  nlohmann::json all = nlohmann::json::array();
  std::string text;
  int dirty = 0;
  // Dump files (or plugin traces) named one by one are one job, checked together where the first
  // of them is named.
  std::vector<std::string> dump_files, plugin_files;
  for (const std::string& path : args.traces) {
    if (std::filesystem::is_directory(path)) continue;
    if (watch::is_plugin_trace_path(path))
      plugin_files.push_back(path);
    else if (traces::is_fr_file(path))
      dump_files.push_back(path);
  }
  bool dumps_done = false, plugin_done = false;
  for (const std::string& path : args.traces) {
    const bool dump_file = std::find(dump_files.begin(), dump_files.end(), path) != dump_files.end();
    const bool plugin_file = std::find(plugin_files.begin(), plugin_files.end(), path) != plugin_files.end();
    if ((dump_file && dumps_done) || (plugin_file && plugin_done)) continue;
    try {
      const report::RunRecord rec = dump_file
                                        ? check_dumps(traces::read_fr_files(dump_files, prefix_of(args)), args.calls)
                                    : plugin_file ? check_job(plugin_files, path)
                                                  : check_one(path, args, err);
      dumps_done = dumps_done || dump_file;
      plugin_done = plugin_done || plugin_file;
      if (!rec.ok) ++dirty;
      if (args.json)
        all.push_back(to_json(rec));
      else
        text += report::format_text(rec);
    } catch (const core::InputError& e) {
      return report_bad_input(err, e);
    }
  }
  if (args.json)
    out << report::dump_json(all) << '\n';
  else
    out << text;
  return dirty == 0 ? 0 : 1;
}

}  // namespace ppspec::tools
