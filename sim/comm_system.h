// The simulated NCCL: communicators, positional matching (R3), per-communicator serialisation
// (R2), cross-communicator concurrency (R7), completion (R4), mismatch (R5, R6), first-contact
// host blocking (R1) and graph-captured operations (R9). A facade: it owns the communicators and
// composes one part per responsibility, each owning its own state:
//   ConnectionSetup (sim/comm_connect.h)  comm init and first-contact connections (R1)
//   CaptureRules    (sim/comm_capture.h)  what a capturing stream does with communication (R9)
//   PostPairing     (sim/comm_pairing.h)  ids, issue order and positional pairing (R3, R7)
//   CommFindings    (sim/comm_findings.h) mismatches and lost or unmatched data (R3-R6)
//   KernelLauncher  (sim/comm_launch.h)   host calls become queued kernels (R2, R7)
//   KernelExecution (sim/comm_execute.h)  kernels start, meet partners, cost and complete (R2-R5)
//   CommExplainer   (sim/comm_explain.h)  words and blockers for deadlock reports
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/runtime.h"
#include "sim/comm_capture.h"
#include "sim/comm_connect.h"
#include "sim/comm_execute.h"
#include "sim/comm_explain.h"
#include "sim/comm_findings.h"
#include "sim/comm_handle.h"
#include "sim/comm_kernel.h"
#include "sim/comm_launch.h"
#include "sim/comm_pairing.h"
#include "sim/nccl_observer.h"
#include "sim/order_inversion.h"
#include "sim/sim_comm.h"

namespace ppspec::sim {

class SimRuntime;
class SimStream;
class SimDevice;

class CommSystem {
 public:
  explicit CommSystem(SimRuntime& rt)
      : rt_(rt),
        setup_(rt),
        capture_(rt, setup_),
        findings_(rt),
        pairing_(rt, findings_),
        explain_(rt),
        launcher_(rt, explain_),
        execution_(rt, setup_, findings_, launcher_) {}

  SimComm& declare(std::string_view name, std::span<const core::RankId> members);
  SimComm* find(std::string_view name);
  const std::vector<std::unique_ptr<SimComm>>& comms() const { return comms_; }

  // Host calls.
  core::Communicator& init(SimComm& comm, core::RankId me);
  void post(PartSpec spec);
  void group_end_flush();                                              // the calling actor's group ended
  void replay(const std::vector<PartSpec>& parts, SimStream& stream);  // a graph launch

  // The stream fiber reached a communication kernel.
  void execute(CommKernel& k, SimStream& s) { execution_.execute(k, s); }

  // Explanations (CommExplainer).
  Blocker p2p_blocker(const CommKernel& k, const CommOp& op) const { return explain_.p2p_blocker(k, op); }
  CollectiveHold collective_hold(const SimComm& comm, int64_t cseq) const {
    return explain_.collective_hold(comm, cseq);
  }
  Blocker size_mismatch(const CollectiveHold& hold, int crank) const { return explain_.size_mismatch(hold, crank); }
  const CommKernel* order_blocker(const CommKernel& k) const { return explain_.order_blocker(k); }
  std::vector<Blocker> release_blockers(const CommKernel& k) const { return explain_.release_blockers(k); }
  core::Culprit never_connected(const Connection& c, core::RankId absent) const {
    return explain_.never_connected(c, absent);
  }
  std::string describe(const CommOp& op) const { return explain_.describe(op); }
  std::string describe_kernel(const CommKernel& k) const { return explain_.describe_kernel(k); }

  // Findings (CommFindings).
  std::vector<core::Finding> take_open_mismatches() { return findings_.take_open_mismatches(); }
  bool has_open_mismatches() const { return findings_.has_open_mismatches(); }
  bool mismatch_seen() const { return findings_.mismatch_seen(); }
  std::optional<core::Finding> unmatched() const { return CommFindings::unmatched(comms_); }

  // Before the run: the cross-communicator order check learns who shares communicators (R7).
  void watch_order_inversions(int num_ranks) { pairing_.watch_order_inversions(comms_, num_ranks); }
  OrderInversions& inversions() { return pairing_.inversions(); }
  uint64_t ops_posted() const { return pairing_.ops_posted(); }
  uint64_t pairs() const { return pairing_.pairs(); }

  const ConnectionSetup& connections() const { return setup_; }
  SimDevice& device_of(const SimComm& comm, int crank) const { return member_device(rt_, comm, crank); }

 private:
  // Connects, then launches; empties `live`. A replay told the observer of its tasks already.
  void launch_live(std::vector<PartSpec>& live, bool observe_tasks = true);
  // What the NCCL observer is told (sim/nccl_observer.h), when one listens.
  ObservedCall observed(const PartSpec& p);
  void observe_call(const PartSpec& p, int64_t op_id);
  void register_observed(PartSpec& spec);
  void observe_group_end();

  SimRuntime& rt_;
  std::vector<std::unique_ptr<SimComm>> comms_;
  ConnectionSetup setup_;
  CaptureRules capture_;
  CommFindings findings_;
  PostPairing pairing_;
  CommExplainer explain_;
  KernelLauncher launcher_;
  KernelExecution execution_;
  int64_t next_capture_id_ = 0;
};

}  // namespace ppspec::sim
