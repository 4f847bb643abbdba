// The ppspec command-line program.
#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <exception>
#include <iostream>

#include "core/printable.h"
#include "tools/check_command.h"
#include "tools/fidelity_command.h"
#include "tools/fuzz_command.h"
#include "tools/replay_command.h"
#include "tools/export_command.h"
#include "tools/show_command.h"
#include "tools/gpu_backend.h"
#include "tools/gpu_latency.h"
#include "tools/run_command.h"
#include "tools/run_support.h"

namespace {

int bad_option(const char* option, const std::string& text, const char* expected) {
  std::cerr << "ppspec: " << option << " '" << ppspec::core::printable(text, 40) << "': expected "
            << expected << '\n';
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"ppspec: finds the bugs of pipeline-parallel speculative-decoding serving before they reach a GPU cluster"};
  app.require_subcommand(1);

  ppspec::tools::RunArgs run;
  std::string seed_text;
  std::string seeds_text;
  std::string strategy;
  CLI::App* run_cmd = app.add_subcommand("run", "run scenario files and compare each verdict with its [expect]");
  run_cmd->add_option("files", run.files, "scenario files (TOML)")->required()->check(CLI::ExistingFile);
  auto* seed_opt =
      run_cmd->add_option("--seed", seed_text, "first seed, 0..2^63-1 (default: the scenario's [explore] seed, else 1)");
  auto* seeds_opt =
      run_cmd->add_option("--seeds", seeds_text,
                          "run this many seeds, 1..2^40; print how many met the expectation and the report of the "
                          "first that did not");
  auto* strategy_opt = run_cmd->add_option("--strategy", strategy, "schedule policy: random | pct:DEPTH");
  run_cmd->add_option("--trace", run.trace, "write the event stream as JSON Lines to this file");
  run_cmd->add_flag("--json", run.json, "print results as JSON");
  run_cmd->add_flag("--verbose", run.verbose, "with several seeds: print every seed's report");
  run_cmd
      ->add_option("--backend", run.backend,
                   "sim (the simulator, default), gpu (CUDA + NCCL on this machine's GPUs), or both (serving scenarios: "
                   "each on the simulator and on GPUs, compared request by request and operation by operation)")
      ->check(CLI::IsMember({"sim", "gpu", "both"}));
  double hang_timeout_s = 0;
  auto* hang_opt = run_cmd->add_option("--hang-timeout", hang_timeout_s,
                                       "gpu: seconds without progress before the watchdog reports a hang (default: the "
                                       "scenario's [runtime] hang_timeout_s, else 20)")
                       ->check(CLI::Range(0.1, 3600.0));

  ppspec::tools::CheckArgs check;
  CLI::App* check_cmd =
      app.add_subcommand("check", "run the checkers over recorded traces (JSON Lines from --trace or a GPU hang dump)");
  check_cmd->add_option("traces", check.traces,
                        "trace files, folders of PyTorch Flight Recorder dumps (one per rank: rank_N, rank_N.json, "
                        "nccl_trace_rank_N), or dump files named one by one (one job)")
      ->required()
      ->check(CLI::ExistingPath);
  check_cmd->add_option("--scenario", check.scenario,
                        "the scenario file of serving traces (default: the file each header names, whose content "
                        "must hash to what the header recorded)")
      ->check(CLI::ExistingFile);
  check_cmd->add_option("--prefix", check.prefix,
                        "Flight Recorder dumps: the file-name prefix before the rank (default: inferred, as PyTorch's fr_trace "
                        "does; e.g. nccl_trace_rank_)");
  check_cmd->add_flag("--json", check.json, "print results as JSON");

  ppspec::tools::ReplayArgs replay;
  CLI::App* replay_cmd = app.add_subcommand(
      "replay", "re-execute a recorded simulated run from its trace and prove the event stream byte-identical");
  replay_cmd->add_option("trace", replay.trace, "a trace written by `ppspec run --trace`")->required()->check(CLI::ExistingFile);
  replay_cmd->add_option("--scenario", replay.scenario, "the scenario file, if it is not where the trace's header says")
      ->check(CLI::ExistingFile);

