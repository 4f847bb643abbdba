// The ppspec command-line program: a table of commands (kCommands), each with its options and its
// handler, and a dispatcher that runs the one the command line names.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <filesystem>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string_view>
#include <string>
#include <vector>
#include <exception>
#include <cerrno>
#include <iostream>
#include <new>
#include <unistd.h>
#if defined(PPSPEC_ALLOCATOR_MIMALLOC)
#include <mimalloc.h>
#endif

#include <fmt/format.h>

#include "core/printable.h"
#include "ppspec_version.h"
#include "runs/gpu_jobs/gpu_backend.h"
#include "runs/gpu_jobs/gpu_latency.h"
#include "tools/bad_input.h"
#include "tools/cli_names.h"
#include "tools/check_command.h"
#include "tools/export_command.h"
#include "tools/fidelity_command.h"
#include "tools/fuzz_command.h"
#include "tools/import_command.h"
#include "tools/from_vllm_command.h"
#include "tools/replay_command.h"
#include "tools/run_command.h"
#include "tools/run_support.h"
#include "tools/show_command.h"
#include "tools/watch_command.h"

namespace ppspec::tools {
namespace {

// What the command line says, command by command: CLI11 writes the options here while parsing,
// the handler of the command given reads them after.
struct CommandLine {
  struct Run {
    RunArgs args;
    // Seeds are read as text and parsed after CLI11, strictly (see run_handler).
    std::string seed_text, seeds_text, strategy_text;
    double hang_timeout_s = 0;
    // Given on the command line (else the scenario decides).
    CLI::Option* seed_option = nullptr;
    CLI::Option* seeds_option = nullptr;
    CLI::Option* strategy_option = nullptr;
    CLI::Option* hang_timeout_option = nullptr;
  } run;
  CheckArgs check;
  ReplayArgs replay;
  struct Export {
    ExportArgs args;
    bool perfetto = false;
  } export_cmd;
  struct Show {
    ShowArgs args;
    std::vector<int> ranks;
  } show;
  FuzzArgs fuzz;
  struct Latency {
    int iterations = 1000;
    int64_t bytes = 8;
  } latency;
  FidelityArgs fidelity;
  WatchArgs watch;
  ImportArgs import;
  FromVllmArgs from_vllm;
};

struct Command {
  const char* name;
  const char* help;  // its line in `ppspec --help`
  void (*add_options)(CLI::App& command, CommandLine& line);
  int (*handle)(CommandLine& line);  // the exit status
};

int bad_option(const char* option, const std::string& text, const char* expected) {
  std::cerr << "ppspec: " << option << " '" << ppspec::core::printable(text, 40) << "': expected " << expected << '\n';
  return kExitBadInput;
}

void run_options(CLI::App& cmd, CommandLine& line) {
  CommandLine::Run& run = line.run;
  cmd.add_option("files", run.args.files, "scenario files (TOML), or folders: each folder's *.toml files")
      ->required()
      ->check(CLI::ExistingPath);
  run.seed_option =
      cmd.add_option("--seed", run.seed_text, "first seed, 0..2^63-1 (default: the scenario's [explore] seed, else 1)");
  run.seeds_option =
      cmd.add_option("--seeds", run.seeds_text,
                     "run this many seeds, 1..2^40; print how many met the expectation and the report of the "
                     "first that did not");
  run.strategy_option = cmd.add_option("--strategy", run.strategy_text, "schedule policy: random | pct:DEPTH");
  cmd.add_option("--trace", run.args.trace, "write the event stream as JSON Lines to this file");
  cmd.add_flag("--json", run.args.json, "print results as JSON");
  cmd.add_flag("--verbose", run.args.verbose, "with several seeds: print every seed's report");
  cmd.add_option("--backend", run.args.backend,
                 "sim (the simulator, default), gpu (CUDA + NCCL on this machine's GPUs), or both (serving scenarios: "
                 "each on the simulator and on GPUs, compared request by request and operation by operation)")
      ->check(CLI::IsMember({"sim", "gpu", "both"}));
  run.hang_timeout_option =
      cmd.add_option("--hang-timeout", run.hang_timeout_s,
                     "gpu: seconds without progress before the watchdog reports a hang (default: the "
                     "scenario's [runtime] hang_timeout_s, else 20)")
          ->check(CLI::Range(0.1, 3600.0));
}

int run_handler(CommandLine& line) {
  CommandLine::Run& run = line.run;
  // Seeds are parsed here, strictly: "-1" is not 2^64-1, and "1e3" or "7x" are not numbers.
  if (*run.seed_option) {
    run.args.seed = parse_count(run.seed_text, 0, INT64_MAX);
    if (!run.args.seed) return bad_option("--seed", run.seed_text, "a seed in [0, 9223372036854775807]");
  }
  if (*run.seeds_option) {
    run.args.seeds = parse_count(run.seeds_text, 1, uint64_t{1} << 40);
    if (!run.args.seeds) return bad_option("--seeds", run.seeds_text, "a count in [1, 1099511627776]");
  }
  if (*run.strategy_option) run.args.strategy = run.strategy_text;
  if (*run.hang_timeout_option) run.args.hang_timeout_s = run.hang_timeout_s;
  return run_command(run.args, std::cout, std::cerr);
}

void check_options(CLI::App& cmd, CommandLine& line) {
  CheckArgs& check = line.check;
  cmd.add_option("traces", check.traces,
                 "trace files, folders of PyTorch Flight Recorder dumps (one per rank: rank_N, rank_N.json, "
                 "nccl_trace_rank_N), or dump files named one by one (one job)")
      ->required()
      ->check(CLI::ExistingPath);
  cmd.add_option("--scenario", check.scenario,
                 "the scenario file of serving traces (default: the file each header names, whose content "
                 "must hash to what the header recorded)")
      ->check(CLI::ExistingFile);
  cmd.add_option(
      "--prefix", check.prefix,
      "Flight Recorder dumps: the file-name prefix before the rank (default: inferred, as PyTorch's fr_trace "
      "does; e.g. nccl_trace_rank_)");
  cmd.add_option("--calls", check.calls,
                 "Flight Recorder dumps: how the job made its calls: sync (PyTorch's default: each call waits for the "
                 "ones before it) "
                 "or async (async_op=True, never waited for: each group on its own stream)")
      ->check(CLI::IsMember({"sync", "async"}));
  cmd.add_flag("--json", check.json, "print results as JSON");
}

int check_handler(CommandLine& line) { return check_command(line.check, std::cout, std::cerr); }

void replay_options(CLI::App& cmd, CommandLine& line) {
  cmd.add_option("trace", line.replay.trace, "a trace written by `ppspec run --trace`")
      ->required()
      ->check(CLI::ExistingFile);
  cmd.add_option("--scenario", line.replay.scenario, "the scenario file, if it is not where the trace's header says")
      ->check(CLI::ExistingFile);
}

int replay_handler(CommandLine& line) { return replay_command(line.replay, std::cout, std::cerr); }

void export_options(CLI::App& cmd, CommandLine& line) {
  ExportArgs& exp = line.export_cmd.args;
  auto* perfetto_flag =
      cmd.add_flag("--perfetto", line.export_cmd.perfetto, "Chrome trace-event JSON, for Perfetto or chrome://tracing");
  auto* fr_flag = cmd.add_flag("--flight-recorder", exp.flight_recorder,
                               "PyTorch Flight Recorder dumps, one per rank (JSON and pickle): OUT is a folder");
  perfetto_flag->excludes(fr_flag);
  cmd.add_option("input", exp.input, "a trace (JSON Lines) or a folder of Flight Recorder dumps")
      ->required()
      ->check(CLI::ExistingPath);
  cmd.add_option("-o,--out", exp.out, "the JSON file to write (--flight-recorder: the folder)")->required();
  cmd.add_option("--scenario", exp.scenario, "the scenario of a serving trace, as for check")->check(CLI::ExistingFile);
  traces::FrWriteOptions& fr = exp.fr;
  std::vector<CLI::Option*> fr_options{
      cmd.add_option("--fr-buffer", fr.buffer,
                     "TORCH_FR_BUFFER_SIZE: each rank's ring keeps its last N records (0: all)")
          ->capture_default_str(),
      cmd.add_flag("--fr-timing", fr.timing, "TORCH_NCCL_ENABLE_TIMING=1: `started` states and times"),
      cmd.add_flag_callback(
          "--fr-coalesced-members", [&fr] { fr.fast_coalescing = false; },
          "coalesced all_reduces and all_gathers as members closed by `coalesced`, not one fused record"),
      cmd.add_flag_callback(
          "--fr-gloo", [&fr] { fr.backend = traces::FrBackend::gloo; }, "the Gloo form: no p2p, no states"),
      cmd.add_option_function<double>(
          "--fr-at", [&fr](double us) { fr.at = static_cast<int64_t>(us * 1000); },
          "a dump taken while the job runs: rank 0's at this time of the trace (us)"),
      cmd.add_option_function<double>(
          "--fr-skew", [&fr](double us) { fr.skew = static_cast<int64_t>(us * 1000); },
          "with --fr-at: each next rank's dump this much later (us)"),
      cmd.add_option_function<double>(
          "--fr-poll", [&fr](double us) { fr.poll = static_cast<int64_t>(us * 1000); },
          "the watchdog's polling period: a completion is found at its next poll (us)")};
  for (CLI::Option* o : fr_options) o->needs(fr_flag);
}

int export_handler(CommandLine& line) {
  if (!line.export_cmd.perfetto && !line.export_cmd.args.flight_recorder) {
    std::cerr << "ppspec: export: say which format: --perfetto or --flight-recorder\n";
    return kExitBadInput;
  }
  return export_command(line.export_cmd.args, std::cout, std::cerr);
}

void show_options(CLI::App& cmd, CommandLine& line) {
  ShowArgs& show = line.show.args;
  cmd.add_option("input", show.input, "a trace (JSON Lines) or a folder of Flight Recorder dumps")
      ->required()
      ->check(CLI::ExistingPath);
  cmd.add_option("--around", show.around, "the finding to centre on, 1-based (default 1)")
      ->check(CLI::Range(1, 1000000));
  cmd.add_option("--ranks", line.show.ranks, "only these ranks (comma-separated)")
      ->delimiter(',')
      ->check(CLI::Range(0, 1 << 20));
  cmd.add_option("--rows", show.rows, "rows to show (default 24)")->check(CLI::Range(1, 100000));
  cmd.add_option("--step", show.step, "centre on this engine step (a serving trace's) instead of a finding")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  cmd.add_option("--width", show.width, "characters per column (default: as wide as the widest cell shown, at most 60)")
      ->check(CLI::Range(8, 200));
  cmd.add_option("--scenario", show.scenario, "the scenario of a serving trace, as for check")
      ->check(CLI::ExistingFile);
}

int show_handler(CommandLine& line) {
  line.show.args.ranks.insert(line.show.ranks.begin(), line.show.ranks.end());
  return show_command(line.show.args, std::cout, std::cerr);
}

void fuzz_options(CLI::App& cmd, CommandLine& line) {
  FuzzArgs& fuzz = line.fuzz;
  cmd.add_option("space", fuzz.space, "SPACE.toml: narrower ranges for the generated scenarios (default: all)")
      ->check(CLI::ExistingFile);
  cmd.add_option("--around", fuzz.around,
                 "a serving scenario: fuzz its deployment as it stands, drawing the workload, KV cache and schedule")
      ->check(CLI::ExistingFile);
  cmd.add_option("--time", fuzz.time, "stop after this long: seconds, or 30s, 5m, 2h (default 60 s without --cases)");
  cmd.add_option("--cases", fuzz.cases, "stop after this many cases (of this shard)");
  cmd.add_option("--seed", fuzz.seed, "the case stream's seed: case i is a function of (seed, i) (default 1)");
  cmd.add_option("--shard", fuzz.shard, "I/N: run the cases i with i mod N = I (a disjoint share, for clusters)");
  cmd.add_option("--jobs", fuzz.jobs, "worker processes (default 1)");
  cmd.add_option("--out", fuzz.out,
                 "folder for the shrunk scenario files and summary.json (default fuzz-out; one an earlier campaign "
                 "used is refused without --force)");
  cmd.add_option("--faults", fuzz.faults, "switch these faults on in every case (comma-separated names)");
  cmd.add_flag("--keep-going", fuzz.keep_going, "shrink and keep every failure, not only the first");
  cmd.add_flag("--force", fuzz.force, "replace the files an earlier campaign left in --out (otherwise refused)");
  cmd.add_option("--backend", fuzz.backend, "sim (the only one: shrinking reruns a case hundreds of times)");
  cmd.add_option("--merge", fuzz.merge, "merge the summaries of these --out folders (shards run apart) and exit")
      ->check(CLI::ExistingDirectory);
}

int fuzz_handler(CommandLine& line) { return fuzz_command(line.fuzz, std::cout, std::cerr); }

void gpu_latency_options(CLI::App& cmd, CommandLine& line) {
  cmd.add_option("--iterations", line.latency.iterations, "round trips to time")->check(CLI::Range(1, 10000000));
  cmd.add_option("--bytes", line.latency.bytes, "message size")->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
}

int gpu_latency_handler(CommandLine& line) {
  return gpu_jobs::gpu_latency_main(line.latency.iterations, line.latency.bytes);
}

void fidelity_options(CLI::App& cmd, CommandLine& line) {
  FidelityArgs& fidelity = line.fidelity;
  cmd.add_option("--programs", fidelity.programs, "how many programs to generate")->check(CLI::Range(1, 100000));
  cmd.add_option("--seed", fidelity.seed, "the generator's seed: program i is a function of (seed, i)")
      ->check(CLI::Range(uint64_t{0}, uint64_t{INT64_MAX}));
  cmd.add_option("--out", fidelity.out, "folder for programs/, results/, disagreements/ and fidelity.md")->required();
  cmd.add_option(
         "--backend", fidelity.backend,
         "sim (the simulator only), both (the simulator and GPUs; GPU results kept in OUT/results are "
         "reused), recorded (the simulator against the GPU results kept in OUT/results, no GPU needed), or "
         "flight-recorder (each program disturbed once and run on the simulator, its trace exported as Flight "
         "Recorder dumps and checked by `ppspec check`: the checker against the simulator), or nccl-profiler (each "
         "program disturbed once and run on the simulator while it drives the NCCL profiler plugin as NCCL would; "
         "`ppspec watch`'s verdict against the simulator's), or import (the flight-recorder cases' dumps imported by "
         "`ppspec import` and the imported scenario run: its verdict against check's)")
      ->check(CLI::IsMember({"sim", "both", "recorded", "flight-recorder", "nccl-profiler", "import"}));
  cmd.add_option(
         "--scenario-files", fidelity.scenario_files,
         "nccl-profiler: run these scenario files (programs or serving) through the plugin and the watcher instead of "
         "generated programs; the table is OUT/scenarios.md")
      ->check(CLI::ExistingFile);
  cmd.add_option("--interface", fidelity.interface,
                 "nccl-profiler: the plugin's NCCL interface to drive, 5 (NCCL 2.26-2.28) or 6 (2.29 on)")
      ->check(CLI::IsMember({5, 6}));
  cmd.add_option("--sim-seeds", fidelity.sim_seeds, "simulator seeds per program")->check(CLI::Range(1, 1000));
  cmd.add_option("--hang-timeout", fidelity.hang_timeout_s, "gpu: seconds without progress that make a hang")
      ->check(CLI::Range(0.5, 600.0));
  cmd.add_option("--gpus", fidelity.gpus, "GPUs on this machine: programs with more ranks run on the simulator only")
      ->check(CLI::Range(1, 8));
  cmd.add_option("--max-ranks", fidelity.max_ranks, "largest generated program")->check(CLI::Range(2, 8));
  cmd.add_option("--shape", fidelity.shape,
                 "flight-recorder, import: the family of programs and of their dumps: async (the default), sync, "
                 "coalesced, batched, "
                 "all_to_all, wrapped, gloo, snapshot; flight-recorder: all runs each into OUT/FAMILY/");
  cmd.add_flag("--rerun-gpu", fidelity.rerun_gpu, "run on GPUs again where an earlier run's result is kept");
}

int fidelity_handler(CommandLine& line) { return fidelity_main(line.fidelity, std::cout, std::cerr); }

void watch_options(CLI::App& cmd, CommandLine& line) {
  WatchArgs& w = line.watch;
  auto* dir =
      cmd.add_option("--dir", w.dir, "the folder the ranks' plugins write into (the job's PPSPEC_WATCH=FOLDER)");
  auto* listen = cmd.add_option("--listen", w.listen,
                                "HOST:PORT to listen on (the job's PPSPEC_WATCH=HOST:PORT; PORT 0: any free one)");
  dir->excludes(listen);
  cmd.add_option("--stall", w.stall_s, "seconds without progress that make a stall (default 10)")
      ->check(CLI::Range(0.1, 86400.0));
  cmd.add_flag("--abort", w.abort, "at the first finding, make the job fail now (the plugin aborts its process)");
  cmd.add_option("--out", w.out, "folder for the job's merged trace, job.jsonl (default ppspec-watch)");
  cmd.add_option("--ranks", w.ranks, "the job's size: the watch ends once this many ranks ended")
      ->check(CLI::Range(1, 1 << 20));
  cmd.add_option("--timeout", w.timeout_s,
                 "stop watching after this many seconds (default: when the job ends, or Ctrl-C)")
      ->check(CLI::Range(0.0, 1e7));
  cmd.add_flag("--json", w.json, "one JSON object per report, then the summary");
}

int watch_handler(CommandLine& line) { return watch_command(line.watch, std::cout, std::cerr); }

void import_options(CLI::App& cmd, CommandLine& line) {
  ImportArgs& a = line.import;
  cmd.add_option(
         "input", a.inputs,
         "a folder of a job's Flight Recorder dumps, or the dump files, one per rank; or a ppspec trace (a simulated "
         "or GPU run's), or a job's NCCL profiler plugin traces (a folder or one file)")
      ->required()
      ->check(CLI::ExistingPath);
  cmd.add_option("-o,--out", a.out, "the program scenario to write (TOML)")->required();
  cmd.add_option("--name", a.name, "the scenario's name (default: the output file's name)");
  cmd.add_option("--prefix", a.prefix, "the dumps' file-name prefix (default: inferred, as PyTorch's fr_trace does)");
  cmd.add_option("--calls", a.calls, "how the job made its calls, as for check: sync (default) or async")
      ->check(CLI::IsMember({"sync", "async"}));
  cmd.add_flag("--force", a.force, "overwrite the output file");
}

int import_handler(CommandLine& line) { return import_command(line.import, std::cout, std::cerr); }

void from_vllm_options(CLI::App& cmd, CommandLine& line) {
  FromVllmArgs& a = line.from_vllm;
  cmd.add_option(
      "config", a.config,
      "a vLLM config (JSON, or the flat YAML of `vllm serve --config`); and/or, after --, `vllm serve`'s command "
      "line as written (e.g. -- vllm serve MODEL --pipeline-parallel-size 2 --speculative-config "
      "'{\"method\": \"eagle3\", \"num_speculative_tokens\": 3}')");
  cmd.add_option("-o,--out", a.out, "the serving scenario to write (TOML)")->required();
  cmd.add_option("--name", a.name, "the scenario's name (default: the output file's name)");
  cmd.add_option("--requests", a.requests, "the workload's requests (default: twice the request slots, 8 to 64)")
      ->check(CLI::Range(1, 1 << 20));
  cmd.add_option("--cuda-module-loading", a.cuda_module_loading,
                 "the deployment's CUDA_MODULE_LOADING, LAZY or EAGER (default LAZY, CUDA's and PyTorch's)")
      ->check(CLI::IsMember({"LAZY", "EAGER", "lazy", "eager"}));
  cmd.add_option("--space", a.space,
                 "also write a fuzz space around the scenario (SPACE.toml, for `ppspec fuzz SPACE.toml`): its "
                 "deployment as written, the workload, KV cache and schedule drawn");
  cmd.add_flag("--force", a.force, "overwrite the output files");
}

int from_vllm_handler(CommandLine& line) { return from_vllm_command(line.from_vllm, std::cout, std::cerr); }

// `ppspec from-vllm [CONFIG] -o FILE -- VLLM ARGS`: what follows the first lone `--` is vLLM's
// command line, handed over token by token as written (CLI11 would split a bracketed value, `[1,2]`,
// into several, at a cost quadratic in its nesting). Returns them; `argc` then ends before `--`.
std::vector<std::string> take_vllm_command_line(int& argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) != "from-vllm") return {};
  for (int i = 2; i < argc; ++i) {
    if (std::string_view(argv[i]) != "--") continue;
    std::vector<std::string> rest(argv + i + 1, argv + argc);
    argc = i;
    return rest;
  }
  return {};
}

