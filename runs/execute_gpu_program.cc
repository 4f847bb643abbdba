// A program scenario on this machine's GPUs: its ranks as threads of this process over the real
// backend, every event recorded and checked by the trace checker (pairing, the hang dump) when the
// run ends, hangs or NCCL rejects a call. Built only with the real backend.
#include <algorithm>
#include <memory>
#include <mutex>

#include "program/runner.h"
#include "real_backend/real_runtime.h"
#include "runs/execute.h"
#include "runs/gpu_run_support.h"
#include "traces/jsonl_writer.h"
#include "traces/trace_reader.h"
#include "verify/dumps/trace_check.h"

namespace ppspec::runs {
namespace {

// Every event as its JSON line: the checker reads them back when the run ends or hangs.
class LineRecorder final : public core::EventSink {
 public:
  void on_event(const core::Event& e) override { lines_.add(core::to_json(e)); }
  std::vector<std::string> snapshot() { return lines_.snapshot(); }

 private:
  LockedList<std::string> lines_;
};

// The checked run, ended at `now` by the error `f` the real backend reported (NCCL rejected a call).
core::RunResult ended_by(core::RunResult r, core::Finding f, core::Time now) {
  // What never paired because the run ended on this error is no finding of its own: the error is.
  std::erase_if(r.findings, [](const core::Finding& g) { return g.kind == core::FindingKind::unmatched; });
  // The earliest failure decides (verify/findings.h): a misalignment the checker found before
  // NCCL rejected a call comes first.
  f.time = now;
  const auto at =
      std::find_if(r.findings.begin(), r.findings.end(), [&](const core::Finding& g) { return g.time > f.time; });
  r.findings.insert(at, std::move(f));
  r.verdict = r.findings.front().verdict;
  return r;
}

}  // namespace

bool gpus_built() { return true; }

core::RunResult execute_on_gpus(const program::Program& p, const GpuChoices& g) {
  LineRecorder recorder;
  std::unique_ptr<traces::JsonlWriter> writer;
  const traces::TraceHeader header = gpu_trace_header(p.name, p.file, core::ScenarioKind::program, g.scenario_hash);
  if (!g.trace.empty()) writer = std::make_unique<traces::JsonlWriter>(g.trace, header);
  std::mutex finish_mu;
  auto check = [&]() {
    std::vector<std::string> lines = recorder.snapshot();
    lines.insert(lines.begin(), traces::header_json(header));
    return verify::check_lines(lines, p.file);
  };
  real::RealConfig cfg;
  cfg.module_loading = p.config.module_loading;
  cfg.hang_timeout = g.hang_timeout.value_or(gpu_hang_timeout(p));
  std::unique_ptr<real::RealRuntime> rt;
  auto end = [&](const core::RunResult& r) {
    if (writer) writer->finish(r);
    if (g.ended) g.ended(Executed{timed(r, rt->now(), rt->tracker().posted())});
  };
  cfg.on_hang = [&](const std::vector<core::Event>&) {
    std::lock_guard<std::mutex> lock(finish_mu);
    end(check());
  };
  cfg.on_verdict = [&](const core::Finding& f) {
    std::lock_guard<std::mutex> lock(finish_mu);
    core::RunResult checked = check();  // before the time the error ends the run at
    end(ended_by(std::move(checked), f, rt->now()));
  };
  cfg.on_error = [&](const std::string& error) {
    std::lock_guard<std::mutex> lock(finish_mu);
    if (g.failed) g.failed(error);
  };
  try {
    rt = std::make_unique<real::RealRuntime>(p.num_ranks, cfg);
  } catch (const real::TooFewGpus& e) {
    throw NotRunnableHere(e.what());
  }
  if (writer) rt->events().subscribe(writer.get());
  rt->events().subscribe(&recorder);
  program::install(p, *rt);
  const core::RunResult ran = rt->run();
  std::lock_guard<std::mutex> lock(finish_mu);
  const core::RunResult r = check();
  if (writer) writer->finish(r);
  return timed(r, ran.stats.sim_time, ran.stats.ops_posted);
}

}  // namespace ppspec::runs
