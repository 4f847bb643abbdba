// The one builder from rounds (round.h) to a program::Program, in two steps: add_round appends
// each rank's share of a round to a Draft as one Unit; finish flattens the units into the ranks'
// threads. Between the two a front-end may disturb one rank's units (disturb.h).
#pragma once

#include <string>
#include <vector>

#include "scenario/generator/round.h"
#include "program/program.h"

namespace ppspec::generator {

// One rank's share of one round: the operations it issues together (a group is one unit, so a
// disturbance never splits it).
struct Unit {
  std::vector<program::ProgramOp> ops;
  std::string comm;  // the communicator of its communication operations; empty: none
};

struct RankDraft {
  std::vector<Unit> main;
  std::vector<Unit> second;
  bool has_second = false;  // the rank has a second host thread (even one with no units)
};

struct Draft {
  std::vector<RankDraft> ranks;
  explicit Draft(int num_ranks) : ranks(static_cast<size_t>(num_ranks)) {}
  std::vector<Unit>& units(core::RankId r, Thread t = Thread::main) {
    RankDraft& d = ranks[static_cast<size_t>(r)];
    return t == Thread::main ? d.main : d.second;
  }
};

void add_round(Draft& d, const Round& r);

// How the threads end and what the second one is called.
struct ThreadEnds {
  std::string second_name = "helper";
  bool second_drains = true;  // ends with a device_sync, as every main thread does
  std::string drain_origin;   // of those device_syncs
};

// The ranks' threads of `p` (replaced): each rank's main thread, then its second one if it has one.
// Every main thread drains its device at the end, so that nothing is left in flight unobserved.
void finish(const Draft& d, const ThreadEnds& ends, program::Program& p);

}  // namespace ppspec::generator
