// The data a collective moves between its members' buffers.
#pragma once

#include <vector>

#include "sim/comm_kernel.h"

namespace ppspec::sim {

// Applies a collective's data movement once every member's kernel is resident (`ops` by comm
// rank). Sizes agree unless on_mismatch = "emulate", where the common prefix moves (a
// simplification of NCCL's behaviour).
void move_collective_data(const std::vector<CommOp*>& ops);

}  // namespace ppspec::sim
