#include "verify/dumps/fr_waits.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <tuple>

#include "core/assert.h"
#include "core/finding_kinds.h"
#include "core/misalignment.h"
#include "verify/dumps/fr_anchors.h"
#include "verify/dumps/fr_dating.h"
#include "verify/dumps/fr_wait_graph.h"

namespace ppspec::verify {
namespace {

using traces::FrState;

// Where a path of waits ends.
struct Sink {
  enum class Kind : uint8_t { idle, no_dump, lost, unplaced, dropped, unheld, aligned, outside } kind = Kind::aligned;
  int rank = -1;         // idle, no_dump, unplaced, unheld: the rank waited for; outside: the rank stuck
  size_t op = kNoStuck;  // the last stuck operation on the path
};

// What identifies the cause: the kind, the rank, and the operation awaited or stuck at (a rank
// without a dump is one cause however many of its calls are awaited).
std::tuple<int, int, size_t, int64_t, int> key_of(const WaitGraph& g, const Sink& s) {
  PPSPEC_ASSERT(s.op < g.stuck.size(), "a sink at operation {} of {}", s.op, g.stuck.size());
  if (s.kind == Sink::Kind::no_dump) return {static_cast<int>(s.kind), s.rank, 0, 0, -1};
  if (s.kind == Sink::Kind::dropped)
    return {static_cast<int>(s.kind), -1, 0, 0, -1};  // one unknown, however many rings
  const FrOp& op = *g.stuck[s.op].op;
  const int peer = op.entry->is_p2p ? std::min(op.dump->rank, op.entry->peer) : -1;
  return {static_cast<int>(s.kind), s.kind == Sink::Kind::aligned ? -1 : s.rank, op.group, op.position, peer};
}

// Where a rank's host may be blocked inside a call (NCCL keeps it there while a communicator is made
// or first connected, until its peers call too): its last call, at such a place. Empty otherwise: a
// rank that never posted a counterpart and could have is where waits end, not a link of a cycle.
std::vector<size_t> host_blocked(const WaitGraph& g, int rank) {
  std::vector<size_t> out;
  const auto it = g.by_rank.find(rank);
  if (it == g.by_rank.end()) return out;
  for (size_t j : it->second)
    if (g.stuck[j].in_call) out.push_back(j);
  return out;
}

// The operations a stuck one waits on, in the graph: its blocker, or its partners' stuck operations.
std::vector<size_t> successors(const WaitGraph& g, size_t i) {
  const Stuck& s = g.stuck[i];
  if (!s.running) return s.blocker == kNoStuck ? std::vector<size_t>{} : std::vector<size_t>{s.blocker};
  std::vector<size_t> out;
  // Waits for a counterpart that was posted, or for a rank whose host may still be inside its last
  // call (blocked there: it could not post the counterpart). A rank whose host went on and never
  // posted the counterpart is where the waits end (an unmatched operation), not a link of a cycle.
  for (const Wait& w : g.waits[i]) {
    if (w.kind == Wait::Kind::queued || w.kind == Wait::Kind::group_mate) out.push_back(w.target);
    if (w.kind == Wait::Kind::not_posted)
      for (size_t j : host_blocked(g, w.rank)) out.push_back(j);
  }
  PPSPEC_ASSERT(std::all_of(out.begin(), out.end(), [&g](size_t j) { return j < g.stuck.size(); }));
  return out;
}

bool spans_ranks(const WaitGraph& g, const std::vector<size_t>& cycle) {
  return std::any_of(cycle.begin(), cycle.end(),
                     [&](size_t i) { return g.stuck[i].rank != g.stuck[cycle.front()].rank; });
}

// The first cycle of waits across ranks, as stuck operations in order; empty when there is none.
std::vector<size_t> find_cycle(const WaitGraph& g) {
  std::vector<uint8_t> color(g.stuck.size(), 0);  // 0 unseen, 1 on the path, 2 done
  for (size_t root = 0; root < g.stuck.size(); ++root) {
    if (color[root] != 0) continue;
    std::vector<std::pair<size_t, std::vector<size_t>>> path;  // node, successors left
    path.push_back({root, successors(g, root)});
    color[root] = 1;
    while (!path.empty()) {
      auto& [node, left] = path.back();
      if (left.empty()) {
        color[node] = 2;
        path.pop_back();
        continue;
      }
      const size_t next = left.front();
      left.erase(left.begin());
      if (color[next] == 1) {
        std::vector<size_t> cycle;
        size_t k = path.size();
        while (k-- > 0 && path[k].first != next) {}
        PPSPEC_ASSERT(k < path.size(), "operation {} is on the path and not found there", next);
        for (size_t j = k; j < path.size(); ++j) cycle.push_back(path[j].first);
        // Waits that close within one rank (a coalesced group's members) are no deadlock across ranks.
        if (spans_ranks(g, cycle)) return cycle;
        continue;
      }
      if (color[next] == 0) {
        color[next] = 1;
        path.push_back({next, successors(g, next)});
      }
    }
  }
  return {};
}

// Where the waits from `i` end (the graph has no cycle): a rank that never posts first, then one
// without a dump, else the first partner's path; an operation nobody holds up is a stall.
Sink follow(const WaitGraph& g, size_t i) {
  PPSPEC_ASSERT(i < g.stuck.size());
  for (size_t steps = 0; steps <= g.stuck.size(); ++steps) {
    const Stuck& s = g.stuck[i];
    if (!s.running) {
      if (s.behind_dropped) return Sink{Sink::Kind::dropped, s.rank, i};
      if (s.blocker == kNoStuck) return Sink{Sink::Kind::outside, s.rank, i};
      i = s.blocker;
      continue;
    }
    for (const Wait& w : g.waits[i]) {
      if (w.kind == Wait::Kind::not_posted && host_blocked(g, w.rank).empty()) return Sink{Sink::Kind::idle, w.rank, i};
      if (w.kind == Wait::Kind::no_dump) return Sink{Sink::Kind::no_dump, w.rank, i};
      if (w.kind == Wait::Kind::unplaced) return Sink{Sink::Kind::unplaced, w.rank, i};
      if (w.kind == Wait::Kind::unheld) return Sink{Sink::Kind::unheld, w.rank, i};
      // A receive whose send completed at the pair's first contact: the data did not come.
      if (w.kind == Wait::Kind::paired_elsewhere && s.op->entry->kind == traces::FrKind::recv && s.op->position == 0)
        return Sink{Sink::Kind::lost, w.rank, i};
    }
    const std::vector<size_t> next = successors(g, i);
    if (next.empty()) return Sink{Sink::Kind::aligned, s.rank, i};
    i = next.front();
  }
  return Sink{Sink::Kind::aligned, g.stuck[i].rank, i};
}

core::Site site_of(const WaitGraph& g, size_t i) {
  PPSPEC_ASSERT(i < g.stuck.size());
  const FrOp& op = *g.stuck[i].op;
  const traces::FrEntry& e = *op.entry;
  return core::Site{op.dump->rank,
                    fmt::format("rank{}", op.dump->rank),
                    g.job.groups[op.group].label(),
                    e.is_p2p ? e.p2p_seq_id : e.collective_seq_id,
                    fmt::format("{} ({})", describe(e), to_string(op.state)),
                    origin_of(op)};
}

core::Finding cycle_finding(const WaitGraph& g, const std::vector<size_t>& cycle) {
  PPSPEC_ASSERT(!cycle.empty());
  core::Finding f;
  f.verdict = core::Verdict::deadlock;
  f.kind = core::FindingKind::cycle;
  f.time = core::kNoTime;
  f.culprit.what = core::Blame::cycle;
  std::vector<std::string> steps;
  for (size_t k = 0; k < cycle.size(); ++k) {
    const size_t i = cycle[k], next = cycle[(k + 1) % cycle.size()];
    const Stuck& s = g.stuck[i];
    if (!s.running) continue;
    const Stuck& t = g.stuck[next];
    if (t.rank == s.rank) continue;  // within its own coalesced group
    steps.push_back(fmt::format("rank {} waits at {} for rank {}", s.rank, g.op_words(i), t.rank));
    const bool unposted = std::any_of(g.waits[i].begin(), g.waits[i].end(), [&](const Wait& w) {
      return w.kind == Wait::Kind::not_posted && w.rank == t.rank;
    });
    f.sites.push_back(site_of(g, i));
    if (unposted || t.running) f.sites.back().wait = core::SiteWait::counterpart_unposted;
    const std::string held = unposted
                                 ? fmt::format(
                                       "has not posted its counterpart: its host is still inside its last call, {}, "
                                       "where NCCL makes or connects a communicator",
                                       g.op_words(next))
                             : t.running ? "has not posted its counterpart"
                                         : fmt::format("posted its counterpart, queued behind its {}",
                                                       t.blocker == kNoStuck ? "earlier work" : g.op_words(t.blocker));
    f.details.push_back(fmt::format("rank {}'s {} ({}) waits for rank {}, which {}", s.rank, g.op_words(i),
                                    to_string(s.op->state), t.rank, held));
  }
  const bool all_posted = std::none_of(cycle.begin(), cycle.end(), [&](size_t i) {
    return std::any_of(g.waits[i].begin(), g.waits[i].end(),
                       [](const Wait& w) { return w.kind == Wait::Kind::not_posted; });
  });
  f.summary = fmt::format(
      "a deadlock across process groups: {}: no group's or channel's sequence disagrees{}, but the ranks wait for "
      "each other in a cycle",
      fmt::join(steps, ", "), all_posted ? " and every counterpart was posted" : "");
  return f;
}

std::string rank_words(std::vector<int> ranks) {
  return core::rank_list(std::vector<core::RankId>(ranks.begin(), ranks.end()));
}

// The operation the waiting one pairs with, in words: what the rank waited for never posted.
std::string awaited(const WaitGraph& g, size_t waiting) {
  const FrOp& op = *g.stuck[waiting].op;
  const traces::FrEntry& e = *op.entry;
  const std::string group = g.job.groups[op.group].label();
  if (e.is_p2p)
    return fmt::format("the {} that pairs with rank {}'s {} #{} on {} ({}, p2p_seq_id {})",
                       e.kind == traces::FrKind::send ? "receive" : "send", op.dump->rank, e.op, op.position + 1, group,
                       describe(e, false), e.p2p_seq_id);
  return fmt::format("{} collective_seq_id {} ({})", group, e.collective_seq_id, describe(op));
}

// What the counterpart of a p2p operation is: "receive" for a send.
const char* send_or_receive(const traces::FrEntry& e) { return e.kind == traces::FrKind::send ? "receive" : "send"; }

// What the idle rank did post where the others wait: how many, and whether all completed.
std::string posted_there(const WaitGraph& g, int rank, size_t waiting) {
  const FrOp& op = *g.stuck[waiting].op;
  const traces::FrEntry& e = *op.entry;
  const auto stuck = g.by_rank.find(rank);
  const std::string where = stuck == g.by_rank.end()
                                ? "all of its completed"
                                : fmt::format("and it is itself stuck at {}", g.op_words(g.where(rank).front()));
  if (e.is_p2p) {
    for (const FrChannel& c : g.job.channels) {
      const bool send = e.kind == traces::FrKind::send;
      if (c.group != op.group || c.src != (send ? op.dump->rank : e.peer) || c.dst != (send ? e.peer : op.dump->rank))
        continue;
      const size_t theirs = send ? c.recvs.size() : c.sends.size(), mine = send ? c.sends.size() : c.recvs.size();
      return fmt::format("rank {} posted {} {} {} rank {} where rank {} posted {}, {}", rank, theirs,
                         send ? "receives" : "sends", send ? "from" : "to", op.dump->rank, op.dump->rank, mine, where);
    }
    return fmt::format("rank {} never posted a {} {} rank {} on {}, {}", rank, send_or_receive(e),
                       e.kind == traces::FrKind::send ? "from" : "to", op.dump->rank, g.job.groups[op.group].label(),
                       where);
  }
  const FrJobGroup& grp = g.job.groups[op.group];
  const size_t m = static_cast<size_t>(std::find(grp.ranks.begin(), grp.ranks.end(), rank) - grp.ranks.begin());
  PPSPEC_ASSERT(m < grp.lanes.size(), "rank {} waited for on {}, not a member", rank, grp.label());
  const size_t n = grp.lanes[m].size();
  if (n == 0)
    return fmt::format("rank {} never posted on {}, of which it is a member by the group table", rank, grp.label());
  return fmt::format("rank {} posted {} collective(s) on {} (the last collective_seq_id {}), {}", rank, n, grp.label(),
                     grp.lanes[m].back().entry->collective_seq_id, stuck == g.by_rank.end() ? "all completed" : where);
}

// Whether rank `r` has a stuck operation at the same place as `op` (its group and position, or its
// p2p channel's pair and position).
bool stuck_at_same(const WaitGraph& g, int r, const FrOp& op) {
  const auto it = g.by_rank.find(r);
  if (it == g.by_rank.end()) return false;
  for (size_t i : it->second) {
    const FrOp& mine = *g.stuck[i].op;
    if (mine.group != op.group || mine.position != op.position || mine.entry->is_p2p != op.entry->is_p2p) continue;
    if (!op.entry->is_p2p || (mine.dump->rank == op.dump->rank && mine.entry->peer == op.entry->peer) ||
        (mine.dump->rank == op.entry->peer && mine.entry->peer == op.dump->rank))
      return true;
  }
  return false;
}

core::Finding idle_finding(const WaitGraph& g, const Sink& s, const std::vector<int>& waiting_ranks,
                           const FrDating& dating) {
  core::Finding f;
  f.verdict = core::Verdict::fifo_misalignment;
  f.kind = core::FindingKind::unmatched;
  f.time = core::kNoTime;
  PPSPEC_ASSERT(s.kind == Sink::Kind::idle && !waiting_ranks.empty());
  const FrOp& op = *g.stuck[s.op].op;
  const bool p2p = op.entry->is_p2p;
  f.summary = fmt::format(
      "rank {} never posted {}, where {} wait{}: {} — a skipped call (or the waiting side posted one too many: "
      "equal operations cannot tell which), or a rank that stopped before it",
      s.rank, awaited(g, s.op), rank_words(waiting_ranks), waiting_ranks.size() == 1 ? "s" : "",
      posted_there(g, s.rank, s.op));
  f.sites.push_back(core::Site{s.rank, fmt::format("rank{}", s.rank), g.job.groups[op.group].label(), -1,
                               "never posts the counterpart", ""});
  f.sites.push_back(site_of(g, s.op));
  f.culprit = core::Culprit{s.rank,      g.job.groups[op.group].name, p2p, p2p ? op.dump->rank : -1,
                            op.position, core::Blame::never_posted};
  // A dump of the idle rank that ends before the wait began cannot show a call made since: taken
  // moments apart while the job ran, the dumps look so too.
  if (g.job.by_rank.count(s.rank) && dating.taken_before(s.rank, op)) {
    f.summary += fmt::format(
        "; or not yet: rank {}'s dump records nothing after rank {} posted this, so it may have been taken before "
        "rank {} got there",
        s.rank, op.dump->rank, s.rank);
    f.culprit.rank = -1;
  }
  if (p2p) {
    for (const FrChannel& c : g.job.channels)
      if (c.group == op.group && (c.src == op.dump->rank || c.dst == op.dump->rank) &&
          (c.src == s.rank || c.dst == s.rank))
        if (const auto where = locate_skipped_p2p(g.job, c)) f.details.push_back(*where);
  }
  return f;
}

// Where a wrapped ring leaves the dumps without an answer: a channel's sides not aligned, rings that
// hold none of their ranks' completed calls, a partner's ring that holds none of its calls there.
void ring_words(const WaitGraph& g, const Sink& s, const std::vector<int>& ranks, core::Finding& f) {
  const FrOp& op = *g.stuck[s.op].op;
  const char* verb = ranks.size() == 1 ? "s" : "";
  f.kind = core::FindingKind::stalled;
  if (s.kind == Sink::Kind::unplaced) {
    f.summary = fmt::format(
        "{}'s {} does not complete, and where its counterpart stands on rank {}'s side is unknown: a ring that "
        "wrapped dropped p2p calls that follow no pattern, so the channel's sides cannot be aligned; whether rank "
        "{} posted the counterpart, the dumps cannot say",
        rank_words(ranks), g.op_words(s.op), s.rank, s.rank);
    return;
  }
  f.culprit = core::Culprit{-1, g.job.groups[op.group].name, op.entry->is_p2p, -1, op.position, core::Blame::dropped};
  if (s.kind == Sink::Kind::unheld) {
    f.summary = fmt::format(
        "{} wait{} at {} for rank {}, whose ring dropped its first {} records and holds none of its calls there "
        "(TORCH_FR_BUFFER_SIZE keeps more): whether rank {} posted the counterpart, the dumps cannot say",
        rank_words(ranks), verb, g.op_words(s.op), s.rank, g.job.dropped.at(s.rank), s.rank);
    return;
  }
  PPSPEC_ASSERT(s.kind == Sink::Kind::dropped);
  std::vector<int> blind;  // every rank whose ring holds none of its completed calls
  for (const auto& [rank, ops] : g.by_rank)
    if (!ops.empty() && g.stuck[ops.front()].behind_dropped) blind.push_back(rank);
  if (blind.size() <= 1)
    f.summary = fmt::format(
        "rank {}'s ring holds none of its completed calls: what its first call held, {}, waits behind was dropped "
        "(TORCH_FR_BUFFER_SIZE keeps more), so where rank {} is stuck the dumps cannot say; {} wait{} on it",
        s.rank, g.op_words(s.op), s.rank, rank_words(ranks), verb);
  else
    f.summary = fmt::format(
        "the rings of {} hold none of their completed calls (rank {}'s first held: {}): what their first calls "
        "wait behind was dropped (TORCH_FR_BUFFER_SIZE keeps more), so where they are stuck the dumps cannot say; "
        "{} wait{} on them",
        rank_words(blind), s.rank, g.op_words(s.op), rank_words(ranks), verb);
}

core::Finding sink_finding(const WaitGraph& g, const Sink& s, const std::vector<int>& ranks, const FrDating& dating) {
  if (s.kind == Sink::Kind::idle) return idle_finding(g, s, ranks, dating);
  core::Finding f;
  f.verdict = core::Verdict::hang;
  f.time = core::kNoTime;
  f.sites.push_back(site_of(g, s.op));
  const FrOp& op = *g.stuck[s.op].op;
  if (s.kind == Sink::Kind::no_dump) {
    f.kind = core::FindingKind::missing_dump;
    f.summary = fmt::format(
        "no dump of rank {}, which {} wait{} for ({}): a rank that did not dump is often the one that hung — the "
        "first suspect",
        s.rank, rank_words(ranks), ranks.size() == 1 ? "s" : "", awaited(g, s.op));
    f.culprit =
        core::Culprit{s.rank, g.job.groups[op.group].name, op.entry->is_p2p, -1, op.position, core::Blame::no_dump};
  } else if (s.kind == Sink::Kind::lost) {
    f.kind = core::FindingKind::stalled;
    f.summary = fmt::format(
        "rank {}'s {} waits for data that rank {}'s send, which pairs with it by position, already completed with: "
        "the data never arrived — NCCL set the pair's connection up wrongly at first contact (an ungrouped send "
        "and receive between the two at their first use: both sends complete, both receives hang), or the send "
        "carried fewer elements than the receive expects",
        g.stuck[s.op].rank, g.op_words(s.op), s.rank);
    f.culprit =
        core::Culprit{g.stuck[s.op].rank, g.job.groups[op.group].name, true, s.rank, op.position, core::Blame::stalled};
  } else if (s.kind == Sink::Kind::unplaced || s.kind == Sink::Kind::dropped || s.kind == Sink::Kind::unheld) {
    ring_words(g, s, ranks, f);
  } else if (s.kind == Sink::Kind::outside) {
    f.kind = core::FindingKind::stalled;
    f.summary = fmt::format(
        "rank {}'s {} never started, and none of its communication before it is stuck: its stream waits for "
        "something outside communication (a kernel that does not finish, an event never recorded); {} wait{} "
        "behind it",
        s.rank, g.op_words(s.op), rank_words(ranks), ranks.size() == 1 ? "s" : "");
    f.culprit =
        core::Culprit{s.rank, g.job.groups[op.group].name, op.entry->is_p2p, -1, op.position, core::Blame::stalled};
  } else {
    f.kind = core::FindingKind::stalled;
    // The ranks whose own operation is the one that does not complete, and those who wait on them.
    const FrOp& stuck = *g.stuck[s.op].op;
    std::vector<int> at, behind;
    for (int r : ranks) (stuck_at_same(g, r, stuck) ? at : behind).push_back(r);
    f.summary = fmt::format(
        "a hang no misalignment explains: {} at {}, which every member posted, and it does not complete — the "
        "cause lies outside the communication order (a kernel or a host thread that does not progress, or the "
        "network){}",
        at.empty() ? fmt::format("rank {} is", stuck.dump->rank)
                   : fmt::format("{} {}", rank_words(at), at.size() == 1 ? "is" : "are"),
        g.op_words(s.op),
        behind.empty() ? ""
                       : fmt::format("; {} wait{} behind {}", rank_words(behind), behind.size() == 1 ? "s" : "",
                                     at.size() > 1 ? "them" : "it"));
  }
  PPSPEC_ASSERT(f.kind != core::FindingKind::none && !f.summary.empty());
  return f;
}

// How old the stuck operations are where a stall's waits end (the sink's and each waiting rank's
// first), as the dumps date them: any past its timeout is a stall; all young is a job in flight.
FrAge stall_age(const WaitGraph& g, const Sink& s, const std::vector<int>& ranks, const FrDating& dating) {
  std::vector<size_t> ops{s.op};
  for (int r : ranks) ops.push_back(g.where(r).front());
  bool all_young = true;
  for (size_t i : ops) {
    const FrAge a = dating.age(*g.stuck[i].op);
    if (a == FrAge::timed_out) return FrAge::timed_out;
    all_young = all_young && a == FrAge::young;
  }
  return all_young ? FrAge::young : FrAge::undated;
}

bool is_stall(Sink::Kind k) { return k == Sink::Kind::aligned || k == Sink::Kind::outside || k == Sink::Kind::lost; }

// A stall's finding dated: certain when an operation is past its timeout; otherwise it says the
// dumps cannot tell a slow job from a stalled one.
void date_stall(core::Finding& f, const WaitGraph& g, const Sink& s, FrAge age, const FrDating& dating) {
  const std::string words = dating.words(*g.stuck[s.op].op);
  if (age == FrAge::timed_out) {
    f.details.insert(f.details.begin(), fmt::format("stalled, not slow: {}", words));
    return;
  }
  f.summary += "; or the job was still running: the dumps cannot tell a slow job from a stalled one here";
  f.culprit.what = core::Blame::undated;
  f.details.insert(f.details.begin(), fmt::format("not dated: {}", words));
}

// A job in flight where a stall's waits end: every operation there younger than its timeout in a
// dump that says when it was written. No fault: a note.
core::Finding in_flight_note(const WaitGraph& g, const Sink& s, const std::vector<int>& ranks, const FrDating& dating) {
  core::Finding n;
  n.verdict = core::Verdict::pass;
  n.kind = core::FindingKind::in_flight;
  n.time = core::kNoTime;
  const std::string posted = s.kind == Sink::Kind::idle
                                 ? fmt::format(", whose counterpart rank {} had not posted yet", s.rank)
                                 : ", which every member posted";
  n.summary = fmt::format(
      "in flight, no fault found: {} {} at {}{} when the dumps were taken — {}; whether it completed, the dumps "
      "cannot say",
      rank_words(ranks), ranks.size() == 1 ? "was" : "were", g.op_words(s.op), posted, dating.words(*g.stuck[s.op].op));
  return n;
}

std::string wait_words(const WaitGraph& g, size_t i) {
  const Stuck& s = g.stuck[i];
  if (s.behind_dropped) return "behind what its ring dropped (it holds none of its completed calls)";
  if (!s.running)
    return s.blocker == kNoStuck ? "not started, behind no stuck communication"
                                 : "queued behind " + g.op_words(s.blocker);
  std::vector<std::string> parts;
  for (const Wait& w : g.waits[i]) {
    if (parts.size() == 4) break;
    parts.push_back(w.kind == Wait::Kind::no_dump      ? fmt::format("rank {} (no dump)", w.rank)
                    : w.kind == Wait::Kind::not_posted ? fmt::format("rank {} (has not posted it)", w.rank)
                    : w.kind == Wait::Kind::paired_elsewhere
                        ? fmt::format("rank {} (its counterpart completed, paired with another operation)", w.rank)
                    : w.kind == Wait::Kind::group_mate
                        ? fmt::format("the rest of its coalesced group ({})", g.op_words(w.target))
                        : fmt::format("rank {} (its counterpart is queued)", w.rank));
  }
  PPSPEC_ASSERT(parts.size() <= 4);
  return parts.empty() ? "every partner is at it too" : fmt::format("waits on {}", fmt::join(parts, ", "));
}

std::vector<std::string> frontier_lines(const WaitGraph& g) {
  std::vector<std::string> lines;
  for (const traces::FrDump* d : g.job.dumps) {
    const auto it = g.by_rank.find(d->rank);
    const size_t total = d->entries.size();
    if (it == g.by_rank.end()) {
      lines.push_back(fmt::format("rank {}: all {} operations completed", d->rank, total));
      continue;
    }
    PPSPEC_ASSERT(!it->second.empty() && it->second.size() <= total, "rank {}: {} stuck of {}", d->rank,
                  it->second.size(), total);
    const size_t first = it->second.front();
    lines.push_back(fmt::format(
        "rank {}: {} of {} operations completed; stuck from {}, {}, with {} more not completed after it; {}", d->rank,
        total - it->second.size(), total, g.op_words(first), to_string(g.stuck[first].op->state), it->second.size() - 1,
        wait_words(g, first)));
  }
  return lines;
}

}  // namespace

FrWaitFindings check_waits(const FrJob& job, FrCalls calls) {
  FrWaitFindings out;
  if (!job.progress) return out;  // states that never change tell no hang (Gloo): the caller says so
  const WaitGraph g(job, calls);
  out.frontiers = frontier_lines(g);
  out.stuck_ranks = g.by_rank.size();
  if (g.stuck.empty()) return out;
  if (const std::vector<size_t> cycle = find_cycle(g); !cycle.empty()) {
    out.findings.push_back(cycle_finding(g, cycle));
    return out;
  }
  // One finding per place the waits end, naming every rank whose waits end there.
  std::map<std::tuple<int, int, size_t, int64_t, int>, std::pair<Sink, std::vector<int>>> sinks;
  for (const auto& [rank, ops] : g.by_rank)
    for (size_t i : g.where(rank)) {
      const Sink s = follow(g, i);
      auto& [sink, ranks] = sinks.try_emplace(key_of(g, s), s, std::vector<int>{}).first->second;
      if (std::find(ranks.begin(), ranks.end(), rank) == ranks.end()) ranks.push_back(rank);
    }
  // Stalls the dumps date as a job in flight are no fault.
  const FrDating dating(job);
  std::map<std::tuple<int, int, size_t, int64_t, int>, FrAge> ages;
  for (auto it = sinks.begin(); it != sinks.end();) {
    const auto& [sink, ranks] = it->second;
    // A counterpart not posted yet, in dumps that say they were taken soon after the wait began, is
    // a job in flight too (its ranks' dumps are taken moments apart).
    if (!is_stall(sink.kind) && !(sink.kind == Sink::Kind::idle && stall_age(g, sink, ranks, dating) == FrAge::young)) {
      ++it;
      continue;
    }
    const FrAge age = stall_age(g, sink, ranks, dating);
    if (age != FrAge::young) {
      ages[it->first] = age;
      ++it;
      continue;
    }
    out.notes.push_back(in_flight_note(g, sink, ranks, dating));
    it = sinks.erase(it);
  }
  if (sinks.empty()) return out;
  // A missing send first: a receive cannot complete without it, where a small send may complete
  // without its receive (eagerly) and wait only for the rest of its group.
  std::vector<const std::pair<Sink, std::vector<int>>*> ordered;
  for (const auto& [key, value] : sinks) ordered.push_back(&value);
  std::stable_sort(ordered.begin(), ordered.end(), [&](const auto* a, const auto* b) {
    auto rank = [&](const Sink& s) {
      return std::pair{static_cast<int>(s.kind), g.stuck[s.op].op->entry->kind == traces::FrKind::send};
    };
    return rank(a->first) < rank(b->first);
  });
  for (const auto* value : ordered) {
    out.findings.push_back(sink_finding(g, value->first, value->second, dating));
    if (is_stall(value->first.kind))
      date_stall(out.findings.back(), g, value->first, ages.at(key_of(g, value->first)), dating);
  }
  // A cause that explains every stuck rank is the one to read first.
  if (out.findings.size() > 1)
    std::stable_sort(out.findings.begin(), out.findings.end(), [](const core::Finding& a, const core::Finding& b) {
      return a.verdict == core::Verdict::fifo_misalignment && b.verdict != core::Verdict::fifo_misalignment;
    });
  PPSPEC_ASSERT(!sinks.empty() && out.findings.size() == sinks.size(), "stuck operations whose waits end nowhere");
  if (sinks.size() == 1 && g.by_rank.size() > 1)
    out.findings.front().details.insert(out.findings.front().details.begin(),
                                        fmt::format("this explains every stuck rank ({} of them)", g.by_rank.size()));
  return out;
}

}  // namespace ppspec::verify
