// Launch: one host call (or one group, per communicator and rank) becomes one communication
// kernel, queued on its streams in issue order (R2, R7). Owns the kernels, live and retired: a
// retired kernel is reused, so the hot path allocates nothing in the steady state.
#pragma once

#include <deque>
#include <memory>
#include <vector>

#include "sim/comm_kernel.h"

namespace ppspec::sim {

class CommExplainer;
class SimRuntime;

class KernelLauncher {
 public:
  KernelLauncher(SimRuntime& rt, const CommExplainer& explain) : rt_(rt), explain_(explain) {}

  void launch(std::vector<PartSpec>& parts);  // empties `parts`
  void depart(CommKernel& k);                 // one of k's streams is done with it

 private:
  CommKernel& new_kernel();
  void watch_if_waiting(CommKernel& k);

  SimRuntime& rt_;
  const CommExplainer& explain_;
  std::deque<std::unique_ptr<CommKernel>> kernels_;  // in launch order; retired from the front
  std::vector<std::unique_ptr<CommKernel>> free_kernels_;
};

}  // namespace ppspec::sim
