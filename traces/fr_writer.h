// A ppspec trace (a simulated or GPU run, a GPU hang dump, a job's NCCL profiler traces) as the
// PyTorch Flight Recorder dumps the same job would have left, one per rank, as PyTorch 2.10 / 2.11
// writes them (torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, ProcessGroupGloo.cpp,
// FlightRecorderDetail.hpp), so that every simulated run is a test of `ppspec check` on dumps whose
// shapes come from PyTorch's source, not from ppspec's reader:
// * a process group per communicator (named "0", "1", ... in name order, its description the
//   communicator's name, its members from the trace); p2p named by group-local ranks;
// * per group, PyTorch's three counters, which every record carries: collective_seq_id (one per
//   collective call), p2p_seq_id (one per p2p call, whatever its peer) and op_id (one per operation);
// * a host thread's group of operations (ncclGroupStart..End) as the call PyTorch makes of it:
//   one send and one receive with every member is an all_to_all (one record, each rank's own
//   totals); a broadcast from every member in turn is an all_gather of uneven sizes (a
//   `_broadcast_oop` per member, closed by `ALLGATHER_coalesced`); all_reduces or all_gathers
//   coalesced by _coalescing_manager are one record of every tensor (its fast path) or, asked for,
//   their members closed by `coalesced`; any other group its members closed by `coalesced`.
//   Members are recorded without events (`scheduled` for ever); the closer carries the group's
//   state, no sizes, and is not a p2p record;
// * states: `completed` once done, `started` only with TORCH_NCCL_ENABLE_TIMING; the watchdog finds
//   completions when it polls and retires them; a dump updates what is not retired yet;
// * a ring of TORCH_FR_BUFFER_SIZE records per rank (2,000 by default) that wraps, record ids going on;
// * dumps taken while the job runs (each rank at its own moment), or the Gloo form: no p2p records,
//   every state `scheduled`, a group table of one nameless placeholder.
// What a dump cannot hold, it does not: labels, streams, broadcast roots, graph capture.
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
  int64_t cseq = -1;   // its place on its communicator's collectives or its p2p channel, as the trace numbers it
};

enum class FrBackend : uint8_t { nccl, gloo };

struct FrWriteOptions {
  FrBackend backend = FrBackend::nccl;
  size_t buffer = 0;   // TORCH_FR_BUFFER_SIZE: each rank's ring keeps its last `buffer` records; 0: all
  bool timing = true;  // TORCH_NCCL_ENABLE_TIMING: `started` states and times (PyTorch's default is off)
  // Coalesced all_reduces and all_gathers as one record of every tensor (_coalescing_manager's fast
  // path); off: their members closed by `coalesced` (_coalescing_manager with a device).
  bool fast_coalescing = true;
  // A dump taken while the job runs: rank r's at `at + r * skew` ns of the trace; nullopt: after it.
  std::optional<int64_t> at;
  int64_t skew = 0;
  int64_t poll = 0;  // the watchdog's polling period (ns of the trace): it finds a completion at its next poll
};

// One record PyTorch writes, planned: the record of a call, a coalesced group's member or closer.
struct FrRecordPlan {
  enum class Role : uint8_t { single, member, closer };
  Role role = Role::single;
  std::string name;  // "all_reduce", "_broadcast_oop", "ALLGATHER_coalesced", "send", ...
  std::string comm;
  std::vector<FrPosted> posts;  // the operations it records: one, or a fused call's (closer: the group's)
  int64_t record = 0, coll = 0, p2p = 0, op = 0;
  bool is_p2p = false;
  // Sizes: one tensor per post, or a fused all_to_all's totals.
  std::vector<std::vector<int64_t>> inputs, outputs;
};

// How PyTorch's recorder numbers and shapes one rank's calls, fed operation by operation: a call
// ends where the next begins (another group, communicator, or an ungrouped operation) or at close().
class FrNumbering {
 public:
  FrNumbering() = default;
  FrNumbering(FrWriteOptions o, std::map<std::string, std::vector<int>> members)
      : opts_(o), members_(std::move(members)) {}
  // The options and communicators of the dump it numbers for, its counts kept (a live window's
  // numbering, started before they were known).
  void configure(FrWriteOptions o, std::map<std::string, std::vector<int>> members) {
    opts_ = o;
    members_ = std::move(members);
  }
  // The records of the calls the operation ends (none while it joins the open call).
  std::vector<FrRecordPlan> next(const FrPosted& p);
  std::vector<FrRecordPlan> close();

 private:
  std::vector<FrRecordPlan> plan(std::vector<FrPosted> call);
  FrRecordPlan fused(const std::vector<FrPosted>& call, std::string name);
  std::vector<FrRecordPlan> coalesced(const std::vector<FrPosted>& call, const std::string& member,
                                      const std::string& closer);
  FrRecordPlan number(FrRecordPlan r, bool coll, bool p2p);

  FrWriteOptions opts_;
  std::map<std::string, std::vector<int>> members_;  // comm -> ranks in group order
  std::map<std::string, int64_t> coll_, p2p_, op_;
  int64_t records_ = 0;
  std::vector<FrPosted> open_;
};

// What dumps are made of: each communicator's members, each rank's operations in posting order.
struct FrRun {
  std::map<std::string, std::set<int>> members;  // comm -> ranks
  std::map<int, std::deque<FrPosted>> posts;     // rank -> in posting order
  // A window of a longer run (a live job's recent operations): how the operations before it were
  // numbered, so that the ids go on as PyTorch's do and the first record shows what was dropped.
  std::map<int, FrNumbering> before;
};

// Where an operation of the trace stands in the dumps: its place there (a collective call's
// collective_seq_id - 1, which counts PyTorch's calls, not NCCL's operations; a p2p operation's place
// on its channel; a p2p operation fused into an all_to_all: that call's) and whether its rank's dump
// holds it (not when its ring dropped it, when it was posted after a dump taken while running, or
// when Gloo records no p2p).
struct FrPlaced {
  int64_t position = -1;
  bool recorded = false;
  bool fused = false;  // a p2p operation of an all_to_all: a collective in the dumps
};
// (rank, communicator, p2p, peer (-1 for a collective), the trace's place: OpDesc cseq)
using FrPlaceKey = std::tuple<int, std::string, bool, int, int64_t>;

struct FrExport {
  std::map<int, nlohmann::json> dumps;          // by rank: the dump as PyTorch's pickle holds it (with frames)
  std::map<std::string, std::string> group_of;  // communicator name -> process group name
  std::map<FrPlaceKey, FrPlaced> placed;        // every operation of the run
};

// Reads a ppspec trace into a run; throws core::InputError for a trace that cannot be read.
FrRun read_fr_run(const std::string& trace);
FrExport flight_recorder_of(const std::string& trace, const FrWriteOptions& o = {});
FrExport flight_recorder_of(const FrRun& run, const FrWriteOptions& o = {});

// DIR/json/nccl_trace_rank_N.json (as `_dump_nccl_trace_json` writes: no frames, 0 for a time not
// recorded) and DIR/pickle/nccl_trace_rank_N (as `_dump_nccl_trace`), PyTorch's default names.
void write_flight_recorder(const FrExport& e, const std::string& dir);

}  // namespace ppspec::traces
