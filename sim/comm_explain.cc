#include "sim/comm_explain.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/assert.h"
#include "sim/comm_connect.h"
#include "sim/device.h"
#include "sim/sim_runtime.h"
#include "sim/stream.h"

namespace ppspec::sim {

namespace {

// The channel of a posted p2p operation: posting made it, and explaining must not make new ones.
const P2PChannel& posted_channel(const SimComm& comm, int src, int dst) {
  const P2PChannel* ch = comm.find_channel(src, dst);
  PPSPEC_ASSERT(ch != nullptr, "a posted p2p operation has a channel");
  return *ch;
}

}  // namespace

std::string CommExplainer::describe(const CommOp& op) const {
  return fmt::format("{} on '{}' #{}", core::describe(op.spec.desc), op.spec.comm->name, op.spec.cseq);
}

std::string CommExplainer::describe_kernel(const CommKernel& k) const {
  if (k.parts.size() == 1) return describe(k.parts.front());
  std::string s = fmt::format("group of {}: ", k.parts.size());
  for (size_t i = 0; i < k.parts.size(); ++i) {
    if (i) s += "; ";
    s += describe(k.parts[i]);
  }
  return s;
}

const CommKernel* CommExplainer::order_blocker(const CommKernel& k) const {
  const CommRankState& rs = k.comm->ranks[static_cast<size_t>(k.crank)];
  if (rs.completed != k.comm_seq && !rs.live.empty()) return rs.live.front();
  const SimDevice& dev = member_device(rt_, *k.comm, k.crank);
  if (rt_.world().config().concurrency == core::Concurrency::serial && dev.comm_completed != k.dev_seq &&
      !dev.comm_live.empty())
    return dev.comm_live.front();
  return nullptr;
}

namespace {

// The first launched-but-not-started op in `live`, if any.
const CommOp* first_unstarted(const std::deque<CommOp*>& live) {
  for (const CommOp* op : live)
    if (!op->started) return op;
  return nullptr;
}

}  // namespace

Blocker CommExplainer::p2p_blocker(const CommKernel& k, const CommOp& op) const {
  PPSPEC_ASSERT(core::is_p2p(op.spec.desc.kind) && !op.satisfied);
  const SimComm& comm = *k.comm;
  const bool is_send = op.spec.desc.kind == core::OpKind::send;
  const int peer = op.spec.peer;
  const core::RankId peer_rank = comm.members[static_cast<size_t>(peer)];
  const P2PChannel& ch = is_send ? posted_channel(comm, k.crank, peer) : posted_channel(comm, peer, k.crank);
  if (op.units_done > 0 && !is_send) {
    // Emulated size mismatch: part of the data came, the rest never will unless more is sent.
    const CommOp* next = first_unstarted(ch.live_sends);
    if (next != nullptr)
      return {Blocker::Kind::stream, next->kernel->primary(), peer_rank,
              fmt::format("has {} of {} units; waits for more from {}", op.units_done, op.units, describe(*next)),
              &next->kernel->issue_clock};
    return {Blocker::Kind::rank_host, nullptr, peer_rank,
            fmt::format("has {} of {} units; the sender completed with fewer (size mismatch, R5) and rank{} has "
                        "posted nothing more to it",
                        op.units_done, op.units, peer_rank)};
  }
  const CommOp* other = first_unstarted(is_send ? ch.live_recvs : ch.live_sends);
  if (other != nullptr)
    return {Blocker::Kind::stream, other->kernel->primary(), peer_rank,
            fmt::format("its partner {} is queued behind other work", describe(*other)), &other->kernel->issue_clock};
  const std::string partner = fmt::format("{} #{} rank{}->rank{} on '{}'", is_send ? "recv" : "send", op.spec.cseq,
                                          is_send ? k.rank : peer_rank, is_send ? peer_rank : k.rank, comm.name);
  return {Blocker::Kind::rank_host,
          nullptr,
          peer_rank,
          fmt::format("rank{} has not posted {}", peer_rank, partner),
          nullptr,
          core::Culprit{peer_rank, comm.name, true, k.rank, op.spec.cseq, core::Blame::never_posted}};
}

namespace {

// The launched, uncompleted operation at position `cseq` of a channel's live list, if any.
const CommOp* at_position(const std::deque<CommOp*>& live, int64_t cseq) {
  for (const CommOp* op : live)
    if (op->spec.cseq == cseq) return op;
  return nullptr;
}

// What has happened of a launched partner: its start, or its issue while it waits to start.
Blocker partner_blocker(const CommOp& other, core::RankId rank, std::string what) {
  const CommKernel& k = *other.kernel;
  if (other.started) return {Blocker::Kind::none, nullptr, rank, std::move(what), &k.start_clock};
  return {Blocker::Kind::stream, k.primary(), rank, std::move(what), &k.issue_clock};
}

}  // namespace

std::vector<Blocker> CommExplainer::release_blockers(const CommKernel& k) const {
  std::vector<Blocker> out;
  const SimComm& comm = *k.comm;
  for (const CommOp& op : k.parts) {
    if (op.satisfied) continue;
    if (core::is_p2p(op.spec.desc.kind)) {
      const bool is_send = op.spec.desc.kind == core::OpKind::send;
      const core::RankId peer_rank = comm.members[static_cast<size_t>(op.spec.peer)];
      const P2PChannel& ch =
          is_send ? posted_channel(comm, k.crank, op.spec.peer) : posted_channel(comm, op.spec.peer, k.crank);
      if (const CommOp* other = at_position(is_send ? ch.live_recvs : ch.live_sends, op.spec.cseq)) {
        out.push_back(partner_blocker(*other, peer_rank, describe(*other)));
        continue;
      }
      const UnitSource* buffered = nullptr;  // a send that completed into the connection buffer (R4)
      for (const UnitSource& src : ch.sources())
        if (!is_send && src.op == nullptr && src.cseq == op.spec.cseq) buffered = &src;
      if (buffered != nullptr)
        out.push_back({Blocker::Kind::none, nullptr, peer_rank, "buffered", &buffered->start});
      else
        out.push_back({Blocker::Kind::rank_host, nullptr, peer_rank,
                       fmt::format("rank{} has not launched the partner", peer_rank)});
      continue;
    }
    const CollSlot* slot = comm.find_slot(op.spec.cseq);
    if (slot == nullptr) continue;
    for (size_t m = 0; m < slot->ops.size(); ++m) {
      if (static_cast<int>(m) == k.crank) continue;
      if (const CommOp* other = slot->ops[m])
        out.push_back(partner_blocker(*other, comm.members[m], describe(*other)));
      else if (!slot->done[m])
        out.push_back({Blocker::Kind::rank_host, nullptr, comm.members[m],
                       fmt::format("rank{} has not launched collective #{}", comm.members[m], op.spec.cseq)});
    }
  }
  return out;
}

CollectiveHold CommExplainer::collective_hold(const SimComm& comm, int64_t cseq) const {
  CollectiveHold h;
  h.slot = comm.find_slot(cseq);
  if (h.slot == nullptr) return h;
  const CollSlot& slot = *h.slot;
  for (size_t m = 0; m < slot.ops.size(); ++m) {
    const core::RankId r = comm.members[m];
    const CommOp* other = slot.ops[m];
    if (other == nullptr && slot.units[m] < 0)
      h.members.push_back({Blocker::Kind::rank_host, nullptr, r,
                           fmt::format("rank{} has not posted collective #{} on '{}'", r, cseq, comm.name), nullptr,
                           core::Culprit{r, comm.name, false, -1, cseq, core::Blame::never_posted}});
    else if (other == nullptr && !slot.launched[m])
      h.members.push_back(
          {Blocker::Kind::rank_host, nullptr, r,
           fmt::format("rank{} posted collective #{} on '{}' but has not launched it", r, cseq, comm.name)});
    else if (other != nullptr && !other->started)
      h.members.push_back({Blocker::Kind::stream, other->kernel->primary(), r,
                           fmt::format("rank{}'s {} is queued behind other work", r, describe(*other)),
                           &other->kernel->issue_clock});
  }
  h.others = others_units(slot.units);
  return h;
}

Blocker CommExplainer::size_mismatch(const CollectiveHold& hold, int crank) const {
  PPSPEC_ASSERT(hold.slot != nullptr && hold.members.empty());
  PPSPEC_ASSERT(crank >= 0 && static_cast<size_t>(crank) < hold.slot->units.size());
  return {
      Blocker::Kind::none, nullptr, -1,
      fmt::format("expects {} units but its peers provide {}: it spins forever (size mismatch, R5)",
                  hold.slot->units[static_cast<size_t>(crank)], hold.others.for_member(static_cast<size_t>(crank)))};
}

core::Culprit CommExplainer::never_connected(const Connection& c, core::RankId absent) const {
  const SimComm& comm = *c.comm;
  const int a = comm.crank_of(absent);
  if (!c.p2p)
    return core::Culprit{
        absent, comm.name, false, -1, comm.ranks[static_cast<size_t>(a)].coll_posted, core::Blame::never_posted};
  const core::RankId waiter = c.parties[0] == absent ? c.parties[1] : c.parties[0];
  const int w = comm.crank_of(waiter);
  // What the absent rank never posted: the send a receive of the waiter needs first (a receive
  // cannot complete without it; a small send can without its receive), else a send's receive.
  const P2PChannel* from = comm.find_channel(a, w);
  if (from != nullptr && from->recvs_posted > from->sends_posted)
    return core::Culprit{absent, comm.name, true, waiter, from->sends_posted, core::Blame::never_posted};
  const P2PChannel* to = comm.find_channel(w, a);
  return core::Culprit{
      absent, comm.name, true, waiter, to == nullptr ? 0 : to->recvs_posted, core::Blame::never_posted};
}

}  // namespace ppspec::sim
