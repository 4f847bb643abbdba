// Program scenarios nobody wrote by hand, for the differential fidelity run (`ppspec fidelity`):
// each is run on the simulator and on GPUs, and the two verdicts are compared.
//
// A program is built from rounds that every participating rank issues in round order (collectives
// with zero to 64 MiB payloads, grouped and ungrouped p2p, rings, exchanges with oneself, kernels
// that load modules, event hand-offs, syncs, mallocs, graphs, sleeps, a second host thread), and
// then, in some programs, disturbed the way real code goes wrong: two rounds of different
// communicators issued in the other order on one rank, an operation dropped, posted twice, or posted
// with another count, dtype or root. So a generated program may pass, hang, misalign or be rejected
// by NCCL: the generator never decides which; the backends do.
//
// Generation is a pure function of the seed (core::Rng), so a program is named by its seed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "program/program.h"

namespace ppspec::fidelity {

// The disturbances, as GeneratorOptions::disturb chooses them.
enum Disturbance : int { kDrop, kDouble, kCount, kDtype, kRoot, kPeer, kInvert, kDisturbances, kRandomDisturbance = -1 };

struct GeneratorOptions {
  int max_ranks = 8;         // 2 .. 8 (three or more need as many GPUs)
  int two_rank_percent = 85;  // programs with exactly two ranks
  int max_rounds = 12;
  // Exactly one disturbance of this kind (the Flight Recorder differential); kRandomDisturbance:
  // none, an inverted order, a mutation or both, at random (the GPU fidelity run).
  int disturb = kRandomDisturbance;
  // Labels are ppspec's own: NCCL ignores them and Flight Recorder dumps do not record them.
  bool labels = true;
  // Graph rounds and unmatched sends to oneself, which NCCL rejects (invalid usage) or a Flight
  // Recorder dump records otherwise than NCCL runs them (a captured collective once, at capture).
  bool graphs_and_usage_errors = true;
};

struct GeneratedProgram {
  program::Program program;
  std::vector<std::string> features;  // what the program exercises, sorted: "graph", "zero-count", ...
  std::string disturbance;            // what was done to the well-matched program, in words; empty: nothing
};

// The program for `seed`; its name is `name`, its [expect] verdict `pass` (the caller replaces it
// with the simulator's verdict before writing the file).
GeneratedProgram generate_program(uint64_t seed, const std::string& name, const GeneratorOptions& opts);

}  // namespace ppspec::fidelity
