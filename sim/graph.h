// CUDA-graph capture and replay (R9, R10). A graph is the list of work one stream issued while
// capturing; a launch re-issues it with the captured sizes and buffers, so a graph captured for N
// rows reads N rows of its static buffers on every replay, whatever the real batch is.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/comm_kernel.h"
#include "sim/stream.h"

namespace ppspec::sim {

struct GraphItem {
  bool is_comm = false;
  WorkItem work;                // a compute kernel
  std::vector<PartSpec> parts;  // one communication kernel (several parts for a captured group)
};

struct GraphRec {
  int32_t id = -1;
  SimStream* capture_stream = nullptr;
  bool complete = false;
  std::vector<GraphItem> items;
};

}  // namespace ppspec::sim
