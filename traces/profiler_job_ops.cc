// ProfilerJob's operations: posted with job ranks and positions, started, completed; what is open
// and what waits, for the watcher's reports.
#include <fmt/format.h>

#include <algorithm>

#include "core/assert.h"
#include "core/error.h"
#include "traces/profiler_trace.h"

namespace ppspec::traces {

void ProfilerJob::post(size_t source, const ProfilerLine& l) {
  Source& s = sources_[source];
  Comm& c = comms_.at(l.comm);
  const OpKey key{source, l.comm, l.op};
  if (!l.kind_of_op) {
    ++counts_.unmodelled;
    unmodelled_.insert(key);
    return;
  }
  core::OpDesc d;
  d.kind = *l.kind_of_op;
  d.dtype = l.dtype;
  d.count = l.count;
  d.captured = l.replay_of.has_value();
  const bool p2p = core::is_p2p(d.kind);
  if (l.peer >= 0 && (p2p || core::has_root(d.kind))) d.peer = c.members.at(l.peer);
  PPSPEC_ASSERT(!p2p || d.peer >= 0, "a send or recv goes out only with its peer");
  int64_t cseq = 0;
  if (!p2p)
    cseq = c.collectives[s.rank]++;
  else if (d.kind == core::OpKind::send)
    cseq = c.sends[{s.rank, d.peer}]++;
  else
    cseq = c.recvs[{d.peer, s.rank}]++;
  const auto [it, fresh] =
      open_.emplace(key, Posted{s.rank, l.comm, d, fmt::format("rank{}.stream{}", s.rank, l.stream), l.site,
                                next_op_id_++, cseq, rebase(l.t)});
  PPSPEC_ASSERT(fresh);
  const Posted& p = it->second;  // the event's views point into the entry, which outlives the event
  core::Event e;
  e.t = p.t;
  e.kind = core::EventKind::op_posted;
  e.rank = p.rank;
  e.actor = p.actor;
  e.comm = c.name;
  e.op_id = p.op_id;
  e.cseq = p.cseq;
  e.has_op = true;
  e.op = p.desc;
  e.text = p.site;
  e.value = l.replay_of ? replay_group(s, l) : l.group;
  ++counts_.posted;
  publish(e);
  // Completions no kernel event will tell: a plugin that records none (only a misalignment can be
  // found there; the watcher says so), and a send to oneself or its receive, which NCCL runs in its
  // kernel with no proxy operation and so tells no profiler of (measured on H200, NCCL 2.28.9):
  // it completes with its group, on this rank alone.
  const bool self = p2p && d.peer == s.rank;
  counts_.self_exchanges += self;
  if (s.completions && !self) return;
  ProfilerLine done = l;
  done.kind = ProfilerLineKind::op_completed;
  progress(source, done);
}

// Every replay of a captured group is a group of its own (NCCL launches the captured plan as one
// kernel each time), though its calls carry the capture's group number: a replay begins where one
// of the captured calls comes again.
int64_t ProfilerJob::replay_group(Source& s, const ProfilerLine& l) {
  if (l.group < 0) return -1;
  Source::Replaying& r = s.replaying[{l.comm, l.group}];
  if (r.number < 0 || !r.seen.insert(*l.replay_of).second) {
    r.seen = {*l.replay_of};
    r.number = kReplayGroups + next_replay_group_++;
  }
  return r.number;
}

void ProfilerJob::progress(size_t source, const ProfilerLine& l) {
  const OpKey key{source, l.comm, l.op};
  const bool done = l.kind == ProfilerLineKind::op_completed;
  if (unmodelled_.contains(key)) {
    if (done) unmodelled_.erase(key);
    return;
  }
  const auto it = open_.find(key);
  PPSPEC_ASSERT(it != open_.end(), "check_line lets only an open operation progress");
  Posted& p = it->second;
  core::Event e;
  e.t = rebase(l.t);
  e.kind = done ? core::EventKind::op_completed : core::EventKind::op_started;
  e.rank = p.rank;
  e.actor = p.actor;
  e.comm = comms_.at(p.comm).name;
  e.op_id = p.op_id;
  e.cseq = p.cseq;
  e.has_op = true;
  e.op = p.desc;
  p.started = true;
  publish(e);
  if (!done) return;
  ++counts_.completed;
  open_.erase(it);
}

std::vector<ProfilerJob::Open> ProfilerJob::open_ops() const {
  std::vector<Open> out;
  for (const auto& [key, p] : open_)
    out.push_back(
        Open{p.rank, comms_.at(p.comm).name, p.actor, core::describe(p.desc), p.site, p.op_id, p.cseq, p.t, p.started});
  std::stable_sort(out.begin(), out.end(), [](const Open& a, const Open& b) { return a.op_id < b.op_id; });
  return out;
}

std::vector<ProfilerJob::Held> ProfilerJob::held() const {
  std::vector<Held> out;
  for (const Source& s : sources_) {
    // A capture whose ncclGroupEnd never returned: connecting at first contact inside it, say.
    if (const auto c = s.capturing.begin(); c != s.capturing.end() && s.held.empty()) {
      const ProfilerLine& l = c->second;
      const auto comm = comms_.find(l.comm);
      out.push_back(Held{
          s.rank, comm == comms_.end() ? fmt::format("{:016x}", l.comm) : comm->second.name,
          fmt::format("{} {}[{}] (operation {}), captured into a CUDA graph",
                      l.kind_of_op ? core::to_string(*l.kind_of_op) : "operation", core::to_string(l.dtype), l.count,
                      l.op),
          l.site,
          "the ncclGroupEnd of its capture never returned (NCCL sets a connection up at first use, which a capture "
          "forbids: connect before capturing)",
          s.capturing.size()});
    }
    if (s.held.empty()) continue;
    const ProfilerLine& l = s.held.front();
    const auto c = comms_.find(l.comm);
    const std::string comm = c == comms_.end() ? fmt::format("{:016x}", l.comm) : c->second.name;
    const bool peerless = l.kind_of_op && core::is_p2p(*l.kind_of_op) && l.peer < 0;
    std::string why;
    if (peerless) {
      why =
          "NCCL never built it (its ncclGroupEnd, or the ungrouped call itself, never returned: stuck connecting to "
          "its peer "
          "at first contact, or never called), so its peer is unknown";
    } else {
      why = fmt::format("member {} of '{}' never initialised it, so its job rank is unknown", l.peer, comm);
    }
    const std::string what =
        fmt::format("{} {}[{}] (operation {})", l.kind_of_op ? core::to_string(*l.kind_of_op) : "operation",
                    core::to_string(l.dtype), l.count, l.op);
    out.push_back(Held{s.rank, comm, what, l.site, why, s.held.size()});
  }
  return out;
}

std::map<core::RankId, std::string> ProfilerJob::ranks() const {
  std::map<core::RankId, std::string> out;
  for (const auto& [rank, source] : rank_source_) out.emplace(rank, sources_[source].where);
  return out;
}

std::vector<core::RankId> ProfilerJob::ranks_without_trailer() const {
  std::vector<core::RankId> out;
  for (const auto& [rank, source] : rank_source_)
    if (!sources_[source].ended) out.push_back(rank);
  return out;
}

}  // namespace ppspec::traces
