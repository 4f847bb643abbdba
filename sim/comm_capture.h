// Communication on a capturing stream (R9): captured into the stream's graph instead of posted;
// each graph launch posts the parts anew. Holds no state: the graphs own what they captured.
#pragma once

#include <vector>

#include "sim/comm_kernel.h"

namespace ppspec::sim {

class ConnectionSetup;
class SimRuntime;
struct GraphRec;

class CaptureRules {
 public:
  CaptureRules(SimRuntime& rt, ConnectionSetup& setup) : rt_(rt), setup_(setup) {}

  // An ungrouped call on a stream capturing into `graph`: captured, not posted.
  void capture(PartSpec spec, GraphRec& graph);
  // A group's `pending` parts at its end: captured ones go to their graphs, one captured kernel
  // per (communicator, rank); live ones are moved to `live`.
  void route_group(std::vector<PartSpec>& pending, std::vector<PartSpec>& live);
  // Stops the run when a captured part of `parts` would set a connection up.
  void reject_connect_in_capture(const std::vector<PartSpec>& parts);

 private:
  SimRuntime& rt_;
  ConnectionSetup& setup_;
};

}  // namespace ppspec::sim
