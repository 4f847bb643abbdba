// What NCCL's profiler-plugin interface would be told of a simulated run, at the points NCCL tells
// it (src/plugin/profiler.cc, src/enqueue.cc, src/group.cc of NCCL 2.28): a communicator
// initialised; a call, after NCCL's checks (a collective of no elements takes no place and is not
// told); the outermost group of a host thread ending, an ungrouped call's implicit group included;
// each task the group end builds (a graph replay builds the captured calls' tasks again); a
// communication kernel starting and completing. The adapter that drives the real plugin from these
// (watch/nccl_profiler/sim_adapter.h) is the simulator-side proof of the plugin and of `ppspec watch`.
// Observing changes nothing of the run: no decision point, no event, no time.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/op.h"
#include "core/types.h"

namespace ppspec::sim {

struct ObservedCall {
  core::RankId rank = -1;  // the job rank that calls
  std::string_view comm;   // the communicator's name
  int comm_rank = -1, comm_size = 0;
  int peer_comm_rank = -1;       // a send's or recv's peer, a broadcast's root: as a rank of the communicator
  core::OpDesc desc;             // its peer is a job rank
  const void* stream = nullptr;  // the stream's identity
  const void* host = nullptr;    // the calling host thread's (NCCL keeps group state per thread)
  std::string_view origin;       // where the program made the call ("file.toml:12")
  bool grouped = false;          // inside the host thread's ncclGroupStart..End
  int64_t op_id = -1;            // the posted operation (its kernel's start and completion name it); -1: captured
  int64_t capture_id = -1;       // a call under capture; on a task, the captured call it replays
};

class NcclObserver {
 public:
  virtual ~NcclObserver() = default;
  virtual void comm_initialised(core::Time t, core::RankId rank, std::string_view comm, int comm_rank,
                                int comm_size) = 0;
  virtual void called(core::Time t, const ObservedCall& call) = 0;
  virtual void task_built(core::Time t, const ObservedCall& call) = 0;
  // The host thread's outermost ncclGroupEnd returned: the group's tasks are built and launched.
  virtual void group_ended(core::Time t, const void* host) = 0;
  virtual void kernel_started(core::Time t, int64_t op_id) = 0;
  virtual void kernel_completed(core::Time t, int64_t op_id) = 0;
};

}  // namespace ppspec::sim
