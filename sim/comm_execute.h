// Execution: a stream fiber reached a communication kernel. It starts in communicator order (R2)
// and, under serial concurrency, device order (R7); its parts meet their partners (R4, R5); it
// costs time and touches its buffers (race checks); it completes. Holds no state of its own (but a
// reused scratch list): the kernels belong to the KernelLauncher, the positional state to the
// communicators.
#pragma once

#include <string_view>
#include <vector>

#include "core/event.h"
#include "sim/comm_kernel.h"

namespace ppspec::sim {

class CommFindings;
class ConnectionSetup;
class KernelLauncher;
class SimRuntime;
class SimStream;

class KernelExecution {
 public:
  KernelExecution(SimRuntime& rt, ConnectionSetup& setup, CommFindings& findings, KernelLauncher& launcher)
      : rt_(rt), setup_(setup), findings_(findings), launcher_(launcher) {}

  void execute(CommKernel& k, SimStream& s);

 private:
  void join_group(CommKernel& k, SimStream& s);  // a secondary stream of k arrived
  bool order_ok(const CommKernel& k) const;
  void start_clock(CommKernel& k, SimStream& primary);
  void check_races(const CommKernel& k, SimStream& primary);
  void start_op(CommOp& op, std::vector<CommOp*>& satisfied);
  void start_collective(CommOp& op, std::vector<CommOp*>& satisfied);
  void on_satisfied(CommKernel& k);  // every part of k has its partners (R8 hazards: released)
  Time kernel_cost(const CommKernel& k) const;
  void complete(CommKernel& k);
  void emit(core::EventKind kind, const CommOp& op, std::string_view actor, int64_t value = -1);

  SimRuntime& rt_;
  ConnectionSetup& setup_;
  CommFindings& findings_;
  KernelLauncher& launcher_;
  // The parts a kernel's start satisfied, kept between kernels for its capacity: a kernel takes it
  // (moved out, so a nested start could not share it) and gives it back.
  std::vector<CommOp*> satisfied_scratch_;
};

}  // namespace ppspec::sim
