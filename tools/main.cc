// The ppspec command-line program.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <iostream>

#include "tools/run_command.h"

int main(int argc, char** argv) {
  CLI::App app{"ppspec: finds the bugs of pipeline-parallel speculative-decoding serving before they reach a GPU cluster"};
  app.require_subcommand(1);

  ppspec::tools::RunArgs run;
  uint64_t seed = 0;
  uint64_t seeds = 0;
  std::string strategy;
  CLI::App* run_cmd = app.add_subcommand("run", "run scenario files and compare each verdict with its [expect]");
  run_cmd->add_option("files", run.files, "scenario files (TOML)")->required()->check(CLI::ExistingFile);
  auto* seed_opt = run_cmd->add_option("--seed", seed, "first seed (default: the scenario's [explore] seed, else 1)");
  auto* seeds_opt = run_cmd->add_option("--seeds", seeds, "run this many seeds; stop at the first unexpected verdict")
                        ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  auto* strategy_opt = run_cmd->add_option("--strategy", strategy, "schedule policy: random | pct:DEPTH");
  run_cmd->add_option("--trace", run.trace, "write the event stream as JSON Lines to this file");
  run_cmd->add_flag("--json", run.json, "print results as JSON");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  if (*seed_opt) run.seed = seed;
  if (*seeds_opt) run.seeds = seeds;
  if (*strategy_opt) run.strategy = strategy;
  try {
    if (*run_cmd) return ppspec::tools::run_command(run, std::cout, std::cerr);
  } catch (const std::exception& e) {
    std::cerr << "ppspec: internal error: " << e.what() << '\n';
    return 3;
  }
  return 2;
}
