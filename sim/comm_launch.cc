#include "sim/comm_launch.h"

#include <algorithm>

#include "core/assert.h"
#include "sim/comm_explain.h"
#include "sim/device.h"
#include "sim/sim_comm.h"
#include "sim/sim_runtime.h"
#include "sim/stream.h"

namespace ppspec::sim {

CommKernel& KernelLauncher::new_kernel() {
  std::unique_ptr<CommKernel> k;
  if (!free_kernels_.empty()) {
    // Reuse a retired kernel: the simulator's hot path allocates nothing in the steady state.
    k = std::move(free_kernels_.back());
    free_kernels_.pop_back();
    k->parts.clear();
    k->streams.clear();
    k->arrived = k->departed = k->unsatisfied = 0;
    k->state = CommKernel::State::queued;
    k->issue_clock.clear();
    k->start_clock.clear();
    k->done_clock.clear();
    k->wait_id = -1;
  } else {
    k = std::make_unique<CommKernel>();
  }
  kernels_.push_back(std::move(k));
  return *kernels_.back();
}

void KernelLauncher::launch(std::vector<PartSpec>& parts) {
  // One kernel per (communicator, rank), in order of first appearance; usually there is one.
  std::vector<uint8_t> taken;
  bool one_kernel = true;
  for (const PartSpec& p : parts)
    one_kernel = one_kernel && p.comm == parts.front().comm && p.crank == parts.front().crank;
  if (!one_kernel) taken.assign(parts.size(), 0);
  for (size_t first = 0; first < parts.size(); ++first) {
    if (!one_kernel && taken[first]) continue;
    SimComm* comm = parts[first].comm;
    const int crank = parts[first].crank;
    CommKernel& k = new_kernel();
    k.comm = comm;
    k.crank = crank;
    k.rank = comm->members[static_cast<size_t>(crank)];
    for (size_t j = first; j < parts.size(); ++j) {
      if (!one_kernel && (taken[j] || parts[j].comm != comm || parts[j].crank != crank)) continue;
      if (!one_kernel) taken[j] = 1;
      CommOp& op = k.parts.emplace_back();
      op.spec = std::move(parts[j]);
    }
    SimDevice& dev = member_device(rt_, *comm, crank);
    CommRankState& rs = comm->ranks[static_cast<size_t>(crank)];
    k.comm_seq = rs.issued++;
    rs.live.push_back(&k);
    k.dev_seq = dev.comm_issued++;
    dev.comm_live.push_back(&k);
    k.unsatisfied = static_cast<int>(k.parts.size());
    if (const VectorClock* c = rt_.world().host_clock()) k.issue_clock = *c;
    const int64_t unit = rt_.world().config().unit_bytes;
    for (CommOp& op : k.parts) {
      op.kernel = &k;
      op.units = units_of(op.spec.buf.bytes(), unit);
      if (std::find(k.streams.begin(), k.streams.end(), op.spec.stream) == k.streams.end())
        k.streams.push_back(op.spec.stream);
      if (core::is_p2p(op.spec.desc.kind)) {
        P2PChannel& ch = p2p_channel(op);
        (op.spec.desc.kind == core::OpKind::send ? ch.live_sends : ch.live_recvs).push_back(&op);
      } else if (CollSlot* slot = comm->slot(op.spec.cseq)) {
        slot->ops[static_cast<size_t>(crank)] = &op;
        slot->launched[static_cast<size_t>(crank)] = 1;
      }
    }
    watch_if_waiting(k);
    for (SimStream* st : k.streams) {
      WorkItem item;
      item.type = WorkItem::Type::comm;
      item.name = "nccl";
      item.comm = &k;
      st->enqueue(std::move(item));
    }
    if (one_kernel) break;
  }
  parts.clear();
}

void KernelLauncher::watch_if_waiting(CommKernel& k) {
  // A waiting item (sim/blocking_hazards.h) needs a partner to complete: all but a kernel of
  // sends that fit the connection buffer, which complete on their own (R4).
  if (!rt_.world().clocks_on()) return;  // no rank watches its items
  SimDevice& dev = member_device(rt_, *k.comm, k.crank);
  if (!dev.blocking().active()) return;
  const int64_t eager = rt_.world().config().eager_bytes;
  const bool waits = std::any_of(k.parts.begin(), k.parts.end(), [eager](const CommOp& op) {
    return op.spec.desc.kind != core::OpKind::send || eager <= 0 || static_cast<int64_t>(op.spec.buf.bytes()) > eager;
  });
  // The words are built only where hazards are tracked: this runs on every launch.
  if (waits && dev.blocking().active())
    k.wait_id = dev.blocking().on_wait_issued(k.issue_clock, explain_.describe_kernel(k), k.primary()->full_name(), &k,
                                              nullptr);
}

void KernelLauncher::depart(CommKernel& k) {
  PPSPEC_ASSERT(k.departed < static_cast<int>(k.streams.size()), "more streams left a kernel than it has");
  ++k.departed;
  while (!kernels_.empty() && kernels_.front()->state == CommKernel::State::done &&
         kernels_.front()->departed == static_cast<int>(kernels_.front()->streams.size())) {
    free_kernels_.push_back(std::move(kernels_.front()));
    kernels_.pop_front();
  }
}

}  // namespace ppspec::sim
