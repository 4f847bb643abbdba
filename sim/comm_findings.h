// What goes wrong between posted operations, as findings: a send and its positional receive, or a
// collective's members, that disagree (R3, R5, R6); data sent on a direction wired wrongly (R4);
// a send nobody received. Owns the collective mismatches whose report waits for members.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "core/verdict.h"
#include "sim/comm_kernel.h"
#include "sim/sim_comm.h"

namespace ppspec::sim {

class SimRuntime;

class CommFindings {
 public:
  explicit CommFindings(SimRuntime& rt) : rt_(rt) {}

  // A send and its positional recv met (R3): reports (or notes) a disagreement.
  void judge_pair(const PostRecord& send, const PostRecord& recv, const SimComm& comm, int64_t cseq);
  // A member after the first posted collective `cseq`: marks the slot when it disagrees with
  // the first poster. The report waits until every member posted, to name the odd one out (R5).
  void judge_collective_post(const PostRecord& rec, SimComm& comm, int64_t cseq, CollSlot& slot);
  // Every member posted the slot (`last` did last): reports (or notes) a mismatch marked on it.
  void report_collective(const PostRecord& last, SimComm& comm, int64_t cseq, const CollSlot& slot);
  // A send went to a direction wired wrongly (PairSetup): noted where it happens (R4).
  void note_lost_send(const CommOp& op);

  // Collective mismatches that some member never posted (the report waited for every member),
  // stamped when a member first disagreed, in that order; each is published as a note event, and
  // none is returned twice.
  std::vector<core::Finding> take_open_mismatches();
  bool has_open_mismatches() const { return !open_mismatches_.empty(); }
  bool mismatch_seen() const { return mismatch_seen_; }
  // After a run that finished: the earliest posted p2p operation of `comms` that never found its
  // partner (an eager send nobody received), as a finding.
  static std::optional<core::Finding> unmatched(const std::vector<std::unique_ptr<SimComm>>& comms);

 private:
  core::Finding collective_finding(const SimComm& comm, int64_t cseq, const CollSlot& slot) const;
  void publish_mismatch(const core::Finding& f, core::RankId rank, std::string_view actor, const SimComm& comm,
                        int64_t cseq);

  SimRuntime& rt_;
  bool mismatch_seen_ = false;
  std::vector<std::pair<SimComm*, int64_t>> open_mismatches_;  // slots with a mismatch, not all posted
};

}  // namespace ppspec::sim
