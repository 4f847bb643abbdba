// The NCCL-shaped API of one member of a simulated communicator: each call checks its arguments
// and posts one operation to the CommSystem.
#pragma once

#include <string_view>

#include "core/runtime.h"
#include "sim/sim_comm.h"

namespace ppspec::sim {

class CommSystem;

class SimCommHandle final : public core::Communicator {
 public:
  SimCommHandle(CommSystem& sys, SimComm& comm, int crank) : sys_(sys), comm_(comm), crank_(crank) {}
  std::string_view name() const override { return comm_.name; }
  int rank() const override { return crank_; }
  int size() const override { return comm_.size(); }
  core::RankId global_rank(int comm_rank) const override { return comm_.members.at(static_cast<size_t>(comm_rank)); }
  void send(const core::Buffer& buf, int peer, core::Stream s, core::Label label) override;
  void recv(const core::Buffer& buf, int peer, core::Stream s, core::Label label) override;
  void broadcast(const core::Buffer& buf, int root, core::Stream s, core::Label label) override;
  void all_reduce(const core::Buffer& buf, core::ReduceOp op, core::Stream s, core::Label label) override;
  void all_gather(const core::Buffer& send, const core::Buffer& recv, core::Stream s, core::Label label) override;
  void all_to_all(const core::Buffer& send, const core::Buffer& recv, core::Stream s, core::Label label) override;

 private:
  void post(core::OpKind kind, const core::Buffer& buf, const core::Buffer& buf2, int peer, core::Stream s,
            core::Label label, core::ReduceOp op = core::ReduceOp::sum);
  CommSystem& sys_;
  SimComm& comm_;
  int crank_;
};

}  // namespace ppspec::sim