// In the order `ppspec --help` lists them.
constexpr std::array kCommands{
    Command{"run", "run scenario files and compare each verdict with its [expect]", run_options, run_handler},
    Command{"check", "run the checkers over recorded traces (JSON Lines from --trace or a GPU hang dump)",
            check_options, check_handler},
    Command{"replay", "re-execute a recorded simulated run from its trace and prove the event stream byte-identical",
            replay_options, replay_handler},
    Command{"export",
            "write a trace, a GPU hang dump or Flight Recorder dumps as a timeline for Perfetto or chrome://tracing, "
            "or a trace as the Flight Recorder dumps PyTorch would write of it",
            export_options, export_handler},
    Command{"show", "a text timeline, one column per rank's thread and stream, around a finding", show_options,
            show_handler},
    Command{"fuzz",
            "generate serving scenarios, run each with every monitor and oracle, shrink a failure to a minimal file",
            fuzz_options, fuzz_handler},
    Command{"gpu-latency", "NCCL send/recv round-trip latency between GPU 0 and GPU 1 (real backend)",
            gpu_latency_options, gpu_latency_handler},
    Command{"fidelity", "generate program scenarios, run each on the simulator and on GPUs, and compare the verdicts",
            fidelity_options, fidelity_handler},
    Command{"watch",
            "check a running NCCL job live, from its ranks' NCCL profiler plugin (misalignments as posted, stalls)",
            watch_options, watch_handler},
    Command{
        "import",
        "turn a real job's Flight Recorder dumps (or a trace) into a program scenario that `run` replays and explores",
        import_options, import_handler},
    Command{"from-vllm", "turn vLLM engine arguments (flags or a config) into a serving scenario of the same shape",
            from_vllm_options, from_vllm_handler},
};

}  // namespace
}  // namespace ppspec::tools

