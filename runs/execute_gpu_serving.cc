// A serving scenario on this machine's GPUs: one host thread per rank with its GPU, the engine core
// on a thread of its own, the serving monitors online, the trace checker (pairing, hang dump)
// beside them, then the oracles, whose references are simulated. Built only with the real backend.
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "real_backend/real_runtime.h"
#include "runs/execute.h"
#include "runs/gpu_run_support.h"
#include "serving/runner.h"
#include "traces/jsonl_writer.h"
#include "verify/dumps/trace_check.h"
#include "verify/findings.h"

namespace ppspec::runs {
namespace {

// Pairing findings and a hang dump come from the trace checker, the serving invariants from the
// monitors: one verdict, the earliest failure first.
core::RunResult combine(const core::RunResult& monitors, const core::RunResult& trace, bool strict) {
  core::RunResult r = monitors;
  verify::settle_verdict(r, trace.findings, strict);
  r.stats.pairs = trace.stats.pairs;
  return r;
}

// PPSPEC_GPU_PROFILE=FILE: where each rank's engine steps spent their time (real/step_profiler.h),
// as JSON lines {"rank", "step", "kernels_us", "graphs_us", "communication_us", "copies_us",
// "host_us", "timed"}; scripts/dev/gpu_perf.py reads them beside the trace.
std::string profile_path() {
  const char* p = std::getenv("PPSPEC_GPU_PROFILE");
  return p != nullptr ? std::string(p) : std::string();
}

void write_profile(const std::string& path, real::StepProfiler& profiler) {
  std::ofstream out(path);
  for (const auto& [key, t] : profiler.totals()) {
    const nlohmann::json j = {{"rank", key.first},
                              {"step", key.second},
                              {"kernels_us", t.device_us[static_cast<size_t>(real::StepPart::kernels)]},
                              {"graphs_us", t.device_us[static_cast<size_t>(real::StepPart::graphs)]},
                              {"communication_us", t.device_us[static_cast<size_t>(real::StepPart::communication)]},
                              {"copies_us", t.device_us[static_cast<size_t>(real::StepPart::copies)]},
                              {"host_us", t.host_us},
                              {"timed", t.timed}};
    out << j.dump() << '\n';
  }
}

}  // namespace

serving::ServingRun execute_on_gpus(const serving::ServingScenario& s, const GpuChoices& g) {
  const core::RuntimeConfig& runtime = s.runtime;  // GPUs keep this part of [runtime] only
  if (runtime.module_loading == core::ModuleLoading::jit)
    throw NotRunnableHere(
        "module_loading = \"jit\" is simulated only for serving scenarios: the engine's kernels are compiled ahead "
        "of time (use lazy or eager)");
  const traces::TraceHeader header =
      gpu_trace_header(s.name, s.file, core::ScenarioKind::serving, g.scenario_hash, s.seed);
  std::unique_ptr<traces::JsonlWriter> writer;
  if (!g.trace.empty()) writer = std::make_unique<traces::JsonlWriter>(g.trace, header);
  verify::TraceChecker checker;
  LockedList<core::Finding> notes;   // hazards arrive on any thread (a probe runs on CUDA's)
  LockedList<core::Finding> online;  // failures the monitors found before a hang

  real::RealConfig cfg;
  cfg.module_loading = runtime.module_loading;
  cfg.hang_timeout = g.hang_timeout.value_or(gpu_hang_timeout(s));
  std::unique_ptr<real::RealRuntime> rt;
  cfg.on_hang = [&](const std::vector<core::Event>&) {
    // The event bus is held: nothing else publishes while the result is handed over.
    core::RunResult monitors;
    monitors.notes = notes.snapshot();
    verify::settle_verdict(monitors, online.snapshot(), runtime.strict);
    serving::ServingRun hung;
    hung.result = combine(monitors, checker.result(), runtime.strict);
    if (writer) writer->finish(hung.result);
    hung.result = timed(std::move(hung.result), rt->now(), rt->tracker().posted());
    if (g.ended) g.ended(Executed{std::move(hung)});
  };
  cfg.on_error = [&](const std::string& error) {
    if (g.failed) g.failed(error);
  };
  const std::string profile = profile_path();
  cfg.profile = !profile.empty();
  try {
    rt = std::make_unique<real::RealRuntime>(s.config.runtime_ranks(), cfg);
  } catch (const real::TooFewGpus& e) {
    throw NotRunnableHere(e.what());
  }
  std::vector<core::EventSink*> sinks{&checker};
  if (writer) sinks.push_back(writer.get());
  serving::RuntimeHooks hooks;
  // Hardware cannot stop at the first failure: the run goes on, and the failure is kept here so
  // that a later hang still reports what went wrong first.
  hooks.failed = [&](const core::Finding& f) { online.add(f); };
  hooks.note = [&](core::Finding f) { notes.add(std::move(f)); };
  hooks.notes = [&] { return notes.snapshot(); };
  serving::ServingRun run = serving::serve(*rt, s.config, sinks, hooks, runtime.strict);
  if (cfg.profile) write_profile(profile, rt->profiler());
  run.result = combine(run.result, checker.result(), runtime.strict);
  if (writer) writer->finish(run.result);
  run.result = timed(std::move(run.result), rt->now(), rt->tracker().posted());
  serving::check_oracles(s, run_config(s, RunChoices{}), run);  // the scenario's seed and strategy
  return run;
}

}  // namespace ppspec::runs
