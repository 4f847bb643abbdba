#include "verify/dumps/fr_sequences.h"

#include "verify/dumps/fr_dating.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <optional>
#include <span>

#include "core/assert.h"
#include "core/finding_kinds.h"
#include "core/misalignment.h"
#include "core/sequence_cause.h"
#include "verify/dumps/fr_anchors.h"
#include "verify/dumps/fr_dating.h"

namespace ppspec::verify {
namespace {

// Operations as ids: two operations pair without a mismatch exactly when their ids are equal.
class IdLanes final : public core::Sequences {
 public:
  std::vector<std::vector<uint32_t>> ids;
  size_t lanes() const override { return ids.size(); }
  size_t length(size_t lane) const override { return ids[lane].size(); }
  bool same(size_t a, size_t x, size_t b, size_t y) const override { return ids[a][x] == ids[b][y]; }
};

class Interner {
 public:
  uint32_t of(const std::string& s) { return ids_.try_emplace(s, static_cast<uint32_t>(ids_.size())).first->second; }

 private:
  std::map<std::string, uint32_t> ids_;
};

// One member's operations, from where they are compared.
struct Lane {
  int rank = -1;
  std::span<const FrOp> ops;
  const FrOp* at(size_t k) const { return k < ops.size() ? &ops[k] : nullptr; }
};

core::Site site_of(const Lane& lane, size_t k, const std::string& comm, bool p2p, const char* none) {
  const FrOp* op = lane.at(k);
  if (op == nullptr) return core::Site{lane.rank, fmt::format("rank{}", lane.rank), comm, -1, none, ""};
  const traces::FrEntry& e = *op->entry;
  return core::Site{lane.rank,
                    fmt::format("rank{}", lane.rank),
                    comm,
                    p2p ? e.p2p_seq_id : e.collective_seq_id,
                    fmt::format("{} ({})", describe(*op), to_string(op->state)),
                    origin_of(*op)};
}

std::string op_words(const Lane& lane, size_t k) {
  const FrOp* op = lane.at(k);
  return op == nullptr ? "nothing" : describe(*op);
}

// The 1-based place on its channel of a lane's k-th operation (the next after its last, past the end).
int64_t place(const Lane& lane, size_t k) {
  if (lane.ops.empty()) return static_cast<int64_t>(k) + 1;
  return lane.ops.front().position + static_cast<int64_t>(k) + 1;
}

// Later positions where the members differ when read by position alone: what PyTorch's analyzer
// reports one by one, each a consequence of this cause.
size_t cascade(const IdLanes& s, const std::vector<size_t>& at) {
  PPSPEC_ASSERT(s.lanes() >= 2 && at.size() == s.lanes(), "a cascade over {} lanes from {} positions", s.lanes(),
                at.size());
  size_t n = 0;
  for (size_t t = 1;; ++t) {
    bool any = false, differ = false;
    for (size_t i = 0; i < s.lanes(); ++i) {
      if (at[i] + t >= s.length(i)) {
        differ = true;
        continue;
      }
      any = true;
      differ = differ || (at[0] + t < s.length(0) && !s.same(0, at[0] + t, i, at[i] + t));
    }
    if (!any) return n;
    n += differ ? 1 : 0;
  }
}

// Without labels, an operation posted twice in a row is as often a skipped one on the other side (a
// job repeats its shapes step after step): where nothing else tells, it is no culprit.
void distrust_repeat(core::SequenceCause& c) {
  if (c.evidence != "the same operation twice in a row" || c.culprits.size() != 1) return;
  if (c.kind == core::CauseKind::differs) {  // two operations at one place: which is wrong, nothing tells
    c.culprits.clear();
    c.evidence.clear();
    return;
  }
  if (c.kind != core::CauseKind::extra) return;
  c.kind = core::CauseKind::shifted;
  c.ahead = c.culprits;
  c.culprits.clear();
  c.evidence.clear();
}

// What the cause blames, in the communicator's numbering.
core::Culprit culprit_at(const std::vector<Lane>& lanes, const core::SequenceCause& c, const std::string& comm,
                         bool p2p) {
  std::vector<core::RankId> ranks;
  std::vector<int64_t> positions;
  PPSPEC_ASSERT(c.at.size() == lanes.size(), "a cause at {} positions of {} lanes", c.at.size(), lanes.size());
  for (size_t i = 0; i < lanes.size(); ++i) {
    ranks.push_back(lanes[i].rank);
    positions.push_back(lanes[i].at(c.at[i]) ? lanes[i].at(c.at[i])->position : -1);
  }
  return core::culprit_of(c, ranks, positions, comm, p2p);
}

void add_caller(core::Finding& f, const Lane& lane, size_t k) {
  const FrOp* op = lane.at(k);
  if (op == nullptr) return;
  const traces::FrEntry& first = op->composite() ? op->dump->entries.at(op->members.front()) : *op->entry;
  const std::vector<std::string> frames = user_frames(first, 3);
  if (!frames.empty())
    f.details.push_back(
        fmt::format("rank {}'s call: {} from {}", lane.rank, op->entry->op, fmt::join(frames, ", from ")));
}

std::string culprit_summary(const core::SequenceCause& c, const std::vector<Lane>& lanes, const std::string& group) {
  PPSPEC_ASSERT(!lanes.empty() && c.at.size() == lanes.size() &&
                (c.culprits.empty() || c.culprits.front() < lanes.size()));
  const Lane& l = lanes[c.culprits.empty() ? 0 : c.culprits.front()];
  const size_t k = c.at[c.culprits.empty() ? 0 : c.culprits.front()];
  const std::string why = c.evidence.empty() ? "" : fmt::format(" — {}", c.evidence);
  std::vector<std::string> others;
  for (size_t i = 0; i < lanes.size() && others.size() < 4; ++i)
    if (std::find(c.culprits.begin(), c.culprits.end(), i) == c.culprits.end())
      others.push_back(fmt::format("rank {} posts {}", lanes[i].rank, op_words(lanes[i], c.at[i])));
  const std::string seq = l.at(k) ? fmt::format("{}", l.at(k)->entry->collective_seq_id) : "?";
  switch (c.kind) {
    case core::CauseKind::extra:
      return fmt::format(
          "rank {} posts an extra {} on {} (its collective_seq_id {}){}: no other member posts it, so every later "
          "collective of the group pairs with the wrong one",
          l.rank, op_words(l, k), group, seq, why);
    case core::CauseKind::missing:
      return fmt::format(
          "rank {} skipped a collective on {}: at collective_seq_id {} it posts {} where {}{}; every later collective "
          "of the group pairs with the wrong one",
          l.rank, group, seq, op_words(l, k), fmt::join(others, ", "), why);
    default:
      if (c.evidence == "the same operation twice in a row" && k > 0)
        return fmt::format(
            "{} collective_seq_id {}: rank {} posts {} twice in a row (collective_seq_id {} and {}) where {}: a double "
            "post",
            group, seq, l.rank, op_words(l, k), l.at(k - 1)->entry->collective_seq_id, seq, fmt::join(others, ", "));
      return fmt::format("{} collective_seq_id {}: rank {} posts {} where {}{}", group, seq, l.rank, op_words(l, k),
                         fmt::join(others, ", "), why);
  }
}

core::Finding collective_finding(const FrJobGroup& g, const std::vector<Lane>& lanes, const IdLanes& ids,
                                 const core::SequenceCause& c) {
  core::Finding f;
  f.verdict = core::Verdict::fifo_misalignment;
  f.kind = core::FindingKind::collective_mismatch;
  f.time = core::kNoTime;
  const std::string group = g.label();
  std::vector<std::string> posts;
  for (size_t i = 0; i < lanes.size() && posts.size() < core::kFindingListMax; ++i)
    posts.push_back(fmt::format("rank {} posts {}", lanes[i].rank, op_words(lanes[i], c.at[i])));
  PPSPEC_ASSERT(c.at.size() == lanes.size() && lanes.size() >= 2);
  if (c.kind == core::CauseKind::shifted) {
    // Two lanes one apart: of two members, or the two still going where the others' dumps ended.
    PPSPEC_ASSERT(!c.ahead.empty() && c.ahead.front() < lanes.size(), "a shift ahead on lane {} of {}", c.ahead.front(),
                  lanes.size());
    size_t other = lanes.size();
    for (size_t i = 0; i < lanes.size() && other == lanes.size(); ++i)
      if (i != c.ahead.front() && lanes[i].at(c.at[i]) != nullptr) other = i;
    PPSPEC_ASSERT(other < lanes.size(), "a shift with no second lane still going");
    const Lane& a = lanes[c.ahead.front()];
    const Lane& b = lanes[other];
    const size_t k = c.at[c.ahead.front()];
    f.summary = fmt::format(
        "{} collective_seq_id {}: rank {} posts one collective more than rank {} here ({}), or rank {} skipped "
        "one: the sequences alone cannot tell which; every later collective of the group pairs with the wrong one",
        group, a.at(k)->entry->collective_seq_id, a.rank, b.rank, op_words(a, k), b.rank);
  } else if (c.kind == core::CauseKind::unresolved || c.culprits.empty()) {
    const Lane& a = lanes[0];
    f.summary = fmt::format("{} collective_seq_id {}: {}; {}", group,
                            a.at(c.at[0]) ? a.at(c.at[0])->entry->collective_seq_id : -1, fmt::join(posts, ", "),
                            c.kind == core::CauseKind::unresolved
                                ? "no single extra, skipped or different collective explains it"
                                : "nothing tells which of them is wrong");
  } else {
    f.summary = culprit_summary(c, lanes, group);
  }
  std::vector<size_t> order = c.culprits.empty() ? c.ahead : c.culprits;
  for (size_t i = 0; i < lanes.size(); ++i)
    if (std::find(order.begin(), order.end(), i) == order.end()) order.push_back(i);
  for (size_t i : order)
    if (f.sites.size() < core::kFindingListMax)
      f.sites.push_back(site_of(lanes[i], c.at[i], group, false, "has not posted it"));
  f.culprit = culprit_at(lanes, c, g.name, false);
  if (c.culprits.size() == 1) add_caller(f, lanes[c.culprits.front()], c.at[c.culprits.front()]);
  if (const size_t later = cascade(ids, c.at); later > 0)
    f.details.push_back(
        fmt::format("{} later collective(s) of {} differ across ranks by sequence id alone (size, kind or state): the "
                    "same cause, not reported again",
                    later, group));
  PPSPEC_ASSERT(!f.summary.empty() && !f.sites.empty());
  return f;
}

// An all_to_all hands every element a rank sends to the rank it is for: each rank records its own
// totals of uneven splits, which may differ, but over the members what is sent is what is received.
// Checked at the positions every member holds, before `upto` (where the members still agree).
std::optional<core::Finding> unbalanced_all_to_all(const FrJobGroup& g, const std::vector<Lane>& lanes, size_t upto) {
  if (lanes.size() != g.ranks.size()) return std::nullopt;  // a member without a dump: its totals are unknown
  for (size_t k = 0; k < upto; ++k) {
    int64_t sent = 0, received = 0;
    std::vector<std::string> parts;
    const bool all = std::all_of(lanes.begin(), lanes.end(), [k](const Lane& l) {
      return l.at(k) != nullptr && l.at(k)->entry->kind == traces::FrKind::all_to_all;
    });
    if (!all) continue;
    for (const Lane& l : lanes) {
      const FrOp* op = l.at(k);
      const auto [in, out] = all_to_all_totals(*op->entry);
      sent += in;
      received += out;
      if (parts.size() < core::kFindingListMax)
        parts.push_back(fmt::format("rank {} sends {} and receives {}", l.rank, in, out));
    }
    if (sent == received) continue;
    core::Finding f;
    f.verdict = core::Verdict::fifo_misalignment;
    f.kind = core::FindingKind::collective_mismatch;
    f.time = core::kNoTime;
    const int64_t seq = lanes.front().at(k)->entry->collective_seq_id;
    f.summary = fmt::format(
        "{} collective_seq_id {}: the members' all_to_all send {} elements in all and receive {}: some rank's split "
        "sizes disagree with its peers' ({}); the totals cannot tell which rank's (each records only its own)",
        g.label(), seq, sent, received, fmt::join(parts, ", "));
    for (const Lane& l : lanes)
      if (f.sites.size() < core::kFindingListMax) f.sites.push_back(site_of(l, k, g.label(), false, ""));
    f.culprit = core::Culprit{-1, g.name, false, -1, lanes.front().at(k)->position, core::Blame::unbalanced};
    return f;
  }
  return std::nullopt;
}

// Where dumps record no progress (Gloo), an operation one member posted more than another cannot be
// found waiting: the counts themselves are the finding.
core::Finding surplus_finding(const FrJob& job, size_t group, const std::vector<Lane>& lanes,
                              const core::SequenceCause& c) {
  const FrJobGroup& g = job.groups[group];
  PPSPEC_ASSERT(!c.ahead.empty() && c.ahead.front() < lanes.size());
  const Lane& more = lanes[c.ahead.front()];
  size_t fewer = 0;
  for (size_t i = 0; i < lanes.size(); ++i)
    if (lanes[i].ops.size() < lanes[fewer].ops.size()) fewer = i;
  const Lane& less = lanes[fewer];
  core::Finding f;
  f.verdict = core::Verdict::fifo_misalignment;
  f.kind = core::FindingKind::unmatched;
  f.time = core::kNoTime;
  const size_t k = less.ops.size();
  f.summary = fmt::format(
      "{}: rank {} posted {} collective(s) from collective_seq_id {}, rank {} {}: rank {} skipped one, or rank {} "
      "posted one too many (equal operations cannot tell which); its collective_seq_id {} ({}) has no partner on "
      "rank {}",
      g.label(), less.rank, less.ops.size(), g.first_common_seq, more.rank, more.ops.size(), less.rank, more.rank,
      more.at(k)->entry->collective_seq_id, describe(*more.at(k)), less.rank);
  f.sites.push_back(
      core::Site{less.rank, fmt::format("rank{}", less.rank), g.label(), -1, "never posts the counterpart", ""});
  f.sites.push_back(site_of(more, k, g.label(), false, ""));
  // Equal operations cannot tell a skipped one from one too many: no culprit, only where.
  f.culprit = core::Culprit{-1, g.name, false, -1, more.at(k)->position, core::Blame::count};
  if (const auto where = locate_skipped_collective(job, group, less.rank, more.rank)) f.details.push_back(*where);
  return f;
}

// A surplus collective that completed, of a kind no member completes before every member called it:
// a member whose dump without it records times after it completed, and whose ring holds what it
// posted there since its previous collective of the group (a ring keeps the newest), never called
// it (proven); a dump that may predate the completion (taken while the job ran), or a ring that
// holds none of the group's collectives and dropped records, tells nothing (maybe).
enum class CompletedSurplus : uint8_t { none, proven, maybe };

CompletedSurplus completed_without_members(const FrJob& job, const FrJobGroup& g, const std::vector<Lane>& lanes,
                                           const core::SequenceCause& c) {
  PPSPEC_ASSERT(!c.ahead.empty() && c.ahead.front() < lanes.size());
  const Lane& more = lanes[c.ahead.front()];
  const FrDating dating(job);
  CompletedSurplus out = CompletedSurplus::none;
  for (const Lane& less : lanes) {
    if (less.ops.size() >= more.ops.size()) continue;
    const FrOp& op = *more.at(less.ops.size());
    const traces::FrEntry& e = op.coalesced == SIZE_MAX ? *op.entry : op.dump->entries.at(op.coalesced);
    if (op.state != traces::FrState::completed || !traces::needs_every_member(e.kind) || e.completed_ns <= 0) continue;
    const size_t m = static_cast<size_t>(std::find(g.ranks.begin(), g.ranks.end(), less.rank) - g.ranks.begin());
    PPSPEC_ASSERT(m < g.lanes.size(), "rank {} is no member of {}", less.rank, g.label());
    const bool ring_covers = job.dropped.at(less.rank) == 0 || !g.lanes[m].empty();
    if (ring_covers && !dating.taken_before(less.rank, e.completed_ns)) return CompletedSurplus::proven;
    out = CompletedSurplus::maybe;
  }
  return out;
}

void judge_completed_surplus(const FrJob& job, size_t group, const std::vector<Lane>& lanes,
                             const core::SequenceCause& c, FrSequenceFindings& out) {
  const CompletedSurplus s = completed_without_members(job, job.groups[group], lanes, c);
  if (s == CompletedSurplus::none) return;
  core::Finding f = surplus_finding(job, group, lanes, c);
  if (s == CompletedSurplus::proven) {
    f.details.push_back(
        "it completed, which no member does before every member called it, and the dumps without it record times "
        "after that: they never called it, not merely not yet");
    out.findings.push_back(std::move(f));
    return;
  }
  out.notes.push_back(core::untimed_note(
      core::FindingKind::in_flight,
      fmt::format("{}: a collective completed on some members that others' dumps do not hold, and those dumps may have "
                  "been taken before it completed (while the job ran), or their rings dropped it: not yet called, or "
                  "never — the dumps cannot tell ({})",
                  job.groups[group].label(), f.summary)));
}

// Before the first collective every dumped member still holds, the members whose rings do hold one
// can still be compared: the first that differs among them is a finding, its culprit the one odd
// among three or more, none between two.
std::optional<core::Finding> early_mismatch(const FrJobGroup& g) {
  std::map<int64_t, std::vector<std::pair<int, const FrOp*>>> by_seq;
  for (size_t m = 0; m < g.ranks.size(); ++m)
    for (const FrOp& op : g.lanes[m])
      if (op.entry->collective_seq_id < g.first_common_seq)
        by_seq[op.entry->collective_seq_id].emplace_back(g.ranks[m], &op);
  for (const auto& [seq, held] : by_seq) {
    if (held.size() < 2) continue;
    std::map<std::string, std::vector<size_t>> keys;
    for (size_t i = 0; i < held.size(); ++i) keys[match_key(*held[i].second)].push_back(i);
    if (keys.size() == 1) continue;
    core::Finding f;
    f.verdict = core::Verdict::fifo_misalignment;
    f.kind = core::FindingKind::collective_mismatch;
    f.time = core::kNoTime;
    std::vector<std::string> posts;
    for (const auto& [rank, op] : held)
      if (posts.size() < core::kFindingListMax) posts.push_back(fmt::format("rank {} posts {}", rank, describe(*op)));
    f.summary = fmt::format("{} collective_seq_id {}, which only some members' rings still hold: {}", g.label(), seq,
                            fmt::join(posts, ", "));
    f.culprit = core::Culprit{-1, g.name, false, -1, held.front().second->position, core::Blame::differs};
    for (const auto& [key, at] : keys)
      if (at.size() == 1 && held.size() >= 3 && keys.size() == 2) f.culprit.rank = held[at.front()].first;
    for (const auto& [rank, op] : held)
      if (f.sites.size() < core::kFindingListMax)
        f.sites.push_back(core::Site{rank, fmt::format("rank{}", rank), g.label(), seq, describe(*op), origin_of(*op)});
    return f;
  }
  return std::nullopt;
}

void check_group(const FrJob& job, size_t group, FrSequenceFindings& out) {
  const FrJobGroup& g = job.groups[group];
  if (auto early = early_mismatch(g)) out.findings.push_back(std::move(*early));
  std::vector<Lane> lanes;
  for (size_t m = 0; m < g.ranks.size(); ++m) {
    if (!g.dumped[m]) continue;
    const auto& all = g.lanes[m];
    const auto first = std::find_if(all.begin(), all.end(),
                                    [&](const FrOp& op) { return op.entry->collective_seq_id >= g.first_common_seq; });
    lanes.push_back(Lane{g.ranks[m], std::span<const FrOp>(all).subspan(static_cast<size_t>(first - all.begin()))});
    if (first != all.begin()) {
      out.notes.push_back(core::untimed_note(
          core::FindingKind::ring_buffer_wrapped,
          fmt::format("{}: compared from collective_seq_id {}, the first every dumped member still holds; rank "
                      "{}'s {} earlier collective(s) there are not compared",
                      g.label(), g.first_common_seq, g.ranks[m], first - all.begin())));
    }
  }
  if (lanes.size() < 2) return;
  IdLanes ids;
  Interner names;
  for (const Lane& l : lanes) {
    ids.ids.emplace_back();
    for (const FrOp& op : l.ops) ids.ids.back().push_back(names.of(match_key(op)));
  }
  std::vector<size_t> from(lanes.size(), 0);
  for (size_t n = 0; n < kFrCausesPerSequence; ++n) {
    core::SequenceCause c = core::first_cause(ids, from);
    PPSPEC_ASSERT(c.at.size() == lanes.size());
    if (lanes.size() == 2) distrust_repeat(c);
    if (n == 0) {
      size_t upto = SIZE_MAX;
      for (size_t i = 0; i < lanes.size(); ++i)
        upto = std::min(upto, c.kind == core::CauseKind::none ? lanes[i].ops.size() : c.at[i]);
      if (auto f = unbalanced_all_to_all(g, lanes, upto)) out.findings.push_back(std::move(*f));
    }
    size_t agreed = SIZE_MAX;
    for (size_t i = 0; i < lanes.size(); ++i)
      PPSPEC_ASSERT(c.at[i] >= from[i], "a cause before where it was looked for");
    for (size_t i = 0; i < lanes.size(); ++i) agreed = std::min(agreed, c.at[i] - from[i]);
    out.collectives_compared += agreed;
    if (c.kind == core::CauseKind::surplus && !job.progress)
      return out.findings.push_back(surplus_finding(job, group, lanes, c));
    if (c.kind == core::CauseKind::surplus) judge_completed_surplus(job, group, lanes, c, out);
    if (c.kind == core::CauseKind::none || c.kind == core::CauseKind::surplus)
      return;  // a surplus waits: verify/dumps/fr_waits.cc
    out.findings.push_back(collective_finding(g, lanes, ids, c));
    if (c.kind == core::CauseKind::unresolved) return;
    PPSPEC_ASSERT(c.resume.size() == lanes.size());
    from = c.resume;
  }
}

std::string p2p_summary(const FrChannel& ch, const std::string& group, const core::SequenceCause& c,
                        const std::vector<Lane>& lanes) {
  PPSPEC_ASSERT(lanes.size() == 2 && c.at.size() == 2, "a p2p channel of {} lanes", lanes.size());
  const size_t k0 = c.at[0], k1 = c.at[1];
  const int64_t n0 = place(lanes[0], k0), n1 = place(lanes[1], k1);
  const std::string send = op_words(lanes[0], k0), recv = op_words(lanes[1], k1);
  const std::string why = c.evidence.empty() ? "" : fmt::format(" — {}", c.evidence);
  const bool sender = !c.culprits.empty() && c.culprits.front() == 0;
  switch (c.kind) {
    case core::CauseKind::differs:
      return fmt::format("{}: rank {}'s send #{} to rank {} is {}, the receive it pairs with is {}{}", group, ch.src,
                         n0, ch.dst, send, recv,
                         c.culprits.empty() ? "; nothing tells which side is wrong"
                                            : fmt::format(": rank {}'s {} is the wrong one{}", sender ? ch.src : ch.dst,
                                                          sender ? "send" : "receive", why));
    case core::CauseKind::extra:
      return fmt::format("{}: rank {} posts an extra {} (#{}: {}){}: every later one pairs with the wrong {}", group,
                         sender ? ch.src : ch.dst,
                         sender ? fmt::format("send to rank {}", ch.dst) : fmt::format("receive from rank {}", ch.src),
                         sender ? n0 : n1, sender ? send : recv, why, sender ? "receive" : "send");
    case core::CauseKind::missing:
      return fmt::format("{}: rank {} skipped a {} at #{}{}: every later one pairs with the wrong {}", group,
                         sender ? ch.src : ch.dst,
                         sender ? fmt::format("send to rank {}", ch.dst) : fmt::format("receive from rank {}", ch.src),
                         sender ? n0 : n1, why, sender ? "receive" : "send");
    case core::CauseKind::shifted: {
      const bool sends_ahead = c.ahead.front() == 0;
      return fmt::format(
          "{}: from send #{} on, rank {}'s sends to rank {} and rank {}'s receives from it are one apart: {}; the "
          "sequences alone cannot tell which",
          group, n0, ch.src, ch.dst, ch.dst, ch.src,
          sends_ahead
              ? fmt::format("rank {} posts one send more ({}), or rank {} skipped a receive", ch.src, send, ch.dst)
              : fmt::format("rank {} posts one receive more ({}), or rank {} skipped a send", ch.dst, recv, ch.src));
    }
    default:
      return fmt::format(
          "{}: rank {}'s sends to rank {} and rank {}'s receives from it disagree from send #{} on ({} vs {}), and no "
          "single "
          "extra, skipped or different operation explains it",
          group, ch.src, ch.dst, ch.dst, k0 + 1, send, recv);
  }
}

// A send that completed though its receive was never posted: small enough to go eagerly into the
// connection buffer, where its data waits for the next receive (a surplus still waiting is the
// waits' to explain: verify/dumps/fr_waits.cc).
void completed_surplus(const FrChannel& ch, const FrJobGroup& g, const std::vector<Lane>& lanes,
                       const core::SequenceCause& c, FrSequenceFindings& out) {
  PPSPEC_ASSERT(lanes.size() == 2 && c.at.size() == 2 && !c.ahead.empty() && c.ahead.front() < 2);
  const size_t ahead = c.ahead.front();
  const FrOp* op = lanes[ahead].at(c.at[ahead]);
  if (op == nullptr || op->state != traces::FrState::completed) return;
  const bool sends = ahead == 0;
  const int waiting = sends ? ch.src : ch.dst, absent = sends ? ch.dst : ch.src;
  core::Finding f;
  f.verdict = core::Verdict::fifo_misalignment;
  f.kind = core::FindingKind::unmatched;
  f.time = core::kNoTime;
  f.summary = fmt::format(
      "{}: rank {}'s {} #{} {} rank {} ({}) completed, and rank {} never posted the {} it pairs with: {} ({} posted "
      "{}, rank {} {}); its data waits in the connection buffer for the next one",
      g.label(), waiting, sends ? "send" : "receive", place(lanes[ahead], c.at[ahead]), sends ? "to" : "from", absent,
      describe(*op, false), absent, sends ? "receive" : "send",
      sends ? "small enough to be sent eagerly" : "a receive with no send", waiting, lanes[ahead].ops.size(), absent,
      lanes[1 - ahead].ops.size());
  f.sites.push_back(site_of(lanes[ahead], c.at[ahead], g.label(), true, ""));
  f.sites.push_back(core::Site{absent, fmt::format("rank{}", absent), g.label(), -1,
                               sends ? "never posts the receive" : "never posts the send", ""});
  f.culprit =
      core::Culprit{absent, g.name, true, waiting, place(lanes[ahead], c.at[ahead]) - 1, core::Blame::never_posted};
  out.unmatched_completed.push_back({op->entry->created_ns, std::move(f)});
}

// On a channel one side's extra operation and the other's skipped one look alike (and a repeated
// operation is the rule in a pipeline): the anchors of the ranks' other groups tell which side broke
// its own step, where they can.
bool blame_by_anchors(const FrJob& job, const FrChannel& ch, const std::vector<Lane>& lanes, core::SequenceCause& c) {
  const bool one_apart =
      c.kind == core::CauseKind::extra || c.kind == core::CauseKind::missing || c.kind == core::CauseKind::shifted;
  if (!one_apart) return false;
  const std::optional<FrChannelBlame> b = anchored_blame(job, ch, lanes[0].ops, lanes[1].ops);
  if (!b) return false;
  c.kind = b->extra ? core::CauseKind::extra : core::CauseKind::missing;
  c.culprits = {b->sender ? size_t{0} : size_t{1}};
  c.evidence = b->words;
  return true;
}

// A channel's operations from the first place both sides hold: a ring that wrapped dropped the rest.
std::vector<Lane> channel_lanes(const FrChannel& ch) {
  const auto from = [](const std::vector<FrOp>& ops, int64_t start) {
    const int64_t skip =
        ops.empty() ? 0 : std::clamp<int64_t>(start - ops.front().position, 0, static_cast<int64_t>(ops.size()));
    return std::span<const FrOp>(ops).subspan(static_cast<size_t>(skip));
  };
  const int64_t start =
      std::max(ch.sends.empty() ? 0 : ch.sends.front().position, ch.recvs.empty() ? 0 : ch.recvs.front().position);
  return {Lane{ch.src, from(ch.sends, start)}, Lane{ch.dst, from(ch.recvs, start)}};
}

void check_channel(const FrJob& job, const FrChannel& ch, FrSequenceFindings& out) {
  out.p2p_pairs += std::min(ch.sends.size(), ch.recvs.size());
  if (!job.by_rank.count(ch.src) || !job.by_rank.count(ch.dst))
    return;                 // one side's dump is missing: verify/dumps/fr_waits.cc
  if (!ch.aligned) return;  // the places of a wrapped ring's operations are unknown: a note says so
  // A side that holds nothing of the channel while its ring dropped records may have dropped all of it.
  for (const auto& [side, rank] : {std::pair{&ch.sends, ch.src}, std::pair{&ch.recvs, ch.dst}})
    if (side->empty() && job.dropped.at(rank) > 0) return;
  const std::vector<Lane> lanes = channel_lanes(ch);
  IdLanes ids;
  Interner data;
  for (const Lane& l : lanes) {
    ids.ids.emplace_back();
    for (const FrOp& op : l.ops) ids.ids.back().push_back(data.of(match_key(op, false)));
  }
  PPSPEC_ASSERT(ch.group < job.groups.size(), "channel of group {} of {}", ch.group, job.groups.size());
  const FrJobGroup& g = job.groups[ch.group];
  std::vector<size_t> from(2, 0);
  for (size_t n = 0; n < kFrCausesPerSequence; ++n) {
    core::SequenceCause c = core::first_cause(ids, from);
    if (n == 0 && !blame_by_anchors(job, ch, lanes, c)) distrust_repeat(c);
    if (c.kind == core::CauseKind::surplus) return completed_surplus(ch, g, lanes, c, out);
    if (c.kind == core::CauseKind::none) return;
    core::Finding f;
    f.verdict = core::Verdict::fifo_misalignment;
    f.kind = core::FindingKind::p2p_mismatch;
    f.time = core::kNoTime;
    f.summary = p2p_summary(ch, g.label(), c, lanes);
    const bool recv_first = !c.culprits.empty() && c.culprits.front() == 1;
    for (size_t i : {recv_first ? size_t{1} : size_t{0}, recv_first ? size_t{0} : size_t{1}})
      f.sites.push_back(site_of(lanes[i], c.at[i], g.label(), true,
                                i == 0 ? "has not posted the send" : "has not posted the receive"));
    PPSPEC_ASSERT(f.sites.size() == 2);
    f.culprit = culprit_at(lanes, c, g.name, true);
    if (c.culprits.size() == 1) add_caller(f, lanes[c.culprits.front()], c.at[c.culprits.front()]);
    out.findings.push_back(std::move(f));
    if (c.kind == core::CauseKind::unresolved) return;
    from = c.resume;
  }
}

}  // namespace

FrSequenceFindings check_sequences(const FrJob& job) {
  FrSequenceFindings out;
  for (size_t g = 0; g < job.groups.size(); ++g) check_group(job, g, out);
  for (const FrChannel& ch : job.channels) check_channel(job, ch, out);
  std::stable_sort(out.unmatched_completed.begin(), out.unmatched_completed.end(),
                   [](const auto& a, const auto& b) { return a.created_ns < b.created_ns; });
  return out;
}

}  // namespace ppspec::verify
