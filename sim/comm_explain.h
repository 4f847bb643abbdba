// Words for communication operations, and what a stuck communication kernel waits for: the raw
// material of deadlock reports (sim/deadlock_detector.h). Holds no state: it reads the
// communicators' positional state and never changes it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/verdict.h"
#include "sim/comm_kernel.h"
#include "sim/sim_comm.h"

namespace ppspec::sim {

class SimRuntime;
class SimStream;
struct Connection;

// Something a stuck communication kernel waits for, for the deadlock report.
struct Blocker {
  enum class Kind : uint8_t { stream, rank_host, none } kind = Kind::none;
  SimStream* stream = nullptr;
  core::RankId rank = -1;
  std::string what;
  const VectorClock* clock = nullptr;  // what has happened of the partner (its issue or start), if anything
  core::Culprit culprit{};  // rank_host, when the partner was never posted: that rank and the operation awaited
};

// What holds up one collective for the members that started it: the same for every waiting
// member, so a deadlock report asks once per collective instead of once per member (n^2 work for
// a stuck n-member collective).
struct CollectiveHold {
  const CollSlot* slot = nullptr;  // null: retired, nothing to explain
  std::vector<Blocker> members;    // one per member that has not posted, launched or started it
  OthersUnits others;              // what the others provide each member (R5)
};

class CommExplainer {
 public:
  explicit CommExplainer(const SimRuntime& rt) : rt_(rt) {}

  std::string describe(const CommOp& op) const;
  std::string describe_kernel(const CommKernel& k) const;
  Blocker p2p_blocker(const CommKernel& k, const CommOp& op) const;  // `op` is an unsatisfied send or recv of k
  CollectiveHold collective_hold(const SimComm& comm, int64_t cseq) const;
  // Why member `crank` spins when no member holds the collective up: it expects more (R5).
  Blocker size_mismatch(const CollectiveHold& hold, int crank) const;
  const CommKernel* order_blocker(const CommKernel& k) const;
  // What each unsatisfied part of `k` needs: its positional partners, with what has happened of
  // them (started: the start clock; posted, not started: the issue clock), or the rank that has
  // yet to post one (R8 hazards at the end of a deadlocked run, sim/blocking_hazards.h).
  std::vector<Blocker> release_blockers(const CommKernel& k) const;
  // A connection `absent` never reached: the operation the others wait at that it never posted.
  core::Culprit never_connected(const Connection& c, core::RankId absent) const;

 private:
  const SimRuntime& rt_;
};

}  // namespace ppspec::sim