// Memory ran out (an allocation failed, with nothing left to free): said, rather than the
// allocator's abort or a bad_alloc thrown inside a simulated fiber's stack. No allocation here.
[[noreturn]] void out_of_memory() {
  static constexpr char kMessage[] =
      "ppspec: out of memory: an allocation failed (the machine's memory, or `ulimit -v`, is spent); a serving "
      "scenario's host "
      "memory grows with [model] vocab x lanes x layers and with its ranks: run a smaller one, or on a larger "
      "machine\n";
  (void)!::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
  ::_exit(3);
}

// CLI11 splits a bracketed value ("[a,b]") of a list option into its items, recursively, copying
// the rest of the value at each level: an argument nested thousands deep costs memory quadratic in
// its depth. No value ppspec takes nests; from-vllm's vLLM command line (after --) never reaches CLI11.
std::optional<std::string> too_deep_argument(int argc, char** argv) {
  constexpr int kBracketsMax = 16;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    int depth = 0, deepest = 0;
    for (char c : a) {
      depth += c == '[' ? 1 : c == ']' ? -1 : 0;
      deepest = std::max(deepest, depth);
    }
    if (deepest > kBracketsMax)
      return fmt::format(
          "ppspec: command-line argument {} opens {} brackets in one another, more than {}: not a value ppspec takes",
          i, deepest, kBracketsMax);
  }
  return std::nullopt;
}

