#include "tools/run_command.h"

#include "tools/backends.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <memory>
#include <optional>
#include <ostream>
#include <regex>
#include <variant>

#include "core/assert.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/printable.h"
#include "scenario/program_loader.h"
#include "scenario/serving_loader.h"
#include "scenario/toml_reader.h"
#include "program/runner.h"
#include "runs/execute.h"
#include "serving/runner.h"
#include "tools/bad_input.h"
#include "tools/gpu_runs.h"
#include "tools/run_support.h"
#include "report/report.h"
#include "report/serving_figures.h"
#include "traces/jsonl_writer.h"

namespace ppspec::tools {
namespace {

// Seeds the command line accepts: what a scenario's [explore] seed accepts, and counts for which
// first + count never wraps around.
constexpr uint64_t kSeedMax = INT64_MAX;
constexpr uint64_t kSeedsMax = uint64_t{1} << 40;

// One simulated run of a scenario; fills the record's result (and serving figures).
void simulate_once(const Scenario& sc, uint64_t seed, const core::StrategySpec& strategy, core::EventSink* sink,
                   report::RunRecord& rec) {
  // Test hook (tests/cli_test.cc): PPSPEC_TEST_INTERNAL_ERROR_IN=NAME fails the runs of scenario NAME
  // as a bug of ppspec would, so that one scenario's failure is proven not to lose the others'.
  if (const char* name = std::getenv("PPSPEC_TEST_INTERNAL_ERROR_IN"); name != nullptr && rec.scenario == name)
    throw core::InternalError(fmt::format("test hook in scenario {}", name));
  runs::RunChoices choices;
  choices.seed = seed;
  choices.strategy = strategy;
  choices.sink = sink;
  if (const auto* p = std::get_if<program::Program>(&sc)) {
    rec.result = runs::execute(*p, choices);
    rec.mismatch = core::expectation_mismatch(p->expect, rec.result);
    return;
  }
  const auto& s = std::get<serving::ServingScenario>(sc);
  const serving::ServingRun run = runs::execute(s, choices);
  rec.result = run.result;
  rec.serving = report::figures_of(run, s);
  rec.mismatch = core::expectation_mismatch(s.expect, rec.result);
}

// One seed of a scenario: its run, its trace, its record; nullopt (after saying why on `err`) when
// the trace cannot be written or the scenario does not fit the memory budget (exit 2).
std::optional<report::RunRecord> run_seed(const Loaded& loaded, const Exploration& x,
                                          const core::StrategySpec& strategy, uint64_t seed, const RunArgs& args,
                                          TracePaths& paths, std::ostream& err) {
  report::RunRecord rec;
  rec.file = x.file;
  rec.scenario = x.name;
  rec.seed = seed;
  rec.strategy = strategy.str();
  rec.expected = x.expect;
  rec.expectation_written = x.expect_given;
  rec.reproduce = fmt::format("ppspec run {} --seed {} --strategy {}", shell_word(x.file), seed, strategy.str());
  std::unique_ptr<traces::JsonlWriter> writer;
  if (!args.trace.empty()) {
    traces::TraceHeader header;
    header.scenario = x.name;
    header.file = x.file;
    header.seed = seed;
    header.strategy = strategy.str();
    header.kind = loaded.kind;
    header.scenario_hash = loaded.hash;
    header.content_hash = loaded.content_hash;
    if (loaded.text.size() <= traces::kEmbeddedScenarioBytesMax) header.scenario_text = loaded.text;
    try {
      writer = std::make_unique<traces::JsonlWriter>(paths.next(x.name, seed), header);
    } catch (const std::exception& e) {
      err << "ppspec: " << e.what() << '\n';
      return std::nullopt;
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  try {
    simulate_once(loaded.scenario, seed, strategy, writer.get(), rec);
  } catch (const core::CapacityError& e) {
    err << fmt::format("ppspec: {}: {}\n", x.file, e.what());
    return std::nullopt;
  } catch (const core::InputError&) {
    throw;
  } catch (const std::exception& e) {
    // A bug of ppspec in this run: said, and the other runs go on (exit 3 at the end).
    rec.internal_error = e.what();
    rec.ok = false;
    return rec;
  }
  rec.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (writer) writer->finish(rec.result);
  rec.ok = rec.mismatch.empty();
  return rec;
}

// A report with its seed's own words and its times taken out ("seed 3", "--seed 3", "129.4 us"), to
// tell whether two seeds found the same thing.
std::string report_shape(const std::string& report, uint64_t seed) {
  static const std::regex kTime("[0-9]+(\\.[0-9]+)? (us|ms|s)\\b");
  std::string s = std::regex_replace(report, kTime, "T");
  for (const std::string& word : {fmt::format("--seed {} ", seed), fmt::format("seed {} ", seed)})
    for (size_t at = s.find(word); at != std::string::npos; at = s.find(word, at)) s.erase(at, word.size());
  return s;
}

// Every seed of one scenario. One seed prints its report; several print one summary line and the
// report of the first unexpected seed only (a person reads the first failure, not a hundred
// passes), or, with --verbose, every seed's report before the summary. A run that ends in an
// internal error of ppspec is reported where it happened and the others go on. Returns the exit
// status: 0, 1, 2 (a trace or the memory budget), 3 (an internal error).
int run_seeds(const Loaded& loaded, const RunArgs& args, const std::optional<core::StrategySpec>& cli_strategy,
              TracePaths& paths, nlohmann::json& all, std::ostream& out, std::ostream& err) {
  const Exploration x = exploration_of(loaded.scenario);
  const core::StrategySpec strategy = cli_strategy.value_or(x.strategy);
  const uint64_t first = args.seed.value_or(x.seed);
  const uint64_t n = args.seeds.value_or(x.seeds);
  PPSPEC_ASSERT(n >= 1 && first <= kSeedMax && n <= kSeedsMax, "seeds {} + {}", first, n);  // no wrap-around
  const bool summarise = n > 1 && !args.json;
  report::SeedSummary summary{x.file, x.name, strategy.str(), x.expect, first};
  std::string first_unexpected, previous;
  uint64_t internal_errors = 0;
  for (uint64_t i = 0; i < n; ++i) {
    if (core::interrupted()) break;  // Ctrl-C: the seeds run so far, summarised
    std::optional<report::RunRecord> rec = run_seed(loaded, x, strategy, first + i, args, paths, err);
    if (!rec) return kExitBadInput;
    summary.add(*rec);
    if (!rec->internal_error.empty()) {
      ++internal_errors;
      if (args.json)
        all.push_back(to_json(*rec));
      else
        out << report::format_text(*rec) << std::flush;
      continue;
    }
    if (args.json) {
      all.push_back(to_json(*rec));
    } else if (!summarise || args.verbose) {
      // --verbose: a seed whose report is the one before it, but for its seed and times, says so in a line.
      std::string text = report::format_text(*rec);
      const std::string shape = report_shape(text, rec->seed);
      if (summarise && shape == previous)
        text = fmt::format("     seed {}: the same report as seed {}, times aside\n", rec->seed, rec->seed - 1);
      else
        previous = shape;
      out << text << std::flush;
    } else if (!rec->ok && first_unexpected.empty()) {
      first_unexpected = report::format_text(*rec);
    }
  }
  if (summarise) out << report::format_summary(summary) << first_unexpected << std::flush;
  if (core::interrupted() && summary.seeds < n) {
    err << fmt::format("ppspec run: interrupted (Ctrl-C) after {} of {} seeds of {}\n", summary.seeds, n, x.file);
    return core::kExitInterrupted;
  }
  if (internal_errors > 0) return 3;
  return summary.as_expected == summary.seeds ? 0 : 1;
}

}  // namespace

namespace {

// The files to run: each named file, and each named folder's *.toml (not its subfolders'), sorted.
std::vector<std::string> scenario_files(const std::vector<std::string>& named) {
  std::vector<std::string> files;
  for (const std::string& n : named) {
    if (!std::filesystem::is_directory(n)) {
      files.push_back(n);
      continue;
    }
    std::vector<std::string> in_folder;
    for (const auto& entry : std::filesystem::directory_iterator(n))
      if (entry.is_regular_file() && entry.path().extension() == ".toml") in_folder.push_back(entry.path().string());
    if (in_folder.empty()) throw core::InputError(n, 0, "a folder with no scenario file (*.toml) in it");
    std::sort(in_folder.begin(), in_folder.end());
    files.insert(files.end(), in_folder.begin(), in_folder.end());
  }
  return files;
}

// After several scenario files: how many met their [expect], and which did not.
std::string total_line(size_t files, const std::vector<std::string>& unexpected) {
  std::string s = fmt::format("total: {} scenario files, {} as expected", files, files - unexpected.size());
  if (!unexpected.empty()) s += fmt::format(", {} not: {}", unexpected.size(), fmt::join(unexpected, ", "));
  return s + "\n";
}

}  // namespace

int run_command(const RunArgs& args, std::ostream& out, std::ostream& err) {
  std::optional<core::StrategySpec> cli_strategy;
  if (args.strategy) {
    cli_strategy = core::parse_strategy(*args.strategy);
    if (!cli_strategy) {
      err << fmt::format("ppspec: --strategy '{}': expected {}\n", core::printable(*args.strategy, 60),
                         core::kStrategySyntax);
      return kExitBadInput;
    }
  }
  const std::optional<RunBackend> backend = parse_run_backend(args.backend);
  if (!backend) {
    err << fmt::format("ppspec: --backend '{}': expected sim, gpu or both\n", core::printable(args.backend, 40));
    return kExitBadInput;
  }
  if (args.seed && *args.seed > kSeedMax) {
    err << fmt::format("ppspec: --seed {}: expected a seed in [0, {}]\n", *args.seed, kSeedMax);
    return kExitBadInput;
  }
  if (args.seeds && (*args.seeds < 1 || *args.seeds > kSeedsMax)) {
    err << fmt::format("ppspec: --seeds {}: expected a count in [1, {}]\n", *args.seeds, kSeedsMax);
    return kExitBadInput;
  }
  // Read everything first: bad input anywhere stops before any run.
  std::vector<Loaded> scenarios;
  bool bad = false;
  std::vector<std::string> files;
  try {
    files = scenario_files(args.files);
  } catch (const core::InputError& e) {
    return report_bad_input(err, e);
  }
  for (const std::string& file : files) {
    try {
      scenarios.push_back(load_scenario(file));
    } catch (const core::InputError& e) {
      report_bad_input(err, e);
      bad = true;
    }
  }
  if (bad) return kExitBadInput;
  if (scenarios.empty()) {
    err << "ppspec: no scenario to run\n";
    return kExitBadInput;
  }

  if (*backend == RunBackend::gpu) return run_gpu(scenarios, args, out, err);
  if (*backend == RunBackend::both) return run_both(scenarios, args, out, err);
  uint64_t total_runs = 0;
  for (const Loaded& l : scenarios) total_runs += args.seeds.value_or(exploration_of(l.scenario).seeds);
  PPSPEC_ASSERT(total_runs > 0, "a run command that runs nothing");
  TracePaths paths(args.trace, total_runs > 1);
  nlohmann::json all = nlohmann::json::array();
  int code = 0;
  std::vector<std::string> unexpected;
  const core::InterruptScope ctrl_c;
  for (const Loaded& loaded : scenarios) {
    const int c = run_seeds(loaded, args, cli_strategy, paths, all, out, err);
    if (c == kExitBadInput) return kExitBadInput;
    if (c == core::kExitInterrupted) {
      if (args.json) out << report::dump_json(all) << '\n';
      return c;
    }
    code = std::max(code, c);
    if (c != 0) unexpected.push_back(exploration_of(loaded.scenario).file);
  }
  if (args.json) out << report::dump_json(all) << '\n';
  if (!args.json && scenarios.size() > 1) out << total_line(scenarios.size(), unexpected);
  return code;
}

}  // namespace ppspec::tools