  ppspec::tools::ExportArgs exp;
  bool perfetto = false;
  CLI::App* export_cmd = app.add_subcommand(
      "export", "write a trace, a GPU hang dump or Flight Recorder dumps as a timeline for Perfetto or chrome://tracing");
  auto* perfetto_flag = export_cmd->add_flag("--perfetto", perfetto, "Chrome trace-event JSON, for Perfetto or chrome://tracing");
  auto* fr_flag = export_cmd->add_flag("--flight-recorder", exp.flight_recorder,
                                       "PyTorch Flight Recorder dumps, one per rank (JSON and pickle): OUT is a folder");
  perfetto_flag->excludes(fr_flag);
  export_cmd->add_option("input", exp.input, "a trace (JSON Lines) or a folder of Flight Recorder dumps")
      ->required()
      ->check(CLI::ExistingPath);
  export_cmd->add_option("-o,--out", exp.out, "the JSON file to write (--flight-recorder: the folder)")->required();
  export_cmd->add_option("--scenario", exp.scenario, "the scenario of a serving trace, as for check")->check(CLI::ExistingFile);

  ppspec::tools::ShowArgs show;
  std::vector<int> show_ranks;
  CLI::App* show_cmd = app.add_subcommand("show", "a text timeline, one column per rank's thread and stream, around a finding");
  show_cmd->add_option("input", show.input, "a trace (JSON Lines) or a folder of Flight Recorder dumps")
      ->required()
      ->check(CLI::ExistingPath);
  show_cmd->add_option("--around", show.around, "the finding to centre on, 1-based (default 1)")->check(CLI::Range(1, 1000000));
  show_cmd->add_option("--ranks", show_ranks, "only these ranks (comma-separated)")->delimiter(',')->check(CLI::Range(0, 1 << 20));
  show_cmd->add_option("--rows", show.rows, "rows to show (default 24)")->check(CLI::Range(1, 100000));
  show_cmd->add_option("--width", show.width, "characters per column (default 30)")->check(CLI::Range(8, 200));
  show_cmd->add_option("--scenario", show.scenario, "the scenario of a serving trace, as for check")->check(CLI::ExistingFile);

  ppspec::tools::FuzzArgs fuzz;
  CLI::App* fuzz_cmd = app.add_subcommand(
      "fuzz", "generate serving scenarios, run each with every monitor and oracle, shrink a failure to a minimal file");
  fuzz_cmd->add_option("space", fuzz.space, "SPACE.toml: narrower ranges for the generated scenarios (default: all)")
      ->check(CLI::ExistingFile);
  fuzz_cmd->add_option("--time", fuzz.time, "stop after this long: seconds, or 30s, 5m, 2h (default 60 s without --cases)");
  fuzz_cmd->add_option("--cases", fuzz.cases, "stop after this many cases (of this shard)");
  fuzz_cmd->add_option("--seed", fuzz.seed, "the case stream's seed: case i is a function of (seed, i) (default 1)");
  fuzz_cmd->add_option("--shard", fuzz.shard, "I/N: run the cases i with i mod N = I (a disjoint share, for clusters)");
  fuzz_cmd->add_option("--jobs", fuzz.jobs, "worker processes (default 1)");
  fuzz_cmd->add_option("--out", fuzz.out, "folder for the shrunk scenario files (default fuzz-out)");
  fuzz_cmd->add_option("--faults", fuzz.faults, "switch these faults on in every case (comma-separated names)");
  fuzz_cmd->add_flag("--keep-going", fuzz.keep_going, "shrink and keep every failure, not only the first");
  fuzz_cmd->add_option("--backend", fuzz.backend, "sim (the only one: shrinking reruns a case hundreds of times)");
  fuzz_cmd->add_option("--merge", fuzz.merge, "merge the summaries of these --out folders (shards run apart) and exit")
      ->check(CLI::ExistingDirectory);

  ppspec::tools::GpuChildArgs child;
  CLI::App* child_cmd = app.add_subcommand("gpu-child", "(internal) run one scenario on the real backend");
  child_cmd->group("");
  child_cmd->add_option("file", child.file)->required();
  child_cmd->add_option("--result", child.result)->required();
  child_cmd->add_option("--trace", child.trace);
  child_cmd->add_option("--hang-timeout", child.hang_timeout_s);

