#include "sim/comm_execute.h"

#include <algorithm>

#include "core/assert.h"
#include "sim/collective_data.h"
#include "sim/comm_connect.h"
#include "sim/comm_findings.h"
#include "sim/comm_launch.h"
#include "sim/device.h"
#include "sim/sim_comm.h"
#include "sim/sim_runtime.h"
#include "sim/stream.h"

namespace ppspec::sim {

bool KernelExecution::order_ok(const CommKernel& k) const {
  const CommRankState& rs = k.comm->ranks[static_cast<size_t>(k.crank)];
  if (rs.completed != k.comm_seq) return false;  // R2: one at a time, in host issue order
  if (rt_.world().config().concurrency == core::Concurrency::serial) {
    // R7 serial: the device runs one communication kernel at a time, in host issue order.
    const SimDevice& dev = member_device(rt_, *k.comm, k.crank);
    if (dev.comm_completed != k.dev_seq) return false;
  }
  return true;
}

void KernelExecution::join_group(CommKernel& k, SimStream& s) {
  World& w = rt_.world();
  k.start_clock.join(s.clock());  // the kernel starts after this stream's earlier work too
  k.waiters.wake_all(w);          // the primary may wait for this stream to join
  while (k.state != CommKernel::State::done)
    k.waiters.wait(w, WaitInfo{.kind = WaitKind::kernel_done, .what = "group kernel", .stream = &s, .kernel = &k});
  s.observe(k.done_clock);
  launcher_.depart(k);
}

void KernelExecution::execute(CommKernel& k, SimStream& s) {
  World& w = rt_.world();
  ++k.arrived;
  PPSPEC_ASSERT(k.arrived <= static_cast<int>(k.streams.size()), "more streams reached a kernel than it has");
  if (&s != k.primary()) {
    join_group(k, s);
    return;
  }
  while (k.arrived < static_cast<int>(k.streams.size()))
    k.waiters.wait(w, WaitInfo{.kind = WaitKind::group_join, .what = "group join", .stream = &s, .kernel = &k});
  SimDevice& dev = member_device(rt_, *k.comm, k.crank);
  CommRankState& rs = k.comm->ranks[static_cast<size_t>(k.crank)];
  while (!order_ok(k)) {
    WaitList& list = rs.completed != k.comm_seq ? rs.order_waiters : dev.comm_order_waiters;
    list.wait(w, WaitInfo{.kind = WaitKind::comm_order, .what = "communicator order", .stream = &s, .kernel = &k});
  }
  k.state = CommKernel::State::started;
  start_clock(k, s);
  check_races(k, s);
  std::vector<CommOp*> satisfied = std::move(satisfied_scratch_);
  satisfied.clear();
  for (CommOp& op : k.parts) {
    op.started = true;
    if (w.bus().active()) emit(core::EventKind::op_started, op, s.full_name());
    if (NcclObserver* o = rt_.nccl_observer()) o->kernel_started(w.now(), op.spec.id);
    start_op(op, satisfied);
  }
  for (CommOp* op : satisfied) {
    if (--op->kernel->unsatisfied == 0) on_satisfied(*op->kernel);
  }
  satisfied_scratch_ = std::move(satisfied);
  while (k.unsatisfied > 0)
    k.waiters.wait(w, WaitInfo{.kind = WaitKind::peer, .what = "partner", .stream = &s, .kernel = &k});
  w.sleep(w.jittered(kernel_cost(k)));
  complete(k);
  s.observe(k.done_clock);
  launcher_.depart(k);
}

void KernelExecution::check_races(const CommKernel& k, SimStream& primary) {
  // Each operation touches its buffers at the kernel's start clock: what happens after its
  // completion happens after its start too (sim/race_detector.h).
  RaceDetector* races = rt_.races();
  if (races == nullptr) return;
  const uint32_t actor = primary.fiber()->id;
  races->begin(actor, k.start_clock.get(actor), k.start_clock,
               AccessItem{&primary,
                          "communication kernel",
                          "",
                          k.call_site,
                          k.parts.front().spec.desc,
                          static_cast<uint32_t>(k.parts.size()),
                          {}});
  for (const CommOp& op : k.parts) {
    switch (op.spec.desc.kind) {
      case core::OpKind::send: races->access_buffer(op.spec.buf, false); break;
      case core::OpKind::broadcast: races->access_buffer(op.spec.buf, op.spec.peer != k.crank); break;
      case core::OpKind::all_gather:
      case core::OpKind::all_to_all:
        races->access_buffer(op.spec.buf, false);
        races->access_buffer(op.spec.buf2, true);
        break;
      default: races->access_buffer(op.spec.buf, true); break;  // a receive; a reduction in place
    }
  }
  races->end();
}

void KernelExecution::start_clock(CommKernel& k, SimStream& primary) {
  // The secondaries joined their streams' clocks as they arrived. The kernel could start only
  // after its issue, its primary stream's earlier work, the member's previous kernel on this
  // communicator (R2) and, under serial concurrency, the device's previous one (R7).
  if (!rt_.world().clocks_on()) return;
  k.start_clock.join(primary.clock());
  k.start_clock.join(k.issue_clock);
  k.start_clock.join(k.comm->ranks[static_cast<size_t>(k.crank)].done_clock);
  if (rt_.world().config().concurrency == core::Concurrency::serial)
    k.start_clock.join(member_device(rt_, *k.comm, k.crank).comm_done_clock);
}

void KernelExecution::on_satisfied(CommKernel& k) {
  k.waiters.wake_all(rt_.world());
  if (k.wait_id < 0) return;
  VectorClock release;
  for (const CommOp& op : k.parts) release.join(op.release);
  member_device(rt_, *k.comm, k.crank).blocking().on_released(k.wait_id, release);
}

void KernelExecution::start_op(CommOp& op, std::vector<CommOp*>& satisfied) {
  const SimConfig& cfg = rt_.world().config();
  SimComm& comm = *op.spec.comm;
  switch (op.spec.desc.kind) {
    case core::OpKind::send:
      op.spec.receiver_ready = setup_.wired(comm, op.spec.crank, op.spec.peer);
      p2p_channel(op).start_send(op, cfg.unit_bytes, cfg.eager_bytes, satisfied);
      if (op.lost) findings_.note_lost_send(op);
      return;
    case core::OpKind::recv: p2p_channel(op).start_recv(op, cfg.unit_bytes, cfg.eager_bytes, satisfied); return;
    default: start_collective(op, satisfied);
  }
}

void KernelExecution::start_collective(CommOp& op, std::vector<CommOp*>& satisfied) {
  SimComm& comm = *op.spec.comm;
  CollSlot* slot = comm.slot(op.spec.cseq);
  PPSPEC_ASSERT(slot != nullptr);
  ++slot->started;
  PPSPEC_ASSERT(slot->started <= comm.size(), "collective #{} on '{}' started more often than it has members",
                op.spec.cseq, comm.name);
  slot->starts.join(op.kernel->start_clock);
  if (slot->started < comm.size()) return;  // R4: a collective waits for every member
  move_collective_data(slot->ops);
  // R5: a member expecting more units than the others provide spins forever.
  const OthersUnits others = others_units(slot->units);
  for (size_t m = 0; m < slot->ops.size(); ++m) {
    if (slot->units[m] <= others.for_member(m) || slot->ops.size() == 1) {
      slot->ops[m]->satisfied = true;
      slot->ops[m]->release.join(slot->starts);  // every member has started
      satisfied.push_back(slot->ops[m]);
    }
  }
}

Time KernelExecution::kernel_cost(const CommKernel& k) const {
  const CostModel& c = rt_.world().config().cost;
  size_t bytes = 0;
  for (const CommOp& op : k.parts) bytes = std::max(bytes, op.spec.buf.bytes() + op.spec.buf2.bytes());
  return c.comm_latency + static_cast<Time>(bytes) * 1000 / std::max<int64_t>(c.comm_bytes_per_us, 1);
}

void KernelExecution::complete(CommKernel& k) {
  World& w = rt_.world();
  SimComm& comm = *k.comm;
  for (CommOp& op : k.parts) {
    op.completed = true;
    if (w.bus().active()) emit(core::EventKind::op_completed, op, k.primary()->full_name());
    if (NcclObserver* o = rt_.nccl_observer()) o->kernel_completed(w.now(), op.spec.id);
    if (core::is_p2p(op.spec.desc.kind)) {
      p2p_channel(op).retire(op);
    } else if (CollSlot* slot = comm.slot(op.spec.cseq)) {
      slot->ops[static_cast<size_t>(k.crank)] = nullptr;
      slot->done[static_cast<size_t>(k.crank)] = 1;
      ++slot->completed;
    }
  }
  while (!comm.slots.empty() && comm.slots.front().completed == comm.size()) {
    comm.slots.pop_front();
    ++comm.slot_base;
  }
  CommRankState& rs = comm.ranks[static_cast<size_t>(k.crank)];
  PPSPEC_ASSERT(!rs.live.empty() && rs.live.front() == &k);
  rs.live.pop_front();
  ++rs.completed;
  SimDevice& dev = member_device(rt_, comm, k.crank);
  if (w.clocks_on()) {
    k.done_clock = k.start_clock;
    for (const CommOp& op : k.parts) k.done_clock.join(op.release);
    rs.done_clock = k.done_clock;
    dev.comm_done_clock = k.done_clock;
  }
  // Usually the oldest live kernel: its removal is a pop, not a deque erase.
  PPSPEC_ASSERT(!dev.comm_live.empty(), "a completing kernel is live on its device");
  if (dev.comm_live.front() == &k)
    dev.comm_live.pop_front();
  else
    dev.comm_live.erase(std::find(dev.comm_live.begin(), dev.comm_live.end(), &k));
  ++dev.comm_completed;
  k.state = CommKernel::State::done;
  k.waiters.wake_all(w);
  rs.order_waiters.wake_all(w);
  dev.comm_order_waiters.wake_all(w);
}

void KernelExecution::emit(core::EventKind kind, const CommOp& op, std::string_view actor, int64_t value) {
  core::Event e = rt_.world().event(kind, op.kernel->rank, actor);
  e.comm = op.spec.comm->name;
  e.op_id = op.spec.id;
  e.cseq = op.spec.cseq;
  e.has_op = true;
  e.op = op.spec.desc;
  e.value = value;
  rt_.world().bus().publish(e);
}

}  // namespace ppspec::sim
