// A ppspec trace (a simulated or GPU run, or a GPU hang dump) as PyTorch Flight Recorder dumps, one
// per rank, in the record format PyTorch 2.x writes: a process group per communicator (named "0",
// "1", ... in name order, its description the communicator's name, its members from the trace's
// comm_init events), every communication operation an entry in the rank's posting order with its
// collective_seq_id / p2p_seq_id numbering, p2p named by group-local ranks ("nccl:send 0->1"), its
// tensor sizes and dtype, and `scheduled` / `started` / `completed` from the trace's events. What a
// dump cannot hold, it does not: labels, streams, broadcast roots, graph capture. Then every
// simulated run is a test of `ppspec check` on dumps (scripts/fr_differential.sh).
#pragma once

#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/op.h"

namespace ppspec::traces {

// One posted operation, as a trace (or a live job's window of recent operations) shows it.
struct FrPosted {
  std::string comm;
  core::OpDesc desc;
  int64_t op_id = -1;
  int64_t posted = 0, started = -1, completed = -1;  // ns; -1: not (yet)
  std::string actor, origin;
  int64_t group = -1;  // the host thread's ncclGroupStart..End (op_posted's value); -1: none
};

// How PyTorch numbers a rank's records: one per operation, and a `coalesced` record closing each
// group of p2p operations (ncclGroupStart..End); per process group, collective_seq_id counts
// collectives and p2p_seq_id counts p2p operations, a coalesced group's members sharing one.
class FrNumbering {
 public:
  struct Ids {
    int64_t record = 0, coll = 0, p2p = 0;
    std::optional<int64_t> coalesced;  // a coalesced record closes the open group first: its record id
  };
  // The next operation's numbers.
  Ids next(const FrPosted& p);
  // The coalesced record of the group still open at the end, if any.
  std::optional<int64_t> close();

 private:
  std::map<std::string, int64_t> coll_, p2p_;
  int64_t records_ = 0;
  bool open_ = false;
  int64_t open_group_ = -1;
  std::string open_comm_;
};

// What dumps are made of: each communicator's members, each rank's operations in posting order.
struct FrRun {
  std::map<std::string, std::set<int>> members;  // comm -> ranks
  std::map<int, std::deque<FrPosted>> posts;      // rank -> in posting order
  // A window of a longer run (a live job's recent operations): how the operations before it were
  // numbered, so that the ids go on as PyTorch's do and the first record shows what was dropped.
  std::map<int, FrNumbering> before;
};

struct FrExport {
  std::map<int, nlohmann::json> dumps;           // by rank: the dump as PyTorch's pickle holds it (with frames)
  std::map<std::string, std::string> group_of;  // communicator name -> process group name
};

// Throws core::InputError for a trace that cannot be read.
FrExport flight_recorder_of(const std::string& trace);
FrExport flight_recorder_of(const FrRun& run);

// DIR/json/nccl_trace_rank_N.json (as `_dump_nccl_trace_json` writes: no frames, 0 for a time not
// recorded) and DIR/pickle/nccl_trace_rank_N (as `_dump_nccl_trace`), PyTorch's default names.
void write_flight_recorder(const FrExport& e, const std::string& dir);

}  // namespace ppspec::traces