  int latency_iterations = 1000;
  int64_t latency_bytes = 8;
  CLI::App* latency_cmd =
      app.add_subcommand("gpu-latency", "NCCL send/recv round-trip latency between GPU 0 and GPU 1 (real backend)");
  latency_cmd->add_option("--iterations", latency_iterations, "round trips to time")->check(CLI::Range(1, 10000000));
  latency_cmd->add_option("--bytes", latency_bytes, "message size")->check(CLI::Range(int64_t{1}, int64_t{1} << 30));

  ppspec::tools::FidelityArgs fidelity;
  CLI::App* fidelity_cmd = app.add_subcommand(
      "fidelity", "generate program scenarios, run each on the simulator and on GPUs, and compare the verdicts");
  fidelity_cmd->add_option("--programs", fidelity.programs, "how many programs to generate")->check(CLI::Range(1, 100000));
  fidelity_cmd->add_option("--seed", fidelity.seed, "the generator's seed: program i is a function of (seed, i)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{INT64_MAX}));
  fidelity_cmd->add_option("--out", fidelity.out, "folder for programs/, results/, disagreements/ and fidelity.md")->required();
  fidelity_cmd
      ->add_option("--backend", fidelity.backend,
                   "sim (the simulator only), both (the simulator and GPUs; GPU results kept in OUT/results are "
                   "reused), recorded (the simulator against the GPU results kept in OUT/results, no GPU needed), or "
                   "flight-recorder (each program disturbed once and run on the simulator, its trace exported as Flight "
                   "Recorder dumps and checked by `ppspec check`: the checker against the simulator)")
      ->check(CLI::IsMember({"sim", "both", "recorded", "flight-recorder"}));
  fidelity_cmd->add_option("--sim-seeds", fidelity.sim_seeds, "simulator seeds per program")->check(CLI::Range(1, 1000));
  fidelity_cmd->add_option("--hang-timeout", fidelity.hang_timeout_s, "gpu: seconds without progress that make a hang")
      ->check(CLI::Range(0.5, 600.0));
  fidelity_cmd->add_option("--gpus", fidelity.gpus, "GPUs on this machine: programs with more ranks run on the simulator only")
      ->check(CLI::Range(1, 8));
  fidelity_cmd->add_option("--max-ranks", fidelity.max_ranks, "largest generated program")->check(CLI::Range(2, 8));
  fidelity_cmd->add_flag("--rerun-gpu", fidelity.rerun_gpu, "run on GPUs again where an earlier run's result is kept");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  // Seeds are parsed here, strictly: "-1" is not 2^64-1, and "1e3" or "7x" are not numbers.
  if (*seed_opt) {
    run.seed = ppspec::tools::parse_count(seed_text, 0, INT64_MAX);
    if (!run.seed) return bad_option("--seed", seed_text, "a seed in [0, 9223372036854775807]");
  }
  if (*seeds_opt) {
    run.seeds = ppspec::tools::parse_count(seeds_text, 1, uint64_t{1} << 40);
    if (!run.seeds) return bad_option("--seeds", seeds_text, "a count in [1, 1099511627776]");
  }
  if (*strategy_opt) run.strategy = strategy;
  if (*hang_opt) run.hang_timeout_s = hang_timeout_s;
  try {
    if (*run_cmd) return ppspec::tools::run_command(run, std::cout, std::cerr);
    if (*check_cmd) return ppspec::tools::check_command(check, std::cout, std::cerr);
    if (*child_cmd) return ppspec::tools::gpu_child_main(child);
    if (*fidelity_cmd) return ppspec::tools::fidelity_main(fidelity, std::cout, std::cerr);
    if (*fuzz_cmd) return ppspec::tools::fuzz_command(fuzz, std::cout, std::cerr);
    if (*replay_cmd) return ppspec::tools::replay_command(replay, std::cout, std::cerr);
    if (*export_cmd) {
      if (!perfetto && !exp.flight_recorder) {
        std::cerr << "ppspec: export: say which format: --perfetto or --flight-recorder\n";
        return 2;
      }
      return ppspec::tools::export_command(exp, std::cout, std::cerr);
    }
    if (*show_cmd) {
      show.ranks.insert(show_ranks.begin(), show_ranks.end());
      return ppspec::tools::show_command(show, std::cout, std::cerr);
    }
    if (*latency_cmd) return ppspec::tools::gpu_latency_main(latency_iterations, latency_bytes);
  } catch (const std::exception& e) {
    std::cerr << "ppspec: internal error: " << e.what() << '\n';
    return 3;
  }
  return 2;
}
