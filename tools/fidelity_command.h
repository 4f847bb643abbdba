// `ppspec fidelity`: the differential fidelity run. Generates program scenarios nobody wrote by hand
// (scenario/generator/seeded.h), runs each on the simulator under several seeds and, with
// `--backend both`, on this machine's GPUs, compares the verdict classes, keeps every disagreement
// as a scenario file carrying both results, and writes an agreement table.
//
// Results are kept per program under OUT/results/, so an interrupted run resumes where it stopped
// (a GPU budget is spent once) and the table can be rebuilt from what is there.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <set>
#include <string>
#include <vector>

#include "core/verdict.h"

namespace ppspec::tools {

struct FidelityArgs {
  uint64_t programs = 300;
  uint64_t seed = 1;
  std::string out;
  std::string backend = "sim";  // sim | both | recorded (the GPU results kept in OUT/results)
  uint64_t sim_seeds = 4;       // the simulator's seeds per program: a verdict that varies is kept as a set
  double hang_timeout_s = 4;
  int gpus = 2;  // programs with more ranks run on the simulator only
  int max_ranks = 8;
  bool rerun_gpu = false;  // run the GPU again even where a result is kept
  int interface = 5;       // nccl-profiler: the plugin table driven (NCCL's profiler interface v5 or v6)
  std::vector<std::string> scenario_files;  // nccl-profiler: these committed scenarios instead of generated programs
  std::string shape =
      "async";  // flight-recorder: the family of programs and dumps (scenario/generator/fr_shapes.h), or "all"
};

// What the two backends are compared on: the simulator's deadlock is the hardware's hang, a
// hazard is a note on a run that passed, fifo-misalignment is "misalignment".
std::string verdict_class(core::Verdict v);
// Whether a GPU's class agrees with the simulator's classes over its seeds.
bool classes_agree(const std::set<std::string>& simulator, const std::string& gpu);

// Exit status: 0 when every compared program agreed, 1 when some disagreed, 2 for bad arguments,
// 3 when a GPU run failed to start at all.
int fidelity_main(const FidelityArgs& args, std::ostream& out, std::ostream& err);

}  // namespace ppspec::tools
