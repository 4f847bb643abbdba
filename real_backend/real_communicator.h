// One rank's NCCL communicator. Every operation is recorded (communicator, sequence number,
// kind, dtype, count, peer/root, label, stream) before NCCL sees it, so a hang dump and the
// pairing checker know exactly what was posted even though NCCL itself ignores labels.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/runtime.h"
#include "real_backend/op_tracker.h"

namespace ppspec::real {

class RealRuntime;
class RealDevice;
struct CapturedOp;

class RealCommunicator final : public core::Communicator {
 public:
  RealCommunicator(RealRuntime& rt, RealDevice& dev, std::string name, std::vector<core::RankId> members, int crank,
                   void* nccl_comm);
  ~RealCommunicator() override;

  std::string_view name() const override { return name_; }
  int rank() const override { return crank_; }
  int size() const override { return static_cast<int>(members_.size()); }
  core::RankId global_rank(int comm_rank) const override { return members_.at(static_cast<size_t>(comm_rank)); }
  void send(const core::Buffer& buf, int peer, core::Stream s, core::Label label) override;
  void recv(const core::Buffer& buf, int peer, core::Stream s, core::Label label) override;
  void broadcast(const core::Buffer& buf, int root, core::Stream s, core::Label label) override;
  void all_reduce(const core::Buffer& buf, core::ReduceOp op, core::Stream s, core::Label label) override;
  void all_gather(const core::Buffer& send, const core::Buffer& recv, core::Stream s, core::Label label) override;
  void all_to_all(const core::Buffer& send, const core::Buffer& recv, core::Stream s, core::Label label) override;

  // A graph launch posts the operations captured into it anew (R9).
  void post_replayed(const CapturedOp& op, core::Stream s, std::vector<TrackedOp*>& out);

 private:
  // Records the operation (or captures it) and returns the record, null while capturing.
  TrackedOp* track(core::OpKind kind, const core::Buffer& buf, int peer, core::Stream s, core::Label label);
  // Profiling: the start event of an operation's interval (null in a group, which ends at group_end).
  void* time_start(core::Stream s);
  void finish(TrackedOp* op, core::Stream s, void* timed);
  int64_t next_cseq(core::OpKind kind, int peer);

  RealRuntime& rt_;
  RealDevice& dev_;
  std::string name_;
  std::vector<core::RankId> members_;
  int crank_;
  void* comm_;  // ncclComm_t
  int64_t collectives_ = 0;
  std::map<std::pair<int, int>, int64_t> p2p_;  // (peer, 0 send / 1 recv) -> operations so far
};

}  // namespace ppspec::real
