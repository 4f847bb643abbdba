#include "tools/run_command.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <memory>
#include <set>
#include <ostream>
#include <variant>

#include "core/assert.h"
#include "core/error.h"
#include "core/printable.h"
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

// Seeds the command line accepts: what a scenario's [explore] seed accepts, and counts for which
// first + count never wraps around.
constexpr uint64_t kSeedMax = INT64_MAX;
constexpr uint64_t kSeedsMax = uint64_t{1} << 40;

// A file name made of the scenario's name: letters, digits, '.', '-' and '_' only, so that a name
// cannot reach into another folder or hold a newline.
std::string file_safe(std::string_view name) {
  std::string s;
  for (char c : name.substr(0, 64)) s.push_back(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ? c : '_');
  if (s.empty() || s.front() == '.') s.insert(s.begin(), '_');
  return s;
}

// Where the trace of one run goes: OUT itself for a single run, else OUT-<scenario>-seed<N>.jsonl,
// made unique when two scenarios share a name.
class TracePaths {
 public:
  TracePaths(std::string base, bool many) : base_(std::move(base)), many_(many) {}
  std::string next(const std::string& scenario, uint64_t seed) {
    if (!many_) return base_;
    const std::filesystem::path p(base_);
    const std::string stem = fmt::format("{}-{}-seed{}", p.stem().string(), file_safe(scenario), seed);
    std::string path = (p.parent_path() / (stem + p.extension().string())).string();
    for (int k = 2; !used_.insert(path).second; ++k)
      path = (p.parent_path() / fmt::format("{}-{}{}", stem, k, p.extension().string())).string();
    return path;
  }

 private:
  std::string base_;
  bool many_;
  std::set<std::string> used_;
};

// A file name as one word of a shell command.
std::string shell_word(const std::string& s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("/._-+=:,@").find(c) != std::string_view::npos;
  });
  if (plain) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

int run_gpu(const std::vector<program::Program>& programs, const RunArgs& args, std::ostream& out, std::ostream& err) {
  if (!gpu_backend_built()) {
    err << "ppspec: this ppspec was built without the GPU backend (CMake found no CUDA toolkit or NCCL); see README\n";
    return 2;
  }
  nlohmann::json all = nlohmann::json::array();
  int failures = 0;
  TracePaths paths(args.trace, programs.size() > 1);
  for (const program::Program& p : programs) {
    RunRecord rec;
    rec.file = p.file;
    rec.scenario = p.name;
    rec.strategy = "gpu";
    rec.gpu = true;
    rec.expected = p.expect.gpu_verdict.value_or(p.expect.verdict);
    rec.reproduce = fmt::format("ppspec run --backend gpu {}", shell_word(p.file));
    GpuRunOptions opts;
    if (!args.trace.empty()) opts.trace = paths.next(p.name, 0);
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
  if (args.json) out << dump_json(all) << '\n';
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

struct Loaded {
  Scenario scenario;
  uint64_t hash = 0;  // of the file's bytes: traces record it, so `check` can prove it reads the same file
  std::string kind;
};

Loaded load_scenario(const std::string& file) {
  uint64_t hash = 0;
  const toml::table root = loader::parse_toml_file(file, &hash);
  const std::string kind = loader::scenario_kind(root, file);
  if (kind == "program") return {loader::read_program(root, file), hash, kind};
  return {loader::read_serving(root, file), hash, kind};  // scenario_kind accepts no other kind
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
      err << fmt::format("ppspec: --strategy '{}': expected {}\n", core::printable(*args.strategy, 60), sim::kStrategySyntax);
      return 2;
    }
  }
  if (args.backend != "sim" && args.backend != "gpu") {
    err << fmt::format("ppspec: --backend '{}': expected sim or gpu\n", args.backend);
    return 2;
  }
  if (args.seed && *args.seed > kSeedMax) {
    err << fmt::format("ppspec: --seed {}: expected a seed in [0, {}]\n", *args.seed, kSeedMax);
    return 2;
  }
  if (args.seeds && (*args.seeds < 1 || *args.seeds > kSeedsMax)) {
    err << fmt::format("ppspec: --seeds {}: expected a count in [1, {}]\n", *args.seeds, kSeedsMax);
    return 2;
  }
  // Read everything first: bad input anywhere stops before any run.
  std::vector<Loaded> scenarios;
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
  if (scenarios.empty()) {
    err << "ppspec: no scenario to run\n";
    return 2;
  }

  if (args.backend == "gpu") {
    std::vector<program::Program> programs;
    for (const Loaded& loaded : scenarios) {
      const Scenario& sc = loaded.scenario;
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
  uint64_t total_runs = 0;
  for (const Loaded& l : scenarios) total_runs += args.seeds.value_or(exploration_of(l.scenario).seeds);
  PPSPEC_ASSERT(total_runs > 0, "a run command that runs nothing");
  TracePaths paths(args.trace, total_runs > 1);

  nlohmann::json all = nlohmann::json::array();
  int failures = 0;
  uint64_t ran = 0;
  for (const Loaded& loaded : scenarios) {
    const Exploration x = exploration_of(loaded.scenario);
    const sim::StrategySpec strategy = cli_strategy.value_or(x.strategy);
    const uint64_t first = args.seed.value_or(x.seed);
    const uint64_t n = args.seeds.value_or(x.seeds);
    PPSPEC_ASSERT(n >= 1 && first <= kSeedMax && n <= kSeedsMax, "seeds {} + {}", first, n);  // no wrap-around
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t seed = first + i;
      RunRecord rec;
      rec.file = x.file;
      rec.scenario = x.name;
      rec.seed = seed;
      rec.strategy = strategy.str();
      rec.expected = x.expect;
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
        try {
          writer = std::make_unique<traces::JsonlWriter>(paths.next(x.name, seed), header);
        } catch (const std::exception& e) {
          err << "ppspec: " << e.what() << '\n';
          return 2;
        }
      }
      const auto t0 = std::chrono::steady_clock::now();
      try {
        simulate_once(loaded.scenario, seed, strategy, writer.get(), rec);
      } catch (const core::CapacityError& e) {
        err << fmt::format("ppspec: {}: {}\n", x.file, e.what());
        return 2;
      }
      rec.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (writer) writer->finish(rec.result);
      ++ran;
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
  PPSPEC_ASSERT(ran > 0, "no run was made");
  if (args.json) out << dump_json(all) << '\n';
  return failures == 0 ? 0 : 1;
}

}  // namespace ppspec::tools