#if defined(PPSPEC_ALLOCATOR_MIMALLOC)
// mimalloc's operator new aborts on failure without asking the new-handler: it tells its error
// callback first.
void mimalloc_error(int err, void*) {
  if (err == ENOMEM) out_of_memory();
}
#endif

int main(int argc, char** argv) {
  std::set_new_handler(out_of_memory);
#if defined(PPSPEC_ALLOCATOR_MIMALLOC)
  mi_register_error(mimalloc_error, nullptr);
#endif
  CLI::App app{
      "ppspec: finds the bugs of pipeline-parallel speculative-decoding serving before they reach a GPU cluster"};
  app.require_subcommand(1);
  const auto& commands = ppspec::tools::kCommands;
  ppspec::tools::CommandLine line;
  std::array<CLI::App*, commands.size()> subcommands{};
  for (size_t i = 0; i < commands.size(); ++i) {
    subcommands[i] = app.add_subcommand(commands[i].name, commands[i].help);
    commands[i].add_options(*subcommands[i], line);
  }
  app.set_version_flag("--version", std::string("ppspec ") + PPSPEC_VERSION,
                       "print the commit ppspec was built from and exit");
  line.from_vllm.vllm_args = ppspec::tools::take_vllm_command_line(argc, argv);
  if (const auto deep = too_deep_argument(argc, argv)) {
    std::cerr << *deep << '\n';
    return ppspec::tools::kExitBadInput;
  }
  if (const std::string unknown = ppspec::tools::unknown_name(app, std::vector<std::string>(argv + 1, argv + argc));
      !unknown.empty()) {
    std::cerr << "ppspec: " << unknown << '\n';
    return ppspec::tools::kExitBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : ppspec::tools::kExitBadInput;
  }
  try {
    for (size_t i = 0; i < commands.size(); ++i)
      if (*subcommands[i]) return commands[i].handle(line);
  } catch (const std::exception& e) {
    std::cerr << "ppspec: internal error: " << e.what() << '\n';
    return 3;
  }
  return ppspec::tools::kExitBadInput;
}
