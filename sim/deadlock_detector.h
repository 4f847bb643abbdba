// Explains a world where nothing can run: builds the wait-for graph over host threads and streams
// (through stream syncs, events, module loads, the context lock, first-contact connections and
// peer operations), finds a cycle, and reports it in words and as Graphviz DOT.
#pragma once

#include <optional>
#include <vector>

#include "core/verdict.h"

namespace ppspec::sim {

class SimRuntime;

class SimStream;
struct Fiber;

// A host thread stuck in a blocking call (device sync, malloc, module load) whose drain waits,
// through `through` (a stream of its device), for work that waits for the call itself: the
// call lies on a wait-for cycle (an R8 hazard, sim/blocking_hazards.h).
struct BlockedOnCycle {
  const Fiber* host = nullptr;
  const SimStream* through = nullptr;
};

// nullopt when every host finished and every stream drained (a clean end). With `blocked`, also
// the blocking calls that lie on wait-for cycles, in fiber order.
std::optional<core::Finding> explain_deadlock(const SimRuntime& rt, std::vector<BlockedOnCycle>* blocked = nullptr);

}  // namespace ppspec::sim
