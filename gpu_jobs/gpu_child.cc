// The child process of `ppspec run --backend gpu` (see gpu_backend.h). Built only with the real backend.
#include <algorithm>
#include <fmt/format.h>
#include <fstream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "scenario/program_loader.h"
#include "program/runner.h"
#include "real_backend/real_runtime.h"
#include "gpu_jobs/gpu_backend.h"
#include "gpu_jobs/gpu_child_io.h"
#include "report/report.h"
#include "traces/jsonl_writer.h"
#include "traces/trace_reader.h"
#include "verify/monitors/pairing_checker.h"
#include "verify/dumps/trace_check.h"

namespace ppspec::gpu_jobs {

void write_result(const std::string& path, const nlohmann::json& j) {
  std::ofstream out(path + ".tmp");
  out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  out.close();
  std::rename((path + ".tmp").c_str(), path.c_str());
}

nlohmann::json result_json(const core::RunResult& checked, core::Time wall, uint64_t ops) {
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& f : checked.findings) findings.push_back(report::to_json(f));
  nlohmann::json notes = nlohmann::json::array();
  for (const auto& f : checked.notes) notes.push_back(report::to_json(f));
  return {{"verdict", core::to_string(checked.verdict)},
          {"findings", findings},
          {"notes", notes},
          {"wall_ns", wall},
          {"ops_posted", ops},
          {"pairs", checked.stats.pairs},
          {"events", checked.stats.events}};
}

void run_guarded(const std::string& result_path, const std::function<void()>& body) {
  try {
    body();
  } catch (const real::TooFewGpus& e) {
    write_result(result_path, {{"error", e.what()}, {"bad_input", true}});
  } catch (const std::exception& e) {
    write_result(result_path, {{"error", e.what()}});
  }
}

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

bool gpu_backend_built() { return true; }

int gpu_child_main(const GpuChildArgs& args) {
  program::Program p;
  uint64_t hash = 0;
  try {
    const toml::table root = scenario::parse_toml_file(args.file, &hash);
    if (scenario::scenario_kind(root, args.file) == core::ScenarioKind::serving)
      return gpu_child_serving(args, root, hash);
    p = scenario::read_program(root, args.file);
  } catch (const core::InputError& e) {
    write_result(args.result, {{"error", e.what()}, {"bad_input", true}});
    return 0;
  }
  LineRecorder recorder;
  std::unique_ptr<traces::JsonlWriter> writer;
  const traces::TraceHeader header = gpu_trace_header(p.name, p.file, core::ScenarioKind::program, hash);
  if (!args.trace.empty()) writer = std::make_unique<traces::JsonlWriter>(args.trace, header);
  std::mutex finish_mu;
  auto check = [&]() {
    std::vector<std::string> lines = recorder.snapshot();
    lines.insert(lines.begin(), traces::header_json(header));
    return verify::check_lines(lines, args.file);
  };

  real::RealConfig cfg;
  cfg.module_loading = p.config.module_loading;
  cfg.hang_timeout =
      args.hang_timeout_s > 0 ? static_cast<core::Time>(args.hang_timeout_s * core::kSec) : p.hang_timeout;
  std::unique_ptr<real::RealRuntime> rt;
  cfg.on_hang = [&](const std::vector<core::Event>&) {
    std::lock_guard<std::mutex> lock(finish_mu);
    const core::RunResult r = check();
    if (writer) {
      core::RunResult ended = r;
      writer->finish(ended);
    }
    write_result(args.result, result_json(r, rt->now(), rt->tracker().posted()));
  };
  cfg.on_verdict = [&](const core::Finding& f) {
    std::lock_guard<std::mutex> lock(finish_mu);
    core::RunResult checked = check();  // before the time the error ends the run at
    const core::RunResult r = ended_by(std::move(checked), f, rt->now());
    if (writer) writer->finish(r);
    write_result(args.result, result_json(r, rt->now(), rt->tracker().posted()));
  };
  cfg.on_error = [&](const std::string& error) {
    std::lock_guard<std::mutex> lock(finish_mu);
    write_result(args.result, {{"error", error}});
  };
  run_guarded(args.result, [&] {
    rt = std::make_unique<real::RealRuntime>(p.num_ranks, cfg);
    if (writer) rt->events().subscribe(writer.get());
    rt->events().subscribe(&recorder);
    program::install(p, *rt);
    const core::RunResult ran = rt->run();
    std::lock_guard<std::mutex> lock(finish_mu);
    const core::RunResult r = check();
    if (writer) writer->finish(r);
    write_result(args.result, result_json(r, ran.stats.sim_time, ran.stats.ops_posted));
  });
  return 0;
}

}  // namespace ppspec::gpu_jobs
