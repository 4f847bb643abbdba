// Posting and positional pairing: each live operation takes the next place of its communicator's
// order, a p2p one on its (src -> dst) channel and a collective one in the next slot, and meets
// the operation of the same place on the other side (R3). Owns the operation ids, the ranks' issue
// order and the cross-communicator order check (R7, sim/order_inversion.h).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sim/comm_kernel.h"
#include "sim/order_inversion.h"
#include "sim/sim_comm.h"

namespace ppspec::sim {

class CommFindings;
class SimRuntime;

class PostPairing {
 public:
  PostPairing(SimRuntime& rt, CommFindings& findings) : rt_(rt), findings_(findings) {}

  // Before the run: which rank pairs share two or more of `comms` (OrderInversions).
  void watch_order_inversions(const std::vector<std::unique_ptr<SimComm>>& comms, int num_ranks);
  // Stops the run when a group (or an ungrouped call, a group of one) sends to self without a
  // matching receive from self, or the reverse.
  void reject_unmatched_self(const std::vector<PartSpec>& parts);
  // The first send to oneself (or receive from oneself) in `parts` without its counterpart, if any.
  const PartSpec* unmatched_self(const std::vector<PartSpec>& parts) const;
  // A live part is posted: it gets its id, issue index and place (cseq), and meets its partner.
  void register_post(PartSpec& spec);

  OrderInversions& inversions() { return inversions_; }
  uint64_t ops_posted() const { return static_cast<uint64_t>(next_op_id_); }
  // The id register_post gives the next part: NCCL tells its profiler of a call before it pairs.
  int64_t next_op_id() const { return next_op_id_; }
  uint64_t pairs() const { return pairs_; }

 private:
  uint64_t issue_index(core::RankId rank);
  PostRecord record(const PartSpec& spec, core::RankId rank) const;
  void register_p2p(PartSpec& spec, const PostRecord& rec);
  void register_collective(PartSpec& spec, const PostRecord& rec);
  void on_pair(const PostRecord& send, const PostRecord& recv, SimComm& comm, int64_t cseq);
  void on_collective_post(const PostRecord& rec, int crank, SimComm& comm, int64_t cseq, CollSlot& slot);
  void on_slot_posted(const PostRecord& last, SimComm& comm, int64_t cseq, CollSlot& slot);
  void emit_record(core::EventKind kind, const PostRecord& rec, const SimComm& comm, int64_t cseq, int64_t value);

  SimRuntime& rt_;
  CommFindings& findings_;
  std::vector<uint64_t> rank_issue_;  // per global rank: communication kernels issued
  OrderInversions inversions_;
  int64_t next_op_id_ = 0;
  uint64_t pairs_ = 0;  // p2p pairs met and collective slots fully posted
};

}  // namespace ppspec::sim
