#include "tools/fidelity_command.h"

#include "tools/backends.h"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/rng.h"
#include "verify/fidelity/fr_differential.h"
#include "scenario/generator/fr_shapes.h"
#include "scenario/generator/seeded.h"
#include "verify/fidelity/import_differential.h"
#include "verify/fidelity/plugin_differential.h"
#include "runs/gpu_jobs/gpu_backend.h"
#include "program/runner.h"
#include "program/toml_writer.h"
#include "report/report.h"
#include "runs/execute.h"
#include "tools/bad_input.h"
#include "tools/gpu_runs.h"
#include "tools/run_support.h"

namespace ppspec::tools {
std::string verdict_class(core::Verdict v) {
  switch (v) {
    case core::Verdict::pass:
    case core::Verdict::hazard: return "pass";
    case core::Verdict::deadlock:
    case core::Verdict::hang: return "hang";
    case core::Verdict::fifo_misalignment: return "misalignment";
    default: return std::string(core::to_string(v));
  }
}

// The hardware ran one schedule of the simulator's many: agreement is the GPU's class being one
// the simulator gives under some seed. A kernel that faulted never completes either: NCCL 2.28.9
// faults instead of hanging where a send at first contact of 1 MiB or more finds no receiving side.
bool classes_agree(const std::set<std::string>& simulator, const std::string& gpu) {
  return simulator.count(gpu) > 0 || (gpu == "device-fault" && simulator.count("hang") > 0);
}

namespace {

// The command line checked --backend against the names (main.cc); a caller in code passes one of them too.
FidelityBackend backend_of(const FidelityArgs& args) {
  const std::optional<FidelityBackend> b = parse_fidelity_backend(args.backend);
  PPSPEC_ASSERT(b.has_value(), "fidelity --backend '{}'", args.backend);
  return *b;
}

namespace fs = std::filesystem;

struct ProgramResult {
  std::string name, file;
  int ranks = 0;
  std::vector<std::string> features;
  std::string disturbance;
  std::vector<std::string> sim;  // the class under each simulator seed
  std::string sim_summary;       // the first seed's first finding
  std::string gpu;               // the GPU's class; "error" with gpu_summary saying why; empty: not run
  std::string gpu_summary;
  double gpu_wall_s = 0;

  std::set<std::string> sim_set() const { return {sim.begin(), sim.end()}; }
  bool compared() const { return !gpu.empty(); }
  bool agrees() const { return classes_agree(sim_set(), gpu); }
};

nlohmann::json to_json(const ProgramResult& r) {
  return {{"name", r.name},
          {"file", r.file},
          {"ranks", r.ranks},
          {"features", r.features},
          {"disturbance", r.disturbance},
          {"sim", r.sim},
          {"sim_summary", r.sim_summary},
          {"gpu", r.gpu},
          {"gpu_summary", r.gpu_summary},
          {"gpu_wall_s", r.gpu_wall_s}};
}

void gpu_part_from_json(const nlohmann::json& j, ProgramResult& r) {
  r.gpu = j.value("gpu", "");
  r.gpu_summary = j.value("gpu_summary", "");
  r.gpu_wall_s = j.value("gpu_wall_s", 0.0);
}

// One line: results are kept in comments and table cells.
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '|') c = ' ';
  return s;
}

std::string first_summary(const core::RunResult& r) {
  if (!r.findings.empty()) return one_line(r.findings.front().summary);
  return r.notes.empty() ? std::string() : one_line("note: " + r.notes.front().summary);
}

// The program's file with its expectation set to what the simulator says under its first seed.
ProgramResult simulate(generator::GeneratedProgram& g, const fs::path& file, uint64_t seeds) {
  ProgramResult r;
  r.name = g.program.name;
  r.file = file.string();
  r.ranks = g.program.num_ranks;
  r.features = g.features;
  r.disturbance = g.disturbance;
  g.program.file = r.file;
  { std::ofstream(file) << program::to_toml(g.program); }
  // Run what the file says, as `ppspec run` would: the loader checks the generator's output and
  // gives every operation its scenario line.
  const Loaded loaded = load_scenario(r.file);
  const auto& p = std::get<program::Program>(loaded.scenario);
  for (uint64_t s = 1; s <= seeds; ++s) {
    runs::RunChoices choices;
    choices.seed = s;
    choices.strategy = core::StrategySpec{};  // every program under the default strategy, whatever its file says
    choices.record_decisions = false;
    const core::RunResult run = runs::execute(p, choices);
    r.sim.push_back(verdict_class(run.verdict));
    if (s == 1) {
      r.sim_summary = first_summary(run);
      g.program.expect.verdict = run.verdict;
    }
  }
  std::ofstream(file) << program::to_toml(g.program);
  return r;
}

