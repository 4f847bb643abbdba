// The serving engine on the real backend: one host thread per rank with its GPU, the engine core on
// a thread of its own, the serving monitors online, the trace checker (pairing, hang dump) beside
// them. The parent gets the verdict, the findings and every request's tokens and drafts.
#include <cstdlib>
#include <fmt/format.h>
#include <fstream>
#include <memory>
#include <mutex>

#include "core/error.h"
#include "engine/worker.h"
#include "scenario/serving_loader.h"
#include "real_backend/real_runtime.h"
#include "serving/runner.h"
#include "gpu_jobs/gpu_child_io.h"
#include "report/serving_records.h"
#include "traces/jsonl_writer.h"
#include "verify/findings.h"
#include "verify/dumps/trace_check.h"

namespace ppspec::gpu_jobs {
namespace {

// Pairing findings and a hang dump come from the trace checker, the serving invariants from the
// monitors: one verdict, the earliest failure first.
core::RunResult combine(const core::RunResult& monitors, const core::RunResult& trace, bool strict) {
  core::RunResult r = monitors;
  verify::settle_verdict(r, trace.findings, strict);
  r.stats.pairs = trace.stats.pairs;
  return r;
}

constexpr core::Time kServingHangTimeout = 20 * core::kSec;

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

int gpu_child_serving(const GpuChildArgs& args, const toml::table& root, uint64_t hash) {
  const serving::ServingScenario s = scenario::read_serving(root, args.file);
  const core::RuntimeConfig& runtime = s.runtime;  // GPUs keep this part of [runtime] only
  if (runtime.module_loading == core::ModuleLoading::jit) {
    write_result(args.result,
                 {{"error", fmt::format("{}: module_loading = \"jit\" is simulated only for serving scenarios: "
                                        "the engine's kernels are compiled ahead of time (use lazy or eager)",
                                        args.file)},
                  {"bad_input", true}});
    return 0;
  }
  const traces::TraceHeader header = gpu_trace_header(s.name, s.file, core::ScenarioKind::serving, hash, s.seed);
  std::unique_ptr<traces::JsonlWriter> writer;
  if (!args.trace.empty()) writer = std::make_unique<traces::JsonlWriter>(args.trace, header);
  verify::TraceChecker checker;
  LockedList<core::Finding> notes;   // hazards arrive on any thread (a probe runs on CUDA's)
  LockedList<core::Finding> online;  // failures the monitors found before a hang

  real::RealConfig cfg;
  cfg.module_loading = runtime.module_loading;
  cfg.hang_timeout =
      args.hang_timeout_s > 0 ? static_cast<core::Time>(args.hang_timeout_s * core::kSec) : kServingHangTimeout;
  std::unique_ptr<real::RealRuntime> rt;
  cfg.on_hang = [&](const std::vector<core::Event>&) {
    // The event bus is held: nothing else publishes while the result is written.
    core::RunResult monitors;
    monitors.notes = notes.snapshot();
    verify::settle_verdict(monitors, online.snapshot(), runtime.strict);
    const core::RunResult r = combine(monitors, checker.result(), runtime.strict);
    if (writer) writer->finish(r);
    nlohmann::json j = result_json(r, rt->now(), rt->tracker().posted());
    j["completed"] = false;
    write_result(args.result, j);
  };
  cfg.on_error = [&](const std::string& error) { write_result(args.result, {{"error", error}}); };
  const std::string profile = profile_path();
  cfg.profile = !profile.empty();
  run_guarded(args.result, [&] {
    rt = std::make_unique<real::RealRuntime>(s.config.topology.ranks(), cfg);
    std::vector<core::EventSink*> sinks{&checker};
    if (writer) sinks.push_back(writer.get());
    serving::RuntimeHooks hooks;
    // Hardware cannot stop at the first failure: the run goes on, and the failure is kept here so
    // that a later hang still reports what went wrong first.
    hooks.failed = [&](const core::Finding& f) { online.add(f); };
    hooks.note = [&](core::Finding f) { notes.add(std::move(f)); };
    hooks.notes = [&] { return notes.snapshot(); };
    const serving::ServingRun run = serving::serve(*rt, s.config, sinks, hooks, runtime.strict);
    if (cfg.profile) write_profile(profile, rt->profiler());
    const core::RunResult r = combine(run.result, checker.result(), runtime.strict);
    if (writer) writer->finish(r);
    nlohmann::json j = result_json(r, rt->now(), rt->tracker().posted());
    j["completed"] = run.completed;
    j["requests"] = report::requests_json(run.requests);
    j["stats"] = report::serving_stats_json(run.stats);
    write_result(args.result, j);
  });
  return 0;
}

}  // namespace ppspec::gpu_jobs
