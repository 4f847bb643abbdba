// ProfilerJob (traces/profiler_trace.h): a job's per-rank profiler traces as one event stream.
#include <fmt/format.h>

#include <algorithm>

#include "core/assert.h"
#include "core/error.h"
#include "traces/profiler_trace.h"

namespace ppspec::traces {

namespace {
// Lines one rank may hold while a peer or a member is unknown: beyond this the job is not waiting
// for a slow member or a group about to end; that member never came.
constexpr size_t kHeldMax = size_t{1} << 20;

bool is_held_kind(ProfilerLineKind k) {
  return k == ProfilerLineKind::op_posted || k == ProfilerLineKind::op_started || k == ProfilerLineKind::op_completed;
}
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

// Everything a line can be refused for that does not depend on what waits: checked before the
// line changes anything, so a refused line leaves the job as it was.
void ProfilerJob::check_line(const Source& s, size_t source, const ProfilerLine& l) const {
  if (s.ended) throw core::InputError(s.where, s.line, "a line after the trace's trailer");
  if ((l.kind == ProfilerLineKind::header) == s.has_header)
    throw core::InputError(s.where, s.line,
                           s.has_header ? "a second header" : "the first line must be the plugin's header");
  if (l.kind == ProfilerLineKind::header || l.kind == ProfilerLineKind::trailer ||
      l.kind == ProfilerLineKind::comm_init)
    return;
  if (!s.comm_rank.contains(l.comm))
    throw core::InputError(s.where, s.line, fmt::format("communicator {:016x} is used before its comm_init", l.comm));
  if (l.kind == ProfilerLineKind::lost) {
    const auto it = lost_.find({source, l.comm});
    if (it != lost_.end() && l.lost < it->second)
      throw core::InputError(s.where, s.line, "the count of lost records went down");
    return;
  }
  const OpKey key{source, l.comm, l.op};
  const bool fresh = l.kind == ProfilerLineKind::op_posted || l.kind == ProfilerLineKind::op_captured;
  if (fresh && numbers_.contains({source, l.comm}) && numbers_.at({source, l.comm}).used(l.op))
    throw core::InputError(s.where, s.line, fmt::format("operation {} is posted twice", l.op));
  if (l.replay_of && !captured_.contains({source, l.comm, *l.replay_of}))
    throw core::InputError(s.where, s.line,
                           fmt::format("a replay of operation {}, which was never captured", *l.replay_of));
  const auto waiting = s.held_ops.find({l.comm, l.op});
  const bool held = waiting != s.held_ops.end() && waiting->second.posted.has_value();
  // An operation's lines wait in order behind its post: nothing of it may follow its completion,
  // and it starts once (a line repeated or reordered by a writer, or by hand).
  const bool progresses = l.kind == ProfilerLineKind::op_started || l.kind == ProfilerLineKind::op_completed;
  if (progresses && waiting != s.held_ops.end() && waiting->second.completed)
    throw core::InputError(s.where, s.line,
                           fmt::format("operation {} {} after its completion: a line repeated or out of order", l.op,
                                       l.kind == ProfilerLineKind::op_started ? "starts" : "completes again"));
  if (l.kind == ProfilerLineKind::op_started && waiting != s.held_ops.end() && waiting->second.started)
    throw core::InputError(s.where, s.line, fmt::format("operation {} starts twice", l.op));
  if ((l.kind == ProfilerLineKind::op_peer || l.kind == ProfilerLineKind::op_started ||
       l.kind == ProfilerLineKind::op_completed) &&
      !held && !open_.contains(key) && !unmodelled_.contains(key))
    throw core::InputError(s.where, s.line,
                           fmt::format("operation {} is not open: never posted, or completed already", l.op));
  if (l.kind == ProfilerLineKind::op_peer && open_.contains(key))
    throw core::InputError(s.where, s.line, fmt::format("operation {} has its peer already", l.op));
  const auto comm = comms_.find(l.comm);
  if (l.kind != ProfilerLineKind::op_peer && l.peer >= 0 && comm != comms_.end() && l.peer >= comm->second.ranks)
    throw core::InputError(
        s.where, s.line,
        fmt::format("'{}' has {} members: no member {}", comm->second.name, comm->second.ranks, l.peer));
  if (s.held.size() >= kHeldMax)
    throw core::InputError(s.where, s.line,
                           fmt::format("{} lines wait for a peer or a member that never came", kHeldMax));
}

void ProfilerJob::add_line(size_t source, const std::string& text) {
  PPSPEC_ASSERT(source < sources_.size());
  Source& s = sources_[source];
  ++s.line;
  const ProfilerLine l = parse_profiler_line(text, s.where, s.line);
  check_line(s, source, l);
  switch (l.kind) {
    case ProfilerLineKind::header: on_header(s, l); return;
    case ProfilerLineKind::comm_init: on_comm_init(source, l); return;
    case ProfilerLineKind::lost: {
      uint64_t& before = lost_[{source, l.comm}];
      counts_.lost += l.lost - before;
      before = l.lost;
      return;
    }
    case ProfilerLineKind::trailer:
      s.ended = true;
      ++counts_.ended;
      counts_.disabled += l.disabled;
      return;
    case ProfilerLineKind::op_peer: on_peer(s, l); break;
    case ProfilerLineKind::group_ended: s.capturing.erase(l.group); return;
    case ProfilerLineKind::op_captured:
      // A capture takes no place in the order (its replays do): nothing waits for it.
      numbers_[{source, l.comm}].use(l.op);
      captured_.insert({source, l.comm, l.op});
      if (l.group >= 0) s.capturing.emplace(l.group, l);
      ++counts_.captured;
      return;
    case ProfilerLineKind::comm_finalized: return;
    case ProfilerLineKind::op_started:
    case ProfilerLineKind::op_completed:
      // The progress of an operation that went out goes out at once: only posts keep the rank's order.
      if (open_.contains({source, l.comm, l.op}) || unmodelled_.contains({source, l.comm, l.op})) {
        progress(source, l);
        return;
      }
      hold(s, l);
      break;
    default: numbers_[{source, l.comm}].use(l.op); hold(s, l);
  }
  release(source);
}

void ProfilerJob::on_header(Source& s, const ProfilerLine& l) {
  int rank = l.rank;
  if (rank < 0) {
    // No variable named the process's rank: the first job rank no trace has claimed.
    rank = 0;
    while (rank_source_.contains(rank)) ++rank;
  }
  if (auto at = rank_source_.find(rank); at != rank_source_.end())
    throw core::InputError(s.where, s.line,
                           fmt::format("rank {} is traced twice: here and in {}", rank, sources_[at->second].where));
  s.has_header = true;
  s.rank = rank;
  s.completions = l.completions;
  counts_.calls_only += !l.completions;
  rank_source_.emplace(rank, static_cast<size_t>(&s - sources_.data()));
}

void ProfilerJob::on_comm_init(size_t source, const ProfilerLine& l) {
  Source& s = sources_[source];
  if (s.comm_rank.contains(l.comm))
    throw core::InputError(s.where, s.line,
                           fmt::format("communicator {:016x} initialised twice by this rank (a process that drives "
                                       "several GPUs must name each thread's rank: ppspec_profiler_set_rank)",
                                       l.comm));
  const auto known = comms_.find(l.comm);
  if (known != comms_.end() && known->second.ranks != l.ranks)
    throw core::InputError(s.where, s.line,
                           fmt::format("communicator '{}' has {} members here and {} in another trace",
                                       known->second.name, l.ranks, known->second.ranks));
  if (known != comms_.end() && known->second.members.contains(l.comm_rank))
    throw core::InputError(
        s.where, s.line,
        fmt::format("communicator '{}': two ranks say they are its member {}", known->second.name, l.comm_rank));
  auto [it, fresh] = comms_.try_emplace(l.comm);
  Comm& c = it->second;
  if (fresh) {
    c.ranks = l.ranks;
    c.name = l.name.empty() ? fmt::format("{:016x}", l.comm) : l.name;
    // Two communicators of one name (PyTorch names split groups alike): the hash tells them apart.
    if (names_.contains(c.name)) c.name += fmt::format("#{:08x}", l.comm >> 32);
    names_.emplace(c.name, l.comm);
    ++counts_.comms;
  }
  s.comm_rank.emplace(l.comm, l.comm_rank);
  c.members.emplace(l.comm_rank, s.rank);
  core::Event e;
  e.t = rebase(l.t);
  e.kind = core::EventKind::comm_init;
  e.rank = s.rank;
  const std::string actor = fmt::format("rank{}.host", s.rank);
  e.actor = actor;
  e.comm = c.name;
  e.value = c.ranks;
  publish(e);
  // A member is known: what waited for its job rank goes out.
  release_all();
}

void ProfilerJob::on_peer(Source& s, const ProfilerLine& l) {
  const auto it = s.held_ops.find({l.comm, l.op});
  if (it != s.held_ops.end() && it->second.posted) {
    ProfilerLine& posted = s.held.at(*it->second.posted - s.held_released);
    if (posted.peer >= 0)
      throw core::InputError(s.where, s.line, fmt::format("operation {} has its peer already", l.op));
    posted.peer = l.peer;
    return;
  }
  // Not held and open (check_line): an operation of a kind ppspec does not model, whose peer is not checked.
}

void ProfilerJob::hold(Source& s, const ProfilerLine& l) {
  s.held.push_back(l);
  ++counts_.held;
  Source::HeldOp& op = s.held_ops[{l.comm, l.op}];
  ++op.lines;
  if (l.kind == ProfilerLineKind::op_posted) op.posted = s.held_released + s.held.size() - 1;
  op.started |= l.kind == ProfilerLineKind::op_started;
  op.completed |= l.kind == ProfilerLineKind::op_completed;
}

// Whether a rank's next line can go out: a send or recv once its peer is known, and whatever names
// another member (a peer, a root) once that member's comm_init told its job rank; the rest at once.
bool ProfilerJob::ready(const ProfilerLine& l) const {
  if (l.kind != ProfilerLineKind::op_posted) return true;
  const bool p2p = l.kind_of_op && core::is_p2p(*l.kind_of_op);
  if (p2p && l.peer < 0) return false;
  if (l.peer < 0) return true;
  const auto c = comms_.find(l.comm);
  return c != comms_.end() && c->second.members.contains(l.peer);
}

void ProfilerJob::release(size_t source) {
  Source& s = sources_[source];
  while (!s.held.empty() && ready(s.held.front())) {
    const ProfilerLine l = std::move(s.held.front());
    s.held.pop_front();
    ++s.held_released;
    --counts_.held;
    const auto op = s.held_ops.find({l.comm, l.op});
    PPSPEC_ASSERT(op != s.held_ops.end() && op->second.lines > 0, "a held line of operation {} unindexed", l.op);
    if (l.kind == ProfilerLineKind::op_posted) op->second.posted.reset();
    if (--op->second.lines == 0) s.held_ops.erase(op);
    apply(source, l);
  }
}

void ProfilerJob::release_all() {
  for (size_t i = 0; i < sources_.size(); ++i) release(i);
}

void ProfilerJob::apply(size_t source, const ProfilerLine& l) {
  PPSPEC_ASSERT(is_held_kind(l.kind));
  if (l.kind == ProfilerLineKind::op_posted)
    post(source, l);
  else
    progress(source, l);
}

}  // namespace ppspec::traces