// The GPU's trace goes to OUT/traces/, so that a disagreement can be read event by event.
void run_gpu_part(const FidelityArgs& args, const fs::path& trace, ProgramResult& r) {
  const Loaded loaded = load_scenario(r.file);
  const gpu_jobs::GpuOutcome o =
      gpu_jobs::run_on_gpus(loaded, gpu_jobs::gpu_run_options(trace.string(), args.hang_timeout_s));
  r.gpu_wall_s = o.wall_ms / 1000.0;
  if (o.failure != gpu_jobs::GpuFailure::none) {
    r.gpu = "error";
    r.gpu_summary = one_line(o.error);
    return;
  }
  r.gpu = verdict_class(o.executed->result().verdict);
  r.gpu_summary = first_summary(o.executed->result());
}

std::string classes(const ProgramResult& r) {
  std::map<std::string, int> n;
  for (const auto& c : r.sim) ++n[c];
  std::string s;
  for (const auto& [c, k] : n)
    s += fmt::format("{}{}{}", s.empty() ? "" : ", ", c, n.size() > 1 ? fmt::format(" ×{}", k) : "");
  return s;
}

// A disagreement, kept as a scenario that runs as it is: the simulator's verdict is its `verdict`,
// the hardware's its `gpu_verdict` (where the hardware gave one), both results in its comments.
void keep_disagreement(const ProgramResult& r, const fs::path& dir) {
  std::ifstream in(r.file);
  std::stringstream text;
  text << in.rdbuf();
  std::string body = text.str();
  const auto gv = core::parse_verdict(r.gpu == "misalignment" ? "fifo-misalignment" : r.gpu);
  if (gv && r.gpu != "error") body += fmt::format("gpu_verdict = \"{}\"\n", core::to_string(*gv));
  std::ofstream out(dir / fs::path(r.file).filename());
  out << fmt::format(
      "# Kept by `ppspec fidelity`: the simulator and the GPUs disagree.\n# simulator: {} — {}\n# GPU: {} — {}\n",
      classes(r), r.sim_summary, r.gpu, r.gpu_summary);
  out << body;
}

constexpr const char* kClasses[] = {"pass",          "hang",       "device-fault", "misalignment",
                                    "invalid-usage", "step-limit", "error"};

std::string percent(size_t a, size_t b) {
  return b == 0 ? "–" : fmt::format("{:.1f} %", 100.0 * static_cast<double>(a) / static_cast<double>(b));
}

void write_matrix(std::ostream& md, const std::vector<ProgramResult>& rs) {
  md << "| simulator \\ GPU |";
  for (const char* c : kClasses) md << ' ' << c << " |";
  md << "\n|---|";
  for (size_t i = 0; i < std::size(kClasses); ++i) md << "---|";
  md << '\n';
  std::map<std::string, std::map<std::string, int>> m;
  for (const ProgramResult& r : rs)
    if (r.compared()) ++m[classes(r)][r.gpu];
  for (const auto& [sim, row] : m) {
    md << "| " << sim << " |";
    for (const char* c : kClasses) md << ' ' << (row.count(c) ? std::to_string(row.at(c)) : "") << " |";
    md << '\n';
  }
}

void write_features(std::ostream& md, const std::vector<ProgramResult>& rs) {
  struct Count {
    size_t programs = 0, compared = 0, agree = 0;
  };
  std::map<std::string, Count> by;
  for (const ProgramResult& r : rs)
    for (const std::string& f : r.features) {
      Count& c = by[f];
      ++c.programs;
      c.compared += r.compared();
      c.agree += r.compared() && r.agrees();
    }
  md << "| feature | programs | run on GPUs | agree |\n|---|---|---|---|\n";
  for (const auto& [f, c] : by)
    md << fmt::format("| {} | {} | {} | {} ({}) |\n", f, c.programs, c.compared, c.agree, percent(c.agree, c.compared));
}

