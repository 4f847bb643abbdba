#include "verify/fr_wait_graph.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/assert.h"

namespace ppspec::verify {

using traces::FrState;

namespace {

// The stream an operation runs on, as PyTorch lays them out: a group's collectives share one, each
// p2p pair of a group has its own.
std::tuple<size_t, int, int> stream_of(const FrOp& op) {
  const traces::FrEntry& e = *op.entry;
  if (!e.is_p2p) return {op.group, -1, -1};
  return {op.group, std::min(op.dump->rank, e.peer), std::max(op.dump->rank, e.peer)};
}

}  // namespace

WaitGraph::WaitGraph(const FrJob& j) : job(j) {
  collect();
  classify();
  link();
}

void WaitGraph::collect() {
  auto add = [&](const FrOp& op) {
    if (op.entry->state != FrState::completed) stuck.push_back(Stuck{&op, op.dump->rank, false, kNoStuck});
  };
  for (const FrJobGroup& g : job.groups)
    for (const auto& lane : g.lanes)
      for (const FrOp& op : lane) add(op);
  for (const FrChannel& c : job.channels) {
    for (const FrOp& op : c.sends) add(op);
    for (const FrOp& op : c.recvs) add(op);
  }
  std::sort(stuck.begin(), stuck.end(), [](const Stuck& a, const Stuck& b) { return std::tie(a.rank, a.op->order) < std::tie(b.rank, b.op->order); });
  for (size_t i = 0; i < stuck.size(); ++i) {
    index_[{stuck[i].rank, stuck[i].op->order}] = i;
    by_rank[stuck[i].rank].push_back(i);
  }
}


void WaitGraph::classify() {
  for (const auto& [rank, ops] : by_rank) {
    const bool timing = job.timing.at(rank);
    std::map<std::tuple<size_t, int, int>, size_t> last_on_stream;
    size_t last_running = kNoStuck;
    for (size_t i : ops) {
      Stuck& s = stuck[i];
      const auto stream = stream_of(*s.op);
      const auto before = last_on_stream.find(stream);
      s.running = timing ? s.op->entry->state == FrState::started : before == last_on_stream.end();
      if (!s.running) s.blocker = before != last_on_stream.end() ? before->second : timing ? last_running : kNoStuck;
      last_on_stream[stream] = i;
      if (s.running) last_running = i;
    }
  }
}

std::optional<size_t> WaitGraph::find(int rank, size_t order) const {
  const auto it = index_.find({rank, order});
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

void WaitGraph::partner(size_t i, int member, const FrOp* counterpart) {
  if (!job.by_rank.count(member)) {
    waits[i].push_back(Wait{Wait::Kind::no_dump, kNoStuck, member});
  } else if (counterpart == nullptr) {
    waits[i].push_back(Wait{Wait::Kind::not_posted, kNoStuck, member});
  } else if (const auto other = find(member, counterpart->order); !other) {
    waits[i].push_back(Wait{Wait::Kind::paired_elsewhere, kNoStuck, member});
  } else if (!stuck[*other].running) {
    waits[i].push_back(Wait{Wait::Kind::queued, *other, member});
  }
  // A counterpart that runs waits with it; one that completed paired otherwise (a mismatch, reported
  // by verify/fr_sequences.cc) and is no partner to wait for.
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
      const bool send = e.op == "send";
      const FrChannel* c = channels.at({op.group, send ? op.dump->rank : e.peer, send ? e.peer : op.dump->rank});
      const auto& theirs = send ? c->recvs : c->sends;
      const size_t k = static_cast<size_t>(op.position);
      partner(i, e.peer, k < theirs.size() ? &theirs[k] : nullptr);
      continue;
    }
    const FrJobGroup& g = job.groups[op.group];
    for (size_t m = 0; m < g.ranks.size(); ++m) {
      if (g.ranks[m] == op.dump->rank) continue;
      const auto& lane = g.lanes[m];
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
  if (out.empty()) out.push_back(it->second.front());
  return out;
}

std::string WaitGraph::op_words(size_t i) const {
  const FrOp& op = *stuck[i].op;
  const traces::FrEntry& e = *op.entry;
  const std::string group = job.groups[op.group].label();
  if (e.is_p2p)
    return fmt::format("{} #{} {} rank {} on {} ({}, p2p_seq_id {})", e.op, op.position + 1, e.op == "send" ? "to" : "from", e.peer, group,
                       describe(e, false), e.p2p_seq_id);
  return fmt::format("{} collective_seq_id {} ({})", group, e.collective_seq_id, describe(e));
}


}  // namespace ppspec::verify
