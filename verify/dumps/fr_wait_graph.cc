#include "verify/dumps/fr_wait_graph.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/assert.h"

namespace ppspec::verify {

using traces::FrState;

namespace {

// Whether every record of `d` from `order` on is neither started nor completed: the calls the host
// was making when it stopped.
bool unstarted_from(const std::vector<FrState>& states, size_t order) {
  for (size_t i = order; i < states.size(); ++i)
    if (states[i] != FrState::scheduled) return false;
  return true;
}

}  // namespace

// Whether the operation belongs to its rank's last call: the last record, or the coalesced group
// the last record closes. Its host may still be inside that call.
bool in_last_call(const FrOp& op) {
  PPSPEC_ASSERT(op.order < op.dump->entries.size(), "record {} of a dump of {}", op.order, op.dump->entries.size());
  const size_t last = op.dump->entries.size() - 1;
  return op.order == last || op.coalesced == last;
}

// Whether NCCL can keep a host inside the call: where a communicator is made or connected — a
// group's first collective (PyTorch creates its communicator there unless told otherwise), and p2p,
// whose pair NCCL connects at its first contact (which the dumps do not show).
bool may_block_host(const FrOp& op) { return op.entry->is_p2p || op.entry->collective_seq_id <= 1; }

WaitGraph::WaitGraph(const FrJob& j, FrCalls c) : job(j), calls(c) {
  collect();
  classify();
  link();
}

void WaitGraph::collect() {
  auto add = [&](const FrOp& op) {
    calls_[op.dump->rank].push_back(&op);
    if (op.state != FrState::completed) stuck.push_back(Stuck{&op, op.dump->rank, false, false, kNoStuck});
  };
  for (const FrJobGroup& g : job.groups)
    for (const auto& lane : g.lanes)
      for (const FrOp& op : lane) add(op);
  for (const FrChannel& c : job.channels) {
    for (const FrOp& op : c.sends) add(op);
    for (const FrOp& op : c.recvs) add(op);
  }
  for (auto& [rank, ops] : calls_)
    std::sort(ops.begin(), ops.end(), [](const FrOp* a, const FrOp* b) { return a->order < b->order; });
  std::sort(stuck.begin(), stuck.end(), [](const Stuck& a, const Stuck& b) {
    return std::tie(a.rank, a.op->order) < std::tie(b.rank, b.op->order);
  });
  for (size_t i = 0; i < stuck.size(); ++i) {
    index_[{stuck[i].rank, stuck[i].op->order}] = i;
    by_rank[stuck[i].rank].push_back(i);
    PPSPEC_ASSERT(stuck[i].op->state != FrState::completed && stuck[i].rank == stuck[i].op->dump->rank);
  }
}

void WaitGraph::classify() {
  for (const auto& [rank, ops] : calls_)
    if (by_rank.count(rank)) classify_rank(rank, ops);
}

// A rank's calls placed by the execution model (verify/dumps/fr_streams.h): a stuck call runs when
// nothing it waits for is stuck (with TORCH_NCCL_ENABLE_TIMING: when its dump says it started), else
// it is queued behind the earliest stuck call it waits for.
void WaitGraph::classify_rank(int rank, const std::vector<const FrOp*>& ops) {
  const bool timing = job.timing.at(rank);
  FrStreams streams(calls, job.by_rank.at(rank)->file);
  std::map<size_t, const Stuck*> first_of_group;  // coalesced groups run as one: the first member decides
  size_t last_running = kNoStuck;
  bool completed_held =
      job.dropped.at(rank) == 0;  // a completed call held before: the ring reaches back past the stuck ones
  for (const FrOp* op : ops) {
    const FrPlacement at = streams.place(*op);
    const std::optional<size_t> me = find(rank, op->order);
    completed_held = completed_held || op->state == FrState::completed;
    if (!me) continue;
    Stuck& s = stuck[*me];
    if (const auto g = first_of_group.find(op->coalesced); op->coalesced != SIZE_MAX && g != first_of_group.end()) {
      s.running = g->second->running;
      s.in_call = g->second->in_call;
      s.blocker = g->second->blocker;
      continue;
    }
    const std::optional<size_t> blocker = at.blocker == SIZE_MAX ? std::nullopt : find(rank, at.blocker);
    s.blocker = blocker.value_or(kNoStuck);
    s.running = timing ? op->state == FrState::started : !blocker;
    if (timing && !s.running && s.blocker == kNoStuck) s.blocker = last_running;
    // Not started, behind nothing, and nothing after it on the rank started or completed: its host
    // is inside the call that posted it (NCCL's first-contact connection, or a group's end, blocks
    // until the peers call too), and it waits as if it ran.
    s.in_call = in_last_call(*op) && may_block_host(*op) && (!timing || unstarted_from(job.states.at(rank), op->order));
    if (!s.running && s.blocker == kNoStuck && s.in_call) s.running = true;
    if (s.blocker == kNoStuck && !completed_held) {
      s.behind_dropped = true;
      s.running = false;
    }
    if (s.running) s.blocker = kNoStuck;
    if (s.running) last_running = *me;
    if (op->coalesced != SIZE_MAX) first_of_group[op->coalesced] = &s;
    PPSPEC_ASSERT(s.blocker == kNoStuck || s.blocker < *me, "operation {} blocked by a later one ({})", *me, s.blocker);
  }
}

std::optional<size_t> WaitGraph::find(int rank, size_t order) const {
  const auto it = index_.find({rank, order});
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

void WaitGraph::partner(size_t i, int member, const FrOp* counterpart) {
  PPSPEC_ASSERT(i < stuck.size() && waits.size() == stuck.size());
  // A send to oneself and its receive run together, as one copy (NCCL's own group, or the sends
  // and receives an all_to_all becomes): neither waits for the other.
  if (member == stuck[i].rank && counterpart != nullptr) return;
  if (!job.by_rank.count(member)) {
    waits[i].push_back(Wait{Wait::Kind::no_dump, kNoStuck, member});
  } else if (counterpart == nullptr) {
    waits[i].push_back(Wait{Wait::Kind::not_posted, kNoStuck, member});
  } else if (const auto other = find(member, counterpart->order); !other) {
    // Its counterpart completed: in a coalesced group, it waits for the rest of its group.
    const size_t group = stuck[i].op->coalesced;
    bool held = false;
    if (group != SIZE_MAX)
      for (size_t j : by_rank.at(stuck[i].rank))
        if (j != i && stuck[j].op->coalesced == group) {
          waits[i].push_back(Wait{Wait::Kind::group_mate, j, stuck[i].rank});
          held = true;
        }
    if (!held) waits[i].push_back(Wait{Wait::Kind::paired_elsewhere, kNoStuck, member});
  } else if (!stuck[*other].running) {
    waits[i].push_back(Wait{Wait::Kind::queued, *other, member});
  } else if (stuck[*other].in_call && stuck[*other].op->coalesced != SIZE_MAX) {
    // A counterpart in a group its host is still posting delivers nothing until the call returns,
    // which waits for every member of the group: the others' waits are this one's.
    for (size_t j : by_rank.at(member))
      if (j != *other && stuck[j].op->coalesced == stuck[*other].op->coalesced)
        waits[i].push_back(Wait{Wait::Kind::group_mate, j, member});
  }
  // A counterpart that runs waits with it; one that completed paired otherwise (a mismatch, reported
  // by verify/dumps/fr_sequences.cc) and is no partner to wait for.
}

// A counterpart the member's ring dropped: it completed long before where the ring holds a completed
// call of the member's (no partner to wait for); where it holds none, it may be stuck, as unknown as
// where the member is (its first stuck operation, behind what was dropped).
bool WaitGraph::dropped_counterpart(size_t i, int member) {
  const auto it = by_rank.find(member);
  if (it == by_rank.end() || it->second.empty() || !stuck[it->second.front()].behind_dropped) return false;
  waits[i].push_back(Wait{Wait::Kind::queued, it->second.front(), member});
  return true;
}

void WaitGraph::link() {
  waits.resize(stuck.size());
  std::map<std::tuple<size_t, int, int>, const FrChannel*> channels;
  for (const FrChannel& c : job.channels) channels[{c.group, c.src, c.dst}] = &c;
  for (size_t i = 0; i < stuck.size(); ++i) {
    if (!stuck[i].running) continue;
    const FrOp& op = *stuck[i].op;
    const traces::FrEntry& e = *op.entry;
    if (e.is_p2p) {
      const bool send = e.kind == traces::FrKind::send;
      const FrChannel* c = channels.at({op.group, send ? op.dump->rank : e.peer, send ? e.peer : op.dump->rank});
      PPSPEC_ASSERT(op.position >= 0 && c != nullptr, "a p2p operation without its place on its channel");
      if (!c->aligned) {
        waits[i].push_back(Wait{Wait::Kind::unplaced, kNoStuck, e.peer});
        continue;
      }
      const auto& theirs = send ? c->recvs : c->sends;
      const int64_t first = theirs.empty() ? 0 : theirs.front().position;
      if (!theirs.empty() && op.position < first && job.by_rank.count(e.peer)) {
        dropped_counterpart(i, e.peer);
        continue;
      }
      const int64_t k = op.position - first;
      const FrOp* counterpart =
          k >= 0 && k < static_cast<int64_t>(theirs.size()) ? &theirs[static_cast<size_t>(k)] : nullptr;
      // None held: a peer whose ring dropped records and holds none of its completed calls may have
      // posted it before what its ring holds (a send is often posted long before its receive).
      if (counterpart == nullptr && job.by_rank.count(e.peer) && job.dropped.at(e.peer) > 0) {
        if (dropped_counterpart(i, e.peer)) continue;
        if (theirs.empty()) {
          waits[i].push_back(Wait{Wait::Kind::unheld, kNoStuck, e.peer});
          continue;
        }
      }
      partner(i, e.peer, counterpart);
      continue;
    }
    const FrJobGroup& g = job.groups[op.group];
    for (size_t m = 0; m < g.ranks.size(); ++m) {
      if (g.ranks[m] == op.dump->rank) continue;
      const auto& lane = g.lanes[m];
      // A member's later collectives there say it posted this one: its ring dropped it.
      if (!lane.empty() && lane.front().entry->collective_seq_id > e.collective_seq_id &&
          job.by_rank.count(g.ranks[m])) {
        dropped_counterpart(i, g.ranks[m]);
        continue;
      }
      // A ring that dropped records and holds none of the member's collectives there says nothing.
      if (lane.empty() && job.by_rank.count(g.ranks[m]) && job.dropped.at(g.ranks[m]) > 0) {
        if (!dropped_counterpart(i, g.ranks[m])) waits[i].push_back(Wait{Wait::Kind::unheld, kNoStuck, g.ranks[m]});
        continue;
      }
      const auto it = std::lower_bound(lane.begin(), lane.end(), e.collective_seq_id,
                                       [](const FrOp& o, int64_t seq) { return o.entry->collective_seq_id < seq; });
      partner(i, g.ranks[m], it != lane.end() && it->entry->collective_seq_id == e.collective_seq_id ? &*it : nullptr);
    }
  }
}

std::vector<size_t> WaitGraph::where(int rank) const {
  std::vector<size_t> out;
  const auto it = by_rank.find(rank);
  if (it == by_rank.end()) return out;
  for (size_t i : it->second)
    if (stuck[i].running) out.push_back(i);
  PPSPEC_ASSERT(!it->second.empty());
  if (out.empty()) out.push_back(it->second.front());
  return out;
}

std::string WaitGraph::op_words(size_t i) const {
  PPSPEC_ASSERT(i < stuck.size() && stuck[i].op->group < job.groups.size());
  const FrOp& op = *stuck[i].op;
  const traces::FrEntry& e = *op.entry;
  const std::string group = job.groups[op.group].label();
  if (e.is_p2p)
    return fmt::format("{} #{} {} rank {} on {} ({}, p2p_seq_id {})", e.op, op.position + 1,
                       e.kind == traces::FrKind::send ? "to" : "from", e.peer, group, describe(e, false), e.p2p_seq_id);
  return fmt::format("{} collective_seq_id {} ({})", group, e.collective_seq_id, describe(op));
}

}  // namespace ppspec::verify