void write_table(const FidelityArgs& args, const std::vector<ProgramResult>& rs, const fs::path& path) {
  size_t compared = 0, agree = 0, sim_only = 0, varying = 0;
  for (const ProgramResult& r : rs) {
    compared += r.compared();
    agree += r.compared() && r.agrees();
    sim_only += !r.compared();
    varying += r.sim_set().size() > 1;
  }
  std::ofstream md(path);
  const std::string against = backend_of(args) == FidelityBackend::both ? fmt::format("{} GPUs", args.gpus)
                              : backend_of(args) == FidelityBackend::recorded
                                  ? fmt::format("{} GPUs' recorded results", args.gpus)
                                  : std::string("nothing (simulator only)");
  md << fmt::format("# Fidelity: {} generated programs, the simulator against {}\n\n", rs.size(), against);
  md << fmt::format("`ppspec fidelity --programs {} --seed {} --backend {} --sim-seeds {} --hang-timeout {}`\n\n",
                    args.programs, args.seed, args.backend, args.sim_seeds, args.hang_timeout_s);
  md << fmt::format("* compared on GPUs: **{}**; the same verdict class: **{} ({})**\n", compared, agree,
                    percent(agree, compared));
  md << fmt::format("* simulator only (more ranks than GPUs, or not run on GPUs): {}\n", sim_only);
  md << fmt::format("* verdict varies with the simulator's seed ({} seeds): {}\n\n", args.sim_seeds, varying);
  md << "Classes: the simulator's `deadlock` is the hardware's `hang` (or `device-fault`, a kernel that faulted "
        "instead of hanging); `misalignment` is `fifo-misalignment` (on GPUs, the "
        "trace checker's finding); a hazard is a note on a pass. A program agrees when the GPU's class is one the "
        "simulator gives under some seed.\n\n## Verdict classes (rows: the simulator's over its seeds)\n\n";
  write_matrix(md, rs);
  md << "\n## By feature\n\n";
  write_features(md, rs);
  md << "\n## Disagreements\n\n| program | ranks | disturbance | simulator | GPU |\n|---|---|---|---|---|\n";
  for (const ProgramResult& r : rs)
    if (r.compared() && !r.agrees())
      md << fmt::format("| `{}` | {} | {} | {}: {} | {}: {} |\n", fs::path(r.file).filename().string(), r.ranks,
                        r.disturbance.empty() ? "–" : r.disturbance, classes(r), r.sim_summary, r.gpu, r.gpu_summary);
}

// The GPU part of an earlier run of this program, kept so that a resumed run does not spend GPU time twice.
bool load_kept_gpu(const fs::path& json, ProgramResult& r) {
  if (!fs::exists(json)) return false;
  try {
    std::ifstream in(json);
    const nlohmann::json j = nlohmann::json::parse(in);
    if (j.value("gpu", "").empty()) return false;
    gpu_part_from_json(j, r);
    return true;
  } catch (const std::exception&) {
    return false;  // a file cut short by an interrupted run: run again
  }
}

ProgramResult one_program(const FidelityArgs& args, uint64_t i, const fs::path& out) {
  const std::string name = fmt::format("fid-s{}-{:04}", args.seed, i);
  generator::GeneratorOptions gopts;
  gopts.max_ranks = args.max_ranks;
  generator::GeneratedProgram g = generator::generate_program(core::derive_seed(args.seed, i), name, gopts);
  ProgramResult r = simulate(g, out / "programs" / (name + ".toml"), args.sim_seeds);
  const fs::path kept = out / "results" / (name + ".json");
  const bool on_gpus = r.ranks <= args.gpus;
  if (backend_of(args) == FidelityBackend::recorded) {
    // The simulator of this build against what the GPUs gave in an earlier run: nothing written.
    if (on_gpus) load_kept_gpu(kept, r);
    return r;
  }
  if (backend_of(args) == FidelityBackend::both && on_gpus && (args.rerun_gpu || !load_kept_gpu(kept, r))) {
    run_gpu_part(args, out / "traces" / (name + ".gpu.jsonl"), r);
    std::ofstream(kept) << to_json(r).dump(1) << '\n';
  } else if (backend_of(args) == FidelityBackend::sim || !on_gpus) {
    std::ofstream(kept) << to_json(r).dump(1) << '\n';
  }
  return r;
}

