// The seeded front-end: program scenarios nobody wrote by hand, for the differential fidelity run
// (`ppspec fidelity`) and the Flight Recorder differential: each is run on the simulator and on
// GPUs (or on its dumps), and the verdicts are compared.
//
// A program is built from rounds (round.h: collectives with zero to 64 MiB payloads, grouped and
// ungrouped p2p, rings, exchanges with oneself, kernels that load modules, event hand-offs, syncs,
// mallocs, graphs, sleeps, a second host thread), and then, in some programs, disturbed the way
// real code goes wrong (disturb.h). So a generated program may pass, hang, misalign or be rejected
// by NCCL: the generator never decides which; the backends do.
//
// Generation is a pure function of the seed (core::Rng), so a program is named by its seed, and
// committed evidence names programs so: a seed's program must never change
// (`ppspec_generator_dump seeded` prints them, to compare before and after a change).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scenario/generator/disturb.h"
#include "program/program.h"

namespace ppspec::generator {

struct GeneratorOptions {
  int max_ranks = 8;          // 2 .. 8 (three or more need as many GPUs)
  int two_rank_percent = 85;  // programs with exactly two ranks
  int max_rounds = 12;
  // Exactly one disturbance of this kind (the Flight Recorder differential); none: no disturbance,
  // an inverted order, a drop, double, count, dtype or root, or both, at random (the GPU fidelity
  // run). Never swap: a seed's draws are what they always were.
  std::optional<Disturbance> disturb;
  // Labels are ppspec's own: NCCL ignores them and Flight Recorder dumps do not record them.
  bool labels = true;
  // Graph rounds and unmatched sends to oneself, which NCCL rejects (invalid usage) or a Flight
  // Recorder dump records otherwise than NCCL runs them (a captured collective once, at capture).
  bool graphs_and_usage_errors = true;
  // With graphs: unmatched sends to oneself too (off: graphs only, what a profiler sees NCCL run).
  bool usage_errors = true;
};

// What the Flight Recorder differential asks for: only what a dump records faithfully, on two
// ranks less often, without labels (a dump holds none).
GeneratorOptions flight_recorder_options(int max_ranks, Disturbance d);
// What the NCCL profiler differential asks for: the same, and graphs (the plugin records captures and
// replays as NCCL runs them), without the usage errors NCCL refuses before any kernel runs.
GeneratorOptions nccl_profiler_options(int max_ranks, Disturbance d);

struct GeneratedProgram {
  program::Program program;
  std::vector<std::string> features;  // what the program exercises, sorted: "graph", "zero-count", ...
  std::string disturbance;            // what was done to the well-matched program, in words; empty: nothing
  core::RankId disturbed_rank = -1;   // the rank it was done to; -1: none
};

// The program for `seed`; its name is `name`, its [expect] verdict `pass` (the caller replaces it
// with the simulator's verdict before writing the file).
GeneratedProgram generate_program(uint64_t seed, const std::string& name, const GeneratorOptions& opts);

}  // namespace ppspec::generator
