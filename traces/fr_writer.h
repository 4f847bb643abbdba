// A ppspec trace (a simulated or GPU run, or a GPU hang dump) as PyTorch Flight Recorder dumps, one
// per rank, in the record format PyTorch 2.x writes: a process group per communicator (named "0",
// "1", ... in name order, its description the communicator's name, its members from the trace's
// comm_init events), every communication operation an entry in the rank's posting order with its
// collective_seq_id / p2p_seq_id numbering, p2p named by group-local ranks ("nccl:send 0->1"), its
// tensor sizes and dtype, and `scheduled` / `started` / `completed` from the trace's events. What a
// dump cannot hold, it does not: labels, streams, broadcast roots, graph capture. Then every
// simulated run is a test of `ppspec check` on dumps (scripts/fr_differential.sh).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ppspec::traces {

struct FrExport {
  std::map<int, nlohmann::json> dumps;           // by rank: the dump as PyTorch's pickle holds it (with frames)
  std::map<std::string, std::string> group_of;  // communicator name -> process group name
};

// Throws core::InputError for a trace that cannot be read.
FrExport flight_recorder_of(const std::string& trace);

// DIR/json/nccl_trace_rank_N.json (as `_dump_nccl_trace_json` writes: no frames, 0 for a time not
// recorded) and DIR/pickle/nccl_trace_rank_N (as `_dump_nccl_trace`), PyTorch's default names.
void write_flight_recorder(const FrExport& e, const std::string& dir);

}  // namespace ppspec::traces
