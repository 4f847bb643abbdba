#include "sim/comm_connect.h"

#include <algorithm>
#include <fmt/format.h>
#include <utility>

#include "sim/device.h"
#include "sim/sim_runtime.h"

namespace ppspec::sim {

void ConnectionSetup::add(const SimComm& comm) {
  PPSPEC_ASSERT(static_cast<size_t>(comm.index) == comms_.size(), "communicator '{}' added out of order", comm.name);
  const auto n = comm.members.size();
  CommConnections& c = comms_.emplace_back();
  c.pairs.reset(n);
  c.collective.what = fmt::format("collective connection on '{}'", comm.name);
  c.collective.parties = comm.members;
  c.collective.comm = &comm;
  c.collective.arrived.assign(n, false);
  c.init.arrived.assign(n, false);
}

ConnectionSetup::CommConnections& ConnectionSetup::state(const SimComm& comm) {
  PPSPEC_ASSERT(comm.index >= 0 && static_cast<size_t>(comm.index) < comms_.size());
  return comms_[static_cast<size_t>(comm.index)];
}

const ConnectionSetup::CommConnections& ConnectionSetup::state(const SimComm& comm) const {
  PPSPEC_ASSERT(comm.index >= 0 && static_cast<size_t>(comm.index) < comms_.size());
  return comms_[static_cast<size_t>(comm.index)];
}

void ConnectionSetup::init(SimComm& comm, int crank) {
  const core::RankId me = comm.members[static_cast<size_t>(crank)];
  CommInit& init = state(comm).init;
  World& w = rt_.world();
  SimDevice& dev = rt_.device_impl(me);
  dev.enter();
  if (!init.arrived[static_cast<size_t>(crank)]) {
    init.arrived[static_cast<size_t>(crank)] = true;
    ++init.count;
    PPSPEC_ASSERT(init.count <= comm.size());
    if (const VectorClock* c = w.host_clock()) init.clock.join(*c);
    // Only the last arrival can let anyone pass: waking the waiters at every arrival made an
    // n-member init cost n^2 scheduling steps under PCT.
    if (init.count == comm.size()) init.waiters.wake_all(w);
  }
  // ncclCommInitRank is collective: every member must arrive (R1).
  while (init.count < comm.size())
    init.waiters.wait(w, WaitInfo{.kind = WaitKind::comm_init, .what = "comm init", .init = &init});
  if (VectorClock* c = w.host_clock()) c->join(init.clock);
  // NCCL initialises its profiler once every member's information has arrived (initTransportsRank,
  // after its AllGather3), before the rest of the setup: every member's init is told before any posts.
  if (NcclObserver* o = rt_.nccl_observer())
    o->comm_initialised(w.now(), me, comm.name, crank, static_cast<int>(comm.size()));
  comm.ranks[static_cast<size_t>(crank)].initialised = true;
  w.sleep(w.jittered(w.config().cost.comm_init));
  if (w.bus().active()) {
    core::Event e = w.event(core::EventKind::comm_init, me, w.current().name);
    e.comm = comm.name;
    e.value = comm.size();
    w.bus().publish(e);
  }
}

PairSetup& ConnectionSetup::pair_setup(const SimComm& comm, int a, int b) {
  return state(comm).pairs.get(std::min(a, b), std::max(a, b)).first;
}

Connection& ConnectionSetup::setup_round(const SimComm& comm, int a, int b, int64_t k) {
  if (a > b) std::swap(a, b);
  PairSetup& ps = pair_setup(comm, a, b);
  PPSPEC_ASSERT(k >= 0 && k < PairSetup::kRoundsMax, "round {} of a pair: each side sets two ends up once", k);
  while (static_cast<int64_t>(ps.rounds.size()) <= k) {
    Connection& c = ps.rounds.emplace_back();
    c.what =
        fmt::format("p2p connection rank{}<->rank{} on '{}' (setup round {})", comm.members[static_cast<size_t>(a)],
                    comm.members[static_cast<size_t>(b)], comm.name, ps.rounds.size());
    c.parties = {comm.members[static_cast<size_t>(a)], comm.members[static_cast<size_t>(b)]};
    c.arrived.assign(2, false);
    c.comm = &comm;
    c.p2p = true;
  }
  return ps.rounds[static_cast<size_t>(k)];
}

bool ConnectionSetup::wired(const SimComm& comm, int src, int dst) {
  if (src == dst) return true;                                 // nothing to connect to oneself
  return pair_setup(comm, src, dst).wired(src < dst ? 0 : 1);  // the memo: the hot path's lookup
}

// Whether `p` would make NCCL set a connection up: its communicator's collectives before their
// first use (with runtime_connect), or a p2p direction this rank never used with that peer on the
// communicator (NCCL connects each peer's send and receive sides at their first use:
// p2pTaskAppend's sendSeen / recvSeen).
bool ConnectionSetup::would_set_up(const PartSpec& p) {
  const bool p2p = core::is_p2p(p.desc.kind);
  if (!p2p) {
    if (!rt_.world().config().runtime_connect) return false;  // connected at init
    const Connection& conn = state(*p.comm).collective;
    return !conn.established && !conn.arrived[static_cast<size_t>(p.crank)];
  }
  if (p.peer == p.crank) return false;  // nothing to connect to oneself
  const PairSetup& ps = pair_setup(*p.comm, p.crank, p.peer);
  const int side = p.crank < p.peer ? 0 : 1;
  return (p.desc.kind == core::OpKind::send ? ps.send_end[side] : ps.recv_end[side]) < 0;
}

void ConnectionSetup::connect(const std::vector<PartSpec>& parts) {
  World& w = rt_.world();
  std::vector<Connection*> needed;
  touched_.clear();  // reused: connect runs on every post
  for (const PartSpec& p : parts) {
    const bool p2p = core::is_p2p(p.desc.kind);
    // NCCL_RUNTIME_CONNECT=0 connects collectives' channels at init; p2p peers are connected at
    // first use whatever it says (p2pTaskAppend marks them for a preconnect): R1.
    if (!p2p && !w.config().runtime_connect) continue;
    Connection* joined = p2p ? join_setup_round(p) : &state(*p.comm).collective;
    if (joined == nullptr || joined->established) continue;
    Connection& conn = *joined;
    // A collective connection's parties are the members in comm-rank order.
    if (!p2p) conn.arrive(static_cast<size_t>(p.crank));
    if (!conn.collecting) {
      conn.collecting = true;  // a group's many parts to one peer need the connection once
      needed.push_back(&conn);
      if (const VectorClock* mine = w.host_clock()) conn.clock.join(*mine);
    }
  }
  for (PairSetup* ps : touched_) ps->collecting[0] = ps->collecting[1] = false;
  if (needed.empty()) return;
  for (Connection* c : needed) {
    c->collecting = false;
    if (c->all_arrived()) {
      c->established = true;
      c->waiters.wake_all(w);
    }
  }
  // The host blocks until every peer reached its side of the connection (R1).
  for (Connection* c : needed)
    while (!c->established)
      c->waiters.wait(w, WaitInfo{.kind = WaitKind::connect, .what = "first-contact connect", .connection = c});
  if (VectorClock* mine = w.host_clock())
    for (Connection* c : needed) mine->join(c->clock);  // every party has arrived: the clock is final
  w.sleep(w.jittered(w.config().cost.connect));
}

// The setup round `p` joins (PairSetup): the first part of this call that sets an end of the pair
// up starts the side's next round, and every end the call sets up belongs to it. Null when `p`
// sets nothing up (its end exists, or it is a part to oneself).
Connection* ConnectionSetup::join_setup_round(const PartSpec& p) {
  if (p.peer == p.crank) return nullptr;
  const SimComm& c = *p.comm;
  PairSetup& ps = pair_setup(c, p.crank, p.peer);
  const int side = p.crank < p.peer ? 0 : 1;
  int64_t& end = p.desc.kind == core::OpKind::send ? ps.send_end[side] : ps.recv_end[side];
  if (end >= 0) return nullptr;
  if (!ps.collecting[side]) {  // one call may drive both sides (one thread, two devices)
    ps.collecting[side] = true;
    touched_.push_back(&ps);
    ps.current[side] = ps.started[side]++;
  }
  end = ps.current[side];
  Connection& round = setup_round(c, p.crank, p.peer, end);
  round.arrive(static_cast<size_t>(side));
  return &round;
}

}  // namespace ppspec::sim
