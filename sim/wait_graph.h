// The wait-for graph of a world where nothing can run, as the R8 hazard rule reads it
// (sim/blocking_hazards.h): for stuck work, what it waits for, transitively. The deadlock
// detector builds the graph (sim/deadlock_detector.cc).
#pragma once

#include <vector>

#include "sim/vector_clock.h"

namespace ppspec::sim {

struct CommKernel;
struct Fiber;
struct SimFlag;
class SimDevice;
class SimStream;

// Where the waits from some stuck work lead.
struct StuckFrontier {
  // What the waits lead to that has happened: the issue of posted work that has not started,
  // the head items of stuck streams, the pasts of stuck host threads. Whatever the work waits
  // for happens after all of it.
  VectorClock happened;
  // The stuck host threads the waits lead to: the work waits for something they have yet to do.
  std::vector<const Fiber*> hosts;

  bool leads_to(const Fiber* f) const {
    for (const Fiber* h : hosts)
      if (h == f) return true;
    return false;
  }
};

class WaitGraph {
 public:
  virtual ~WaitGraph() = default;
  // What the unfinished work of stuck stream `s` waits for.
  virtual StuckFrontier behind(const SimStream& s) = 0;
  // What the partners of `k`'s unsatisfied parts wait for: its release (posted and started).
  virtual StuckFrontier release_of(const CommKernel& k) = 0;
  // What the set_flag of `flag` on `dev` waits for.
  virtual StuckFrontier release_of(const SimFlag& flag, const SimDevice& dev) = 0;
};

}  // namespace ppspec::sim
