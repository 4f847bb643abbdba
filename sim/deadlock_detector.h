// Explains a world where nothing can run: builds the wait-for graph over host threads and streams
// (through stream syncs, events, module loads, the context lock, first-contact connections and
// peer operations), finds a cycle, and reports it in words and as Graphviz DOT.
#pragma once

#include <functional>
#include <optional>

#include "core/verdict.h"
#include "sim/wait_graph.h"

namespace ppspec::sim {

class SimRuntime;

// nullopt when every host finished and every stream drained (a clean end). When the world is
// stuck, `on_stuck` (if any) reads the wait-for graph before the report is written.
std::optional<core::Finding> explain_deadlock(const SimRuntime& rt,
                                              const std::function<void(WaitGraph&)>& on_stuck = {});

}  // namespace ppspec::sim
