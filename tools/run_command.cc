#include "tools/run_command.h"

#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <memory>
#include <ostream>
#include <variant>

#include "core/error.h"
#include "loader/program_loader.h"
#include "loader/serving_loader.h"
#include "loader/toml_reader.h"
#include "program/runner.h"
#include "serving/runner.h"
#include "tools/gpu_backend.h"
#include "tools/report.h"
#include "traces/jsonl_writer.h"

namespace ppspec::tools {
namespace {

std::string trace_path(const std::string& base, const std::string& scenario, uint64_t seed, bool many) {
  if (!many) return base;
  std::filesystem::path p(base);
  const std::string stem = p.stem().string();
  const std::string ext = p.extension().string();
  return (p.parent_path() / fmt::format("{}-{}-seed{}{}", stem, scenario, seed, ext)).string();
}

int run_gpu(const std::vector<program::Program>& programs, const RunArgs& args, std::ostream& out, std::ostream& err) {
  if (!gpu_backend_built()) {
    err << "ppspec: this ppspec was built without the GPU backend (CMake found no CUDA toolkit or NCCL); see README\n";
    return 2;
  }
  nlohmann::json all = nlohmann::json::array();
  int failures = 0;
  for (const program::Program& p : programs) {
    RunRecord rec;
    rec.file = p.file;
    rec.scenario = p.name;
    rec.strategy = "gpu";
    rec.gpu = true;
    rec.expected = p.expect.gpu_verdict.value_or(p.expect.verdict);
    rec.reproduce = fmt::format("ppspec run --backend gpu {}", p.file);
    GpuRunOptions opts;
    if (!args.trace.empty()) opts.trace = trace_path(args.trace, p.name, 0, programs.size() > 1);
    if (args.hang_timeout_s) opts.hang_timeout = static_cast<core::Time>(*args.hang_timeout_s * core::kSec);
    std::string error;
    if (!run_on_gpu(p, opts, rec, error)) {
      err << fmt::format("ppspec: {}: {}\n", p.file, error);
      return 2;
    }
    if (rec.result.verdict != rec.expected)
      rec.mismatch = fmt::format("GPU verdict {}, expected {}", core::to_string(rec.result.verdict), core::to_string(rec.expected));
    rec.ok = rec.mismatch.empty();
    if (!rec.ok) ++failures;
    if (args.json)
      all.push_back(to_json(rec));
    else
      out << format_text(rec) << std::flush;
  }
  if (args.json) out << all.dump(2) << '\n';
  return failures == 0 ? 0 : 1;
}

using Scenario = std::variant<program::Program, serving::ServingScenario>;

struct Exploration {
  std::string name, file;
  uint64_t seed = 1, seeds = 1;
  sim::StrategySpec strategy;
  core::Verdict expect = core::Verdict::pass;
};

Exploration exploration_of(const Scenario& sc) {
  if (const auto* p = std::get_if<program::Program>(&sc))
    return {p->name, p->file, p->explore.seed, p->explore.seeds, p->explore.strategy, p->expect.verdict};
  const auto& s = std::get<serving::ServingScenario>(sc);
  return {s.name, s.file, s.seed, s.seeds, s.strategy, s.expect.verdict};
}

Scenario load_scenario(const std::string& file) {
  const toml::table root = loader::parse_toml_file(file);
  const std::string kind = loader::scenario_kind(root, file);
  if (kind == "program") return loader::read_program(root, file);
  if (kind == "serving") return loader::read_serving(root, file);
  throw core::InputError(file, loader::line_of(*root.get("kind")),
                         fmt::format("kind \"{}\" is not supported (expected \"program\" or \"serving\")", kind));
}

// One simulated run of a scenario; fills the record's result (and serving figures).
void simulate_once(const Scenario& sc, uint64_t seed, const sim::StrategySpec& strategy, core::EventSink* sink,
                   RunRecord& rec) {
  if (const auto* p = std::get_if<program::Program>(&sc)) {
    program::SimRunOptions opts;
    opts.seed = seed;
    opts.strategy = strategy;
    if (sink != nullptr) opts.sinks.push_back(sink);
    rec.result = program::run_on_sim(*p, opts);
    rec.mismatch = core::expectation_mismatch(p->expect, rec.result);
    return;
  }
  const auto& s = std::get<serving::ServingScenario>(sc);
  serving::RunOptions opts;
  opts.seed = seed;
  opts.strategy = strategy;
  if (sink != nullptr) opts.sinks.push_back(sink);
  const serving::ServingRun run = serving::run_on_sim(s, opts);
  rec.result = run.result;
  rec.serving = ServingFigures{run.stats.steps, static_cast<int64_t>(run.requests.size()), run.stats.output_tokens,
                               run.stats.acceptance_rate(), run.stats.tokens_per_step()};
  rec.mismatch = core::expectation_mismatch(s.expect, rec.result);
}

}  // namespace

int run_command(const RunArgs& args, std::ostream& out, std::ostream& err) {
  std::optional<sim::StrategySpec> cli_strategy;
  if (args.strategy) {
    cli_strategy = sim::parse_strategy(*args.strategy);
    if (!cli_strategy) {
      err << fmt::format("ppspec: --strategy '{}': expected \"random\" or \"pct:DEPTH\"\n", *args.strategy);
      return 2;
    }
  }
  if (args.backend != "sim" && args.backend != "gpu") {
    err << fmt::format("ppspec: --backend '{}': expected sim or gpu\n", args.backend);
    return 2;
  }
  // Read everything first: bad input anywhere stops before any run.
  std::vector<Scenario> scenarios;
  bool bad = false;
  for (const std::string& file : args.files) {
    try {
      scenarios.push_back(load_scenario(file));
    } catch (const core::InputError& e) {
      err << "ppspec: " << e.what() << '\n';
      bad = true;
    }
  }
  if (bad) return 2;

  if (args.backend == "gpu") {
    std::vector<program::Program> programs;
    for (const Scenario& sc : scenarios) {
      if (const auto* p = std::get_if<program::Program>(&sc)) {
        programs.push_back(*p);
        continue;
      }
      // The engine's kernels have CUDA launchers, but the engine is not yet driven over the real
      // runtime: say so rather than run something else.
      err << fmt::format("ppspec: {}: serving scenarios run on the simulator only for now (--backend gpu runs program "
                         "scenarios)\n",
                         exploration_of(sc).file);
      return 2;
    }
    return run_gpu(programs, args, out, err);
  }
  size_t total_runs = 0;
  for (const Scenario& sc : scenarios) total_runs += args.seeds.value_or(exploration_of(sc).seeds);
  const bool many = total_runs > 1;

  nlohmann::json all = nlohmann::json::array();
  int failures = 0;
  for (const Scenario& sc : scenarios) {
    const Exploration x = exploration_of(sc);
    const sim::StrategySpec strategy = cli_strategy.value_or(x.strategy);
    const uint64_t first = args.seed.value_or(x.seed);
    const uint64_t n = args.seeds.value_or(x.seeds);
    for (uint64_t seed = first; seed < first + n; ++seed) {
      RunRecord rec;
      rec.file = x.file;
      rec.scenario = x.name;
      rec.seed = seed;
      rec.strategy = strategy.str();
      rec.expected = x.expect;
      rec.reproduce = fmt::format("ppspec run {} --seed {} --strategy {}", x.file, seed, strategy.str());
      std::unique_ptr<traces::JsonlWriter> writer;
      if (!args.trace.empty()) {
        try {
          writer = std::make_unique<traces::JsonlWriter>(trace_path(args.trace, x.name, seed, many),
                                                         traces::TraceHeader{x.name, x.file, seed, strategy.str()});
        } catch (const std::exception& e) {
          err << "ppspec: " << e.what() << '\n';
          return 2;
        }
      }
      const auto t0 = std::chrono::steady_clock::now();
      simulate_once(sc, seed, strategy, writer.get(), rec);
      rec.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (writer) writer->finish(rec.result);
      rec.ok = rec.mismatch.empty();
      if (args.json)
        all.push_back(to_json(rec));
      else
        out << format_text(rec) << std::flush;
      if (!rec.ok) {
        ++failures;
        break;  // --seeds stops at the first unexpected verdict
      }
    }
  }
  if (args.json) out << all.dump(2) << '\n';
  return failures == 0 ? 0 : 1;
}

}  // namespace ppspec::tools
