// The RapidCheck side's perturbations (the property tests): one disturbance (disturb.h) of one
// operation of one rank of a well-matched program, which the simulator must always catch and
// blame on that rank.
#pragma once

#include <rapidcheck.h>

#include <string>

#include "scenario/generator/disturb.h"
#include "program/program.h"

namespace ppspec::generator {

struct PerturbSpec {
  Disturbance kind = Disturbance::extra;  // extra, drop, swap, count, dtype or root
  int rank = 0;                           // which of the ranks that communicate
  int op = 0;                             // which of its operations; / 7: which partner to swap with
};
rc::Gen<PerturbSpec> gen_perturb();

// Applies the perturbation to one communication operation (each a unit of its own) of the rank's
// main thread. Returns the rank perturbed (-1: no rank communicates) and what was done, in words.
struct Perturbed {
  program::Program program;
  core::RankId rank = -1;
  std::string what;
};
Perturbed perturb(const program::Program& p, const PerturbSpec& spec);

}  // namespace ppspec::generator
