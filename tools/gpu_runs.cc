#include "tools/gpu_runs.h"

#include <filesystem>
#include <fmt/format.h>
#include <ostream>
#include <unistd.h>

#include "core/finding_kinds.h"
#include "core/error.h"
#include "core/runtime_config.h"
#include "runs/gpu_jobs/gpu_backend.h"
#include "report/report.h"
#include "report/serving_figures.h"
#include "runs/execute.h"
#include "serving/runner.h"
#include "tools/bad_input.h"
#include "traces/jsonl_writer.h"
#include "traces/trace_reader.h"
#include "verify/findings.h"
#include "verify/oracles/backend_diff.h"

namespace ppspec::tools {
namespace {

core::Verdict gpu_expectation(const Scenario& sc) {
  if (const auto* p = std::get_if<program::Program>(&sc)) return p->expect.gpu_verdict.value_or(p->expect.verdict);
  const auto& s = std::get<serving::ServingScenario>(sc);
  return s.expect.gpu_verdict.value_or(s.expect.verdict);
}

// One scenario on the GPUs; nullopt (with the exit status in `status`) when it gave no verdict.
std::optional<serving::ServingRun> gpu_run(const Loaded& loaded, const RunArgs& args, const std::string& trace,
                                           report::RunRecord& rec, std::ostream& err, int& status) {
  const scenario::Exploration x = exploration_of(loaded.scenario);
  rec.file = x.file;
  rec.scenario = x.name;
  rec.strategy = "gpu";
  rec.gpu = true;
  rec.expected = gpu_expectation(loaded.scenario);
  rec.reproduce = fmt::format("ppspec run --backend gpu {}", shell_word(x.file));
  const gpu_jobs::GpuOutcome o = gpu_jobs::run_on_gpus(loaded, gpu_jobs::gpu_run_options(trace, args.hang_timeout_s));
  rec.wall_ms = o.wall_ms;
  if (o.failure != gpu_jobs::GpuFailure::none) {
    err << fmt::format("ppspec: {}: {}\n", x.file, o.error);
    status = o.failure == gpu_jobs::GpuFailure::bad_input ? 2 : 3;
    return std::nullopt;
  }
  rec.result = o.executed->result();
  serving::ServingRun run;
  if (const serving::ServingRun* s = o.executed->serving()) {
    run = *s;
    rec.serving = report::figures_of(run, std::get<serving::ServingScenario>(loaded.scenario));
  }
  if (rec.result.verdict != rec.expected)
    rec.mismatch =
        fmt::format("GPU verdict {}, expected {}", core::to_string(rec.result.verdict), core::to_string(rec.expected));
  rec.ok = rec.mismatch.empty();
  return run;
}

void emit(const report::RunRecord& rec, const RunArgs& args, nlohmann::json& all, std::ostream& out) {
  if (args.json)
    all.push_back(to_json(rec));
  else
    out << report::format_text(rec) << std::flush;
}

}  // namespace

int run_gpu(const std::vector<Loaded>& scenarios, const RunArgs& args, std::ostream& out, std::ostream& err) {
  if (!gpu_jobs::gpu_backend_built()) {
    err << "ppspec: this ppspec was built without the GPU backend (CMake found no CUDA toolkit or NCCL); see README\n";
    return kExitBadInput;
  }
  nlohmann::json all = nlohmann::json::array();
  int failures = 0;
  TracePaths paths(args.trace, scenarios.size() > 1);
  for (const Loaded& loaded : scenarios) {
    report::RunRecord rec;
    int status = 0;
    const std::string trace = args.trace.empty() ? std::string() : paths.next(exploration_of(loaded.scenario).name, 0);
    if (!gpu_run(loaded, args, trace, rec, err, status)) return status;
    if (!rec.ok) ++failures;
    emit(rec, args, all, out);
  }
  if (args.json) out << report::dump_json(all) << '\n';
  return failures == 0 ? 0 : 1;
}

}  // namespace ppspec::tools

