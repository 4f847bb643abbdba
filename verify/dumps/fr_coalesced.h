// Coalesced groups in one rank's Flight Recorder dump, told as PyTorch writes them
// (ProcessGroupNCCL::startCoalescing .. endCoalescing): the members, recorded without events and so
// `scheduled` for ever, then a closing record (`coalesced`, `ALLGATHER_coalesced`,
// `REDUCE_SCATTER_coalesced`) with no sizes that carries the group's state. PyTorch counts a group
// once: its p2p members share the closer's p2p_seq_id, its collective members the closer's
// collective_seq_id. The closer is not a p2p record (is_p2p false) even when it closes p2p; ppspec's
// older exports mark it p2p: both are read.
#pragma once

#include <cstddef>
#include <vector>

#include "traces/flight_recorder.h"

namespace ppspec::verify {

struct FrCoalescing {
  std::vector<traces::FrState> state;        // per record: its own state, or its closer's
  std::vector<size_t> closer;                // per record: the closer of its group; SIZE_MAX: none
  std::vector<std::vector<size_t>> members;  // per closer of collectives: its members, in record order
  std::vector<bool> in_composite;            // per record: a collective member (part of its closer's call)
};

// Members are the records just before the closer on its group (other groups' records may come
// between: another thread's calls), all p2p of its p2p_seq_id or all collectives of its
// collective_seq_id, at most kFrCoalescedMembersMax of them.
FrCoalescing coalesced_groups(const traces::FrDump& d);

}  // namespace ppspec::verify
