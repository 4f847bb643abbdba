// Communication kernels and their operations. One host call (or one group, per communicator)
// becomes one kernel; each send, recv or collective contribution inside it is one CommOp.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/buffer.h"
#include "core/op.h"
#include "sim/vector_clock.h"
#include "sim/world.h"

namespace ppspec::sim {

class SimStream;
struct SimComm;
class P2PChannel;
struct CommKernel;

// What a host asked for: one operation before it is launched.
struct PartSpec {
  SimComm* comm = nullptr;
  int crank = -1;  // the issuing member, as a rank of the communicator
  int peer = -1;   // comm rank of the p2p peer or broadcast root; -1 otherwise
  core::OpDesc desc;
  core::ReduceOp reduce = core::ReduceOp::sum;
  core::Buffer buf;
  core::Buffer buf2;  // all_gather, all_to_all: the receive buffer
  SimStream* stream = nullptr;
  std::string_view origin;  // where the program issued it ("file.toml:12"), if known
  // Assigned when posted:
  int64_t id = -1;
  int64_t cseq = -1;              // collective slot, or index on the (src -> dst) channel
  uint64_t issue_idx = 0;         // the rank's communication-kernel issue order (a group shares one)
  bool receiver_ready = false;    // send: its direction is wired right when it starts (R4, PairSetup)
  int64_t capture_id = -1;        // a part captured into a graph (and each of its replays): its capture's number
  P2PChannel* channel = nullptr;  // send, recv: its direction's channel (a std::map node: it never moves)
};

struct CommOp {
  // Provided, not defaulted: a launch's `parts.emplace_back()` would otherwise zero the whole
  // operation, its clock's unused inline components included, before setting every field.
  CommOp() {}  // NOLINT(modernize-use-equals-default)
  PartSpec spec;
  CommKernel* kernel = nullptr;
  bool started = false;
  bool satisfied = false;
  bool lost = false;  // a send on a direction wired wrongly: completed, its data gone (R4)
  bool completed = false;
  int64_t units = 0;  // p2p: protocol units this op moves (R5)
  int64_t units_done = 0;
  VectorClock release;  // its partners' start clocks, as they satisfy it (R8 hazards)
};

struct CommKernel {
  SimComm* comm = nullptr;
  int crank = -1;
  core::RankId rank = -1;
  std::vector<CommOp> parts;        // never resized after launch: channels point into it
  std::vector<SimStream*> streams;  // streams[0] is the primary, which runs the kernel
  int arrived = 0;
  int departed = 0;
  int unsatisfied = 0;
  uint64_t comm_seq = 0;  // issue order among this member's kernels on the communicator (R2)
  uint64_t dev_seq = 0;   // issue order among the device's communication kernels (R7 serial)
  enum class State : uint8_t { queued, started, done } state = State::queued;
  WaitList waiters;
  // Happens-before (sim/blocking_hazards.h): the issuing thread's clock; the start, after the
  // work before it on its streams, its communicator (R2) and device (R7 serial); the completion,
  // after its partners' starts. `wait_id` names it among its device's waiting items, or -1.
  VectorClock issue_clock;
  VectorClock start_clock;
  VectorClock done_clock;
  int64_t wait_id = -1;
  std::string_view call_site;  // where the host launched it, for race reports

  SimStream* primary() const { return streams.front(); }
};

}  // namespace ppspec::sim