namespace ppspec::tools {
namespace {

report::RunRecord sim_record(const serving::ServingScenario& s, const serving::ServingRun& run) {
  report::RunRecord rec;
  rec.file = s.file;
  rec.scenario = s.name;
  rec.seed = s.seed;
  rec.strategy = s.strategy.str();
  rec.expected = s.expect.verdict;
  rec.reproduce = fmt::format("ppspec run {} --seed {} --strategy {}", shell_word(s.file), s.seed, s.strategy.str());
  rec.result = run.result;
  rec.serving = report::figures_of(run, s);
  rec.mismatch = core::expectation_mismatch(s.expect, rec.result);
  rec.ok = rec.mismatch.empty();
  return rec;
}

core::Finding note(std::string summary) {
  core::Finding f;
  f.verdict = core::Verdict::pass;
  f.kind = core::FindingKind::sim_gpu;
  f.summary = std::move(summary);
  return f;
}

verify::OpLog ops_of_trace(const std::string& path) {
  verify::OpLog log;
  traces::TraceReader reader(path, traces::TraceReader::Options{});
  while (const core::Event* e = reader.next()) log.on_event(*e);
  return log;
}

// The oracle's verdict over two runs of one scenario: the first difference, or why none was sought.
report::RunRecord compare(const serving::ServingScenario& s, const serving::ServingRun& sim,
                          const verify::OpLog& sim_ops, const serving::ServingRun& gpu, const verify::OpLog& gpu_ops) {
  report::RunRecord rec;
  rec.file = s.file;
  rec.scenario = s.name;
  rec.seed = s.seed;
  rec.strategy = "sim = gpu";
  rec.reproduce = fmt::format("ppspec run --backend both {}", shell_word(s.file));
  rec.result.verdict = core::Verdict::pass;
  const bool sim_ok = sim.completed && !verify::is_failure(sim.result.verdict);
  const bool gpu_ok = gpu.completed && !verify::is_failure(gpu.result.verdict);
  if (!sim_ok || !gpu_ok) {
    // A failing run stops (the simulator) or goes astray (hardware): there is nothing to compare.
    rec.result.notes.push_back(
        note(fmt::format("not compared: the simulator's run {} ({}), the GPUs' {} ({})",
                         sim.completed ? "completed" : "stopped", core::to_string(sim.result.verdict),
                         gpu.completed ? "completed" : "stopped", core::to_string(gpu.result.verdict))));
  } else if (auto f = verify::compare_requests(sim.requests, gpu.requests)) {
    rec.result.findings.push_back(std::move(*f));
  } else if (sim_ops.batches() != gpu_ops.batches()) {
    rec.result.notes.push_back(note(
        "every request's tokens and drafts are identical; operation sequences not compared: the two runs scheduled "
        "different batches (arrivals are timed, and a GPU step takes its own time)"));
  } else if (auto g = verify::compare_ops(sim_ops, gpu_ops)) {
    rec.result.findings.push_back(std::move(*g));
  } else {
    rec.result.notes.push_back(note(verify::agreement(sim.requests, sim_ops)));
  }
  if (!rec.result.findings.empty()) rec.result.verdict = rec.result.findings.front().verdict;
  rec.mismatch = rec.result.findings.empty() ? "" : "the simulator and the GPUs differ";
  rec.ok = rec.mismatch.empty();
  return rec;
}

}  // namespace

int run_both(const std::vector<Loaded>& scenarios, const RunArgs& args, std::ostream& out, std::ostream& err) {
  for (const Loaded& l : scenarios)
    if (std::holds_alternative<program::Program>(l.scenario)) {
      err << fmt::format(
          "ppspec: {}: --backend both compares serving scenarios (a program scenario states its GPU "
          "verdict: run it with --backend gpu)\n",
          exploration_of(l.scenario).file);
      return kExitBadInput;
    }
  if (!gpu_jobs::gpu_backend_built()) {
    err << "ppspec: this ppspec was built without the GPU backend (CMake found no CUDA toolkit or NCCL); see README\n";
    return kExitBadInput;
  }
  nlohmann::json all = nlohmann::json::array();
  int failures = 0;
  TracePaths paths(
      args.trace.empty()
          ? (std::filesystem::temp_directory_path() / fmt::format("ppspec-both-{}.jsonl", getpid())).string()
          : args.trace,
      true);
  for (const Loaded& loaded : scenarios) {
    const auto& s = std::get<serving::ServingScenario>(loaded.scenario);
    verify::OpLog sim_ops;
    runs::RunChoices choices;  // the scenario's seed and strategy
    choices.sink = &sim_ops;
    const serving::ServingRun sim = runs::execute(s, choices);
    const report::RunRecord sim_rec = sim_record(s, sim);
    // The GPU run is always traced: its operation sequence is read back from the trace.
    const std::string trace = paths.next(s.name + "-gpu", 0);
    report::RunRecord gpu_rec;
    int status = 0;
    const auto gpu = gpu_run(loaded, args, trace, gpu_rec, err, status);
    if (!gpu) return status;
    const report::RunRecord cmp = compare(s, sim, sim_ops, *gpu, ops_of_trace(trace));
    if (args.trace.empty()) std::filesystem::remove(trace);
    for (const report::RunRecord* r : std::initializer_list<const report::RunRecord*>{&sim_rec, &gpu_rec, &cmp}) {
      if (!r->ok) ++failures;
      emit(*r, args, all, out);
    }
  }
  if (args.json) out << report::dump_json(all) << '\n';
  return failures == 0 ? 0 : 1;
}

}  // namespace ppspec::tools
