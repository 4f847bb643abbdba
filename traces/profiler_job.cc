// ProfilerJob (traces/profiler_trace.h): a job's per-rank profiler traces as one event stream.
#include <fmt/format.h>

#include <algorithm>

#include "core/assert.h"
#include "core/error.h"
#include "traces/profiler_trace.h"

namespace ppspec::traces {

namespace {
// Operations a communicator may hold while a member has not initialised it: beyond this the job
// is not waiting for a slow member, that member never came.
constexpr size_t kWaitingMax = size_t{1} << 20;
}  // namespace

size_t ProfilerJob::add_source(std::string where) {
  Source s;
  s.where = std::move(where);
  sources_.push_back(std::move(s));
  ++counts_.sources;
  return sources_.size() - 1;
}

core::Time ProfilerJob::rebase(int64_t t) {
  if (!base_t_) base_t_ = t;
  const core::Time r = std::max<int64_t>(0, t - *base_t_);
  last_t_ = std::max(last_t_, r);
  return r;
}

void ProfilerJob::publish(core::Event& e) {
  e.seq = next_seq_++;
  sink_.on_event(e);
}

void ProfilerJob::add_line(size_t source, const std::string& text) {
  PPSPEC_ASSERT(source < sources_.size());
  Source& s = sources_[source];
  ++s.line;
  const ProfilerLine l = parse_profiler_line(text, s.where, s.line);
  if (s.ended) throw core::InputError(s.where, s.line, "a line after the trace's trailer");
  if ((l.kind == ProfilerLineKind::header) == s.has_header)
    throw core::InputError(s.where, s.line, s.has_header ? "a second header" : "the first line must be the plugin's header");
  switch (l.kind) {
    case ProfilerLineKind::header: on_header(s, l); return;
    case ProfilerLineKind::comm_init: on_comm_init(source, l); return;
    case ProfilerLineKind::lost: {
      const uint64_t before = lost_[{source, l.comm}];
      if (l.lost < before) throw core::InputError(s.where, s.line, "the count of lost records went down");
      counts_.lost += l.lost - before;
      lost_[{source, l.comm}] = l.lost;
      return;
    }
    case ProfilerLineKind::trailer:
      s.ended = true;
      ++counts_.ended;
      counts_.disabled += l.disabled;
      return;
    default: on_op(source, l);
  }
}

void ProfilerJob::on_header(Source& s, const ProfilerLine& l) {
  s.has_header = true;
  s.rank = l.rank;
  if (s.rank < 0) {
    // No variable named the process's rank: the first job rank no trace has claimed.
    s.rank = 0;
    while (rank_source_.contains(s.rank)) ++s.rank;
  }
  if (auto [at, fresh] = rank_source_.emplace(s.rank, &s - sources_.data()); !fresh)
    throw core::InputError(s.where, s.line, fmt::format("rank {} is traced twice: here and in {}", s.rank, sources_[at->second].where));
}

void ProfilerJob::on_comm_init(size_t source, const ProfilerLine& l) {
  Source& s = sources_[source];
  if (!s.comm_rank.emplace(l.comm, l.comm_rank).second)
    throw core::InputError(s.where, s.line, fmt::format("communicator {:016x} initialised twice by this rank", l.comm));
  auto [it, fresh] = comms_.try_emplace(l.comm);
  Comm& c = it->second;
  if (fresh) {
    c.ranks = l.ranks;
    c.name = l.name.empty() ? fmt::format("{:016x}", l.comm) : l.name;
    // Two communicators of one name (PyTorch names split groups alike): the hash tells them apart.
    if (names_.contains(c.name)) c.name += fmt::format("#{:08x}", l.comm >> 32);
    names_.emplace(c.name, l.comm);
    ++counts_.comms;
  } else if (c.ranks != l.ranks) {
    throw core::InputError(s.where, s.line, fmt::format("communicator '{}' has {} members here and {} in another trace", c.name, l.ranks, c.ranks));
  }
  if (!c.members.emplace(l.comm_rank, s.rank).second)
    throw core::InputError(s.where, s.line, fmt::format("communicator '{}': two ranks say they are its member {}", c.name, l.comm_rank));
  core::Event e;
  e.t = rebase(l.t);
  e.kind = core::EventKind::comm_init;
  e.rank = s.rank;
  const std::string actor = fmt::format("rank{}.host", s.rank);
  e.actor = actor;
  e.comm = c.name;
  e.value = c.ranks;
  publish(e);
  if (static_cast<int>(c.members.size()) < c.ranks) return;
  // Every member is known: what waited for the peers' job ranks goes out, in arrival order.
  while (!c.waiting.empty()) {
    auto [from, line] = std::move(c.waiting.front());
    c.waiting.pop_front();
    --counts_.waiting;
    line.kind == ProfilerLineKind::op_posted ? post(sources_[from], from, c, line) : complete(sources_[from], from, line);
  }
}

void ProfilerJob::on_op(size_t source, const ProfilerLine& l) {
  Source& s = sources_[source];
  if (!s.comm_rank.contains(l.comm))
    throw core::InputError(s.where, s.line, fmt::format("an operation on communicator {:016x} before its comm_init", l.comm));
  if (l.kind == ProfilerLineKind::comm_finalized) return;
  Comm& c = comms_.at(l.comm);
  if (static_cast<int>(c.members.size()) < c.ranks) {
    if (c.waiting.size() >= kWaitingMax)
      throw core::InputError(s.where, s.line, fmt::format("communicator '{}': {} operations wait for members that never initialised it", c.name, kWaitingMax));
    c.waiting.emplace_back(source, l);
    ++counts_.waiting;
    return;
  }
  l.kind == ProfilerLineKind::op_posted ? post(s, source, c, l) : complete(s, source, l);
}

void ProfilerJob::post(Source& s, size_t source, Comm& c, const ProfilerLine& l) {
  const auto key = std::make_tuple(source, l.comm, l.op);
  if (open_.contains(key) || unmodelled_.contains(key))
    throw core::InputError(s.where, s.line, fmt::format("operation {} on '{}' posted twice", l.op, c.name));
  if (!l.kind_of_op) {
    ++counts_.unmodelled;
    unmodelled_.insert(key);
    return;
  }
  core::OpDesc d;
  d.kind = *l.kind_of_op;
  d.dtype = l.dtype;
  d.count = l.count;
  d.captured = l.captured;
  const bool p2p = core::is_p2p(d.kind);
  if (p2p || core::has_root(d.kind)) {
    if (l.peer < 0 || l.peer >= c.ranks)
      throw core::InputError(s.where, s.line, fmt::format("'{}' has {} members: no member {} to be a peer or root", c.name, c.ranks, l.peer));
    d.peer = c.members.at(l.peer);
  }
  int64_t cseq = 0;
  if (!p2p) cseq = c.collectives[s.rank]++;
  else if (d.kind == core::OpKind::send) cseq = c.sends[{s.rank, d.peer}]++;
  else cseq = c.recvs[{d.peer, s.rank}]++;
  Posted p{s.rank, l.comm, d, fmt::format("rank{}.stream{}", s.rank, l.stream), l.site, next_op_id_++, cseq, rebase(l.t)};
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
  ++counts_.posted;
  open_.emplace(key, std::move(p));
  publish(e);
}

void ProfilerJob::complete(Source& s, size_t source, const ProfilerLine& l) {
  const auto key = std::make_tuple(source, l.comm, l.op);
  if (unmodelled_.erase(key) == 1) return;
  const auto it = open_.find(key);
  if (it == open_.end()) throw core::InputError(s.where, s.line, fmt::format("operation {} completed and was never posted", l.op));
  const Posted& p = it->second;
  core::Event e;
  e.t = rebase(l.t);
  e.kind = core::EventKind::op_completed;
  e.rank = p.rank;
  e.actor = p.actor;
  e.comm = comms_.at(p.comm).name;
  e.op_id = p.op_id;
  e.cseq = p.cseq;
  e.has_op = true;
  e.op = p.desc;
  ++counts_.completed;
  publish(e);
  open_.erase(it);
}

std::vector<ProfilerJob::Open> ProfilerJob::open_ops() const {
  std::vector<Open> out;
  for (const auto& [key, p] : open_)
    out.push_back(Open{p.rank, comms_.at(p.comm).name, p.actor, core::describe(p.desc), p.site, p.op_id, p.cseq, p.t});
  std::stable_sort(out.begin(), out.end(), [](const Open& a, const Open& b) { return a.op_id < b.op_id; });
  return out;
}

std::vector<std::string> ProfilerJob::incomplete_comms() const {
  std::vector<std::string> out;
  for (const auto& [hash, c] : comms_) {
    if (static_cast<int>(c.members.size()) >= c.ranks) continue;
    std::string who;
    for (const auto& [crank, rank] : c.members) who += fmt::format("{}rank{}", who.empty() ? "" : ", ", rank);
    out.push_back(fmt::format("communicator '{}': {} of its {} members initialised it ({}); {} operations wait for the others", c.name,
                              c.members.size(), c.ranks, who, c.waiting.size()));
  }
  return out;
}

}  // namespace ppspec::traces
