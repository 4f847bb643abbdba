#include "tools/import_command.h"

#include <filesystem>
#include <fmt/format.h>
#include <optional>
#include <ostream>

#include "core/plural.h"
#include "core/error.h"
#include "verify/fidelity/fr_differential.h"
#include "scenario/importer/fr_import.h"
#include "scenario/program_loader.h"
#include "program/runner.h"
#include "program/toml_writer.h"
#include "tools/bad_input.h"
#include "tools/output_file.h"
#include "tools/job_trace_input.h"
#include "traces/flight_recorder.h"
#include "traces/fr_record.h"
#include "traces/fr_writer.h"
#include "watch/job_files.h"
#include "verify/dumps/flight_recorder_check.h"

namespace ppspec::tools {
namespace {

namespace fs = std::filesystem;

// The input as Flight Recorder dumps: dumps as they are; a ppspec trace (simulated, GPU, or a job's
// NCCL profiler plugin traces merged) exported as PyTorch would have dumped it, its streams kept.
struct Input {
  traces::FrDumpSet set;
  bool from_trace = false;
};

bool is_trace(const ImportArgs& args) {
  if (args.inputs.size() != 1) return false;
  const std::string& in = args.inputs[0];
  if (watch::is_plugin_trace_path(in)) return true;
  return !fs::is_directory(in) && !traces::is_fr_file(in);
}

Input read_input(const ImportArgs& args) {
  const std::optional<std::string> prefix = args.prefix.empty() ? std::nullopt : std::optional(args.prefix);
  if (is_trace(args)) {
    const TraceInput trace(args.inputs[0]);
    const traces::FrExport e = traces::flight_recorder_of(trace.path());
    Input in{{}, true};
    for (const auto& [rank, dump] : e.dumps)
      in.set.dumps.push_back(traces::fr_dump_from_json(dump, args.inputs[0], rank));
    if (in.set.dumps.empty())
      throw core::InputError(args.inputs[0], 0, "the trace holds no communication operation to import");
    in.set.where = args.inputs[0];
    return in;
  }
  if (args.inputs.size() == 1 && fs::is_directory(args.inputs[0])) {
    if (!traces::is_fr_dir(args.inputs[0]))
      throw core::InputError(args.inputs[0], 0,
                             "no Flight Recorder dumps here (files named PREFIX + RANK, e.g. rank_0 or "
                             "nccl_trace_rank_0.json) and no NCCL profiler plugin traces");
    return Input{traces::read_fr_dir(args.inputs[0], prefix), false};
  }
  for (const std::string& f : args.inputs)
    if (!traces::is_fr_file(f))
      throw core::InputError(f, 0, "not a Flight Recorder dump (a pickle, or the JSON of _dump_nccl_trace_json)");
  return Input{traces::read_fr_files(args.inputs, prefix), false};
}

// "fifo-misalignment (collective-mismatch): the first finding's line", or "pass".
std::string verdict_line(const core::RunResult& r) {
  if (r.findings.empty()) return std::string(core::to_string(r.verdict));
  const core::Finding& f = r.findings.front();
  return fmt::format("{} ({}): {}", core::to_string(r.verdict), f.kind, f.summary);
}

// The verdict in the vocabulary both sides share (verify/fidelity/fr_differential.h): pass, misaligned,
// unmatched (an operation whose partner never comes: a member that never posted), cycle, stall.
std::string verdict_class(const core::RunResult& r) {
  return fidelity::fr_class(r.findings.empty() ? nullptr : &r.findings.front(), r.verdict);
}

}  // namespace

int import_command(const ImportArgs& args, std::ostream& out, std::ostream& err) {
  return exit_2_on_bad_input(err, "ppspec import", [&] {
    const Input input = read_input(args);
    const traces::FrDumpSet& set = input.set;
    // A trace is checked as the dumps it exports, so that both sides speak of what the import holds.
    // The streams a trace recorded are its own; dumps take the model asked for.
    const verify::FrCalls calls = input.from_trace
                                      ? verify::FrCalls::async
                                      : verify::parse_fr_calls(args.calls).value_or(verify::FrCalls::synchronous);
    const core::RunResult checked = verify::check_flight_recorder(set.dumps, verify::FrCheckOptions{calls});
    const std::string name = args.name.empty() ? fs::path(args.out).stem().string() : args.name;
    // A trace's recorded streams wait across streams as a synchronous job's do, where the trace does
    // not show them overlap.
    const verify::FrCalls placed = input.from_trace ? verify::FrCalls::synchronous : calls;
    importer::Imported imported =
        importer::import_flight_recorder(set, name, importer::ImportOptions{input.from_trace, placed});
    program::Program& p = imported.program;
    const core::RunResult ran = program::run_on_sim(p, sim::RunConfig{});
    p.expect.verdict = ran.verdict;
    if (!ran.findings.empty() && ran.verdict != core::Verdict::pass) p.expect.kind = ran.findings.front().kind;
    const std::string text = program::to_toml(p);
    (void)scenario::parse_program(text, args.out);  // what is written reads back, or this is ppspec's bug
    write_output_file(args.out, text, args.force);
    const std::string check_class = verdict_class(checked), run_class = verdict_class(ran);
    const bool same = check_class == run_class;
    const bool host_cycle =
        !same && !ran.findings.empty() && fidelity::dumps_see_host_cycle(ran.findings.front(), run_class, check_class);
    out << fmt::format("imported {}: {}, {}, {} -> {}\n", set.where, core::count_of(p.num_ranks, "rank"),
                       core::count_of(static_cast<int64_t>(p.comms.size()), "communicator"),
                       core::count_of(static_cast<int64_t>(imported.operations), "operation"), args.out);
    const char* what = input.from_trace ? "trace's Flight Recorder export" : "dumps";
    out << fmt::format("  ppspec check of the {}: {}\n", what, verdict_line(checked));
    out << fmt::format("  ppspec run of the scenario (seed 1): {}\n", verdict_line(ran));
    if (same)
      out << fmt::format("  the same verdict ({}): the scenario reproduces the job's communication order\n", run_class);
    else if (host_cycle)
      out << fmt::format(
          "  the same hang: the scenario's deadlock runs through a host wait (a sync, a load) that no dump records, so "
          "the {} shows only its communication part ({})\n",
          what, check_class);
    else
      out << fmt::format(
          "  the verdicts differ ({} in the {}, {} in the scenario): what the {} holds does not follow from "
          "the order of the operations alone (a kernel or host that never progressed, or what the scenario "
          "assumes below)\n",
          check_class, what, run_class, what);
    for (const std::string& n : imported.notes) out << "  assumed: " << n << '\n';
    out << fmt::format("next: ppspec run {} --seeds 100   (other schedules of the same program)\n", args.out);
    return same || host_cycle ? 0 : 1;
  });
}

}  // namespace ppspec::tools