// The Flight Recorder and import differentials, over one family of dumps or every one.
int dumps_differential(const FidelityArgs& args, std::ostream& out, std::ostream& err) {
  fidelity::FrDifferentialOptions o;
  o.programs = args.programs;
  o.seed = args.seed;
  o.out = args.out;
  o.max_ranks = args.max_ranks;
  if (args.shape == "all" && backend_of(args) == FidelityBackend::flight_recorder)
    return fidelity::fr_differential_all_main(o, out);
  const std::optional<generator::FrShape> shape = generator::parse_fr_shape(args.shape);
  if (!shape) {
    err << fmt::format(
        "ppspec: --shape {} is none of the families (async, sync, coalesced, batched, all_to_all, wrapped, gloo, "
        "snapshot, or all)\n",
        args.shape);
    return kExitBadInput;
  }
  o.shape = *shape;
  return backend_of(args) == FidelityBackend::import ? fidelity::import_differential_main(o, out)
                                                     : fidelity::fr_differential_main(o, out);
}

}  // namespace

int fidelity_main(const FidelityArgs& args, std::ostream& out, std::ostream& err) {
  if (backend_of(args) == FidelityBackend::flight_recorder || backend_of(args) == FidelityBackend::import)
    return dumps_differential(args, out, err);
  if (backend_of(args) == FidelityBackend::nccl_profiler && !args.scenario_files.empty()) {
    std::filesystem::create_directories(args.out);
    return fidelity::plugin_scenarios_main(args.scenario_files, (std::filesystem::path(args.out) / "runs").string(),
                                           (std::filesystem::path(args.out) / "scenarios.md").string(), out);
  }
  if (backend_of(args) == FidelityBackend::nccl_profiler) {
    fidelity::PluginDifferentialOptions o;
    o.programs = args.programs;
    o.seed = args.seed;
    o.out = args.out;
    o.max_ranks = args.max_ranks;
    o.interface = args.interface;
    return fidelity::plugin_differential_main(o, out);
  }
  if (backend_of(args) == FidelityBackend::both && !gpu_jobs::gpu_backend_built()) {
    err << "ppspec: this ppspec was built without the GPU backend; use --backend sim\n";
    return kExitBadInput;
  }
  const fs::path dir(args.out);
  for (const char* sub : {"programs", "results", "disagreements", "traces"}) fs::create_directories(dir / sub);
  std::vector<ProgramResult> results;
  for (uint64_t i = 0; i < args.programs; ++i) {
    ProgramResult r;
    try {
      r = one_program(args, i, dir);
    } catch (const core::InputError& e) {
      // The generator wrote something the loader refuses: a bug of the generator, never skipped.
      err << fmt::format("ppspec: generated program {} is not a valid scenario: {}\n", i, e.what());
      return 3;
    }
    const std::string gpu =
        r.compared() ? fmt::format("GPU {:<13} {}", r.gpu, r.agrees() ? "agree" : "DISAGREE") : "GPU not run";
    out << fmt::format("[{}/{}] {}  {} ranks  simulator {:<22} {}\n", i + 1, args.programs, r.name, r.ranks, classes(r),
                       gpu)
        << std::flush;
    if (r.compared() && !r.agrees()) keep_disagreement(r, dir / "disagreements");
    results.push_back(std::move(r));
  }
  write_table(args, results, dir / "fidelity.md");
  size_t compared = 0, agree = 0;
  for (const ProgramResult& r : results) {
    compared += r.compared();
    agree += r.compared() && r.agrees();
  }
  out << fmt::format("fidelity: {} programs; {} compared on GPUs, {} agree ({}); table: {}\n", results.size(), compared,
                     agree, percent(agree, compared), (dir / "fidelity.md").string());
  if (compared == 0 && backend_of(args) != FidelityBackend::sim) {
    // Nothing compared is no agreement: no GPU result was there to compare with.
    err << fmt::format("ppspec fidelity: compared nothing: {}\n",
                       backend_of(args) == FidelityBackend::recorded
                           ? fmt::format("no GPU result is kept in {}/results for these programs (run "
                                         "--backend both on a GPU machine first)",
                                         args.out)
                           : fmt::format("no program fits this machine's {} GPU(s)", args.gpus));
    return 1;
  }
  return agree == compared ? 0 : 1;
}

}  // namespace ppspec::tools
