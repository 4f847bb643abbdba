// Host blocking at ncclCommInitRank and at first contact (R1): a communicator exists once every
// member initialised it, and a connection once every party asked for it
// (NCCL_RUNTIME_CONNECT=1). Owns every communicator's connection state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "core/assert.h"
#include "sim/comm_kernel.h"
#include "sim/sim_comm.h"
#include "sim/world.h"

namespace ppspec::sim {

class SimRuntime;

// First contact (NCCL_RUNTIME_CONNECT=1): a connection exists once every party asked for it.
struct Connection {
  std::string what;
  const SimComm* comm = nullptr;  // whose connection
  bool p2p = false;               // a pair's (parties: the two), or the collectives' (parties: every member)
  std::vector<core::RankId> parties;
  std::vector<bool> arrived;
  size_t arrived_count = 0;  // of `arrived`, so that an arrival need not scan every party
  bool established = false;
  bool collecting = false;  // ConnectionSetup::connect's mark while it gathers a call's connections
  WaitList waiters;
  VectorClock clock;  // the parties' clocks as they arrived: what each learns once established

  void arrive(size_t party) {
    PPSPEC_ASSERT(party < parties.size());
    if (arrived[party]) return;
    arrived[party] = true;
    ++arrived_count;
    PPSPEC_ASSERT(arrived_count <= parties.size());
  }
  bool all_arrived() const { return arrived_count == parties.size(); }
};

struct CommInit {
  std::vector<bool> arrived;
  int count = 0;
  WaitList waiters;
  VectorClock clock;  // as Connection::clock
};

// The setup of one pair's p2p connections (comm ranks a < b; side 0 is a). NCCL sets each end of a
// direction up at its first use, in a setup round (a bootstrap exchange) that meets the peer's
// next round, whatever the peer sets up in it: the k-th round of a pairs with the k-th round of b,
// and a host that starts a round waits for the peer's (R1). A direction is wired right only when
// its sender set its send end up in the same round as its receiver set its receive end up; data
// sent on a direction wired otherwise is lost (R4). Measured on H200 with NCCL 2.28.9: a send-first
// ungrouped exchange at first contact completes both sends and hangs both receives (faults from
// 1 MiB on), a one-way first contact and an exchange after a grouped one pass.
struct PairSetup {
  static constexpr int64_t kRoundsMax = 4;  // each side sets two ends up once
  std::deque<Connection> rounds;            // round k; at most kRoundsMax
  int64_t started[2] = {0, 0};              // rounds each side started
  int64_t current[2] = {-1, -1};            // the round the side's call under way set up
  int64_t send_end[2] = {-1, -1};           // the round in which side s set its send end up; -1: not yet
  int64_t recv_end[2] = {-1, -1};
  bool collecting[2] = {false, false};  // ConnectionSetup::connect's marks while it gathers a call's ends

  bool wired(int from_side) const { return send_end[from_side] >= 0 && send_end[from_side] == recv_end[1 - from_side]; }
};

class ConnectionSetup {
 public:
  explicit ConnectionSetup(SimRuntime& rt) : rt_(rt) {}

  void add(const SimComm& comm);  // a newly declared communicator, in declaration order
  // ncclCommInitRank of member `crank`: blocks until every member arrived (R1).
  void init(SimComm& comm, int crank);
  // The host blocks until every connection the parts of one call need is established (R1).
  void connect(const std::vector<PartSpec>& parts);
  bool wired(const SimComm& comm, int src, int dst);  // data sent src -> dst reaches dst (R4)
  // Whether posting `p` now would make NCCL set a connection up.
  bool would_set_up(const PartSpec& p);

  const CommInit& init_of(const SimComm& comm) const { return state(comm).init; }
  size_t pairs_used(const SimComm& comm) const { return state(comm).pairs.size(); }  // made at first contact

 private:
  // One communicator's connections.
  struct CommConnections {
    Connection collective;
    PairMap<PairSetup> pairs;  // (min, max), made at first contact
    CommInit init;
  };
  CommConnections& state(const SimComm& comm);
  const CommConnections& state(const SimComm& comm) const;
  PairSetup& pair_setup(const SimComm& comm, int a, int b);
  Connection& setup_round(const SimComm& comm, int a, int b, int64_t k);  // made when first needed
  Connection* join_setup_round(const PartSpec& p);

  SimRuntime& rt_;
  std::deque<CommConnections> comms_;  // by SimComm::index; a deque: waiters point into it
  std::vector<PairSetup*> touched_;    // connect()'s pairs of one call
};

}  // namespace ppspec::sim
