#include "verify/dumps/fr_anchors.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>

#include "core/assert.h"

namespace ppspec::verify {
namespace {

// The record orders of a rank's collectives on a group, sorted: a prefix count is a binary search.
std::vector<size_t> orders_of(const FrJobGroup& g, int rank) {
  std::vector<size_t> orders;
  const auto m = std::find(g.ranks.begin(), g.ranks.end(), rank);
  if (m == g.ranks.end()) return orders;
  PPSPEC_ASSERT(g.lanes.size() == g.ranks.size(), "group '{}': {} lanes, {} members", g.name, g.lanes.size(),
                g.ranks.size());
  for (const FrOp& op : g.lanes[static_cast<size_t>(m - g.ranks.begin())]) orders.push_back(op.order);
  std::sort(orders.begin(), orders.end());
  return orders;
}

size_t before(const std::vector<size_t>& orders, size_t order) {
  return static_cast<size_t>(std::lower_bound(orders.begin(), orders.end(), order) - orders.begin());
}

}  // namespace

std::optional<std::string> locate_skipped_p2p(const FrJob& job, const FrChannel& c) {
  const size_t ns = c.sends.size(), nr = c.recvs.size();
  if (ns == nr || ns == 0 || nr == 0) return std::nullopt;
  for (const FrJobGroup& g : job.groups) {
    const std::vector<size_t> src = orders_of(g, c.src), dst = orders_of(g, c.dst);
    if (src.empty() || dst.empty()) continue;
    auto anchor_send = [&](size_t k) {
      PPSPEC_ASSERT(k < ns, "send #{} of {}", k, ns);
      return before(src, c.sends[k].order);
    };
    auto anchor_recv = [&](size_t k) {
      PPSPEC_ASSERT(k < nr, "receive #{} of {}", k, nr);
      return before(dst, c.recvs[k].order);
    };
    const size_t common = std::min(ns, nr);
    size_t k0 = 0;
    while (k0 < common && anchor_send(k0) == anchor_recv(k0)) ++k0;
    if (k0 == common) continue;  // they part only at the end, or this group does not tell
    PPSPEC_ASSERT(k0 < common);
    const bool recvs_short = nr < ns;
    bool shifted = true;
    for (size_t k = k0; k < common && shifted; ++k)
      shifted = recvs_short ? k + 1 < ns && anchor_recv(k) == anchor_send(k + 1)
                            : k + 1 < nr && anchor_send(k) == anchor_recv(k + 1);
    const std::string label = g.label();
    if (!shifted)
      return fmt::format("the sides part at send #{}: rank {}'s follows {} collective(s) of {}, rank {}'s receive {}",
                         k0 + 1, c.src, anchor_send(k0), label, c.dst, anchor_recv(k0));
    if (recvs_short)
      return fmt::format(
          "the skipped one is most likely rank {}'s receive for rank {}'s send #{}: from there on each receive of rank "
          "{} "
          "comes where rank {}'s next send does (its receive #{} follows {} collective(s) of {}, send #{} follows {})",
          c.dst, c.src, k0 + 1, c.dst, c.src, k0 + 1, anchor_recv(k0), label, k0 + 1, anchor_send(k0));
    return fmt::format(
        "the skipped one is most likely rank {}'s send for rank {}'s receive #{}: from there on each send of rank {} "
        "comes "
        "where rank {}'s next receive does (its send #{} follows {} collective(s) of {}, receive #{} follows {})",
        c.src, c.dst, k0 + 1, c.src, c.dst, k0 + 1, anchor_send(k0), label, k0 + 1, anchor_recv(k0));
  }
  return std::nullopt;
}

namespace {

// The anchor of each operation: how many collectives of `g` its rank had posted before it.
std::vector<size_t> anchors_of(const FrJobGroup& g, int rank, std::span<const FrOp> ops) {
  const std::vector<size_t> orders = orders_of(g, rank);
  std::vector<size_t> out;
  for (const FrOp& op : ops) out.push_back(before(orders, op.order));
  return out;
}

}  // namespace

namespace {

constexpr size_t kAnchorStepsMin = 4;

// Whether every step between neighbours of `a` spans `step` anchors, but at `k`, where it spans
// `at_k` (kNoBreak: no exception).
constexpr size_t kNoBreak = SIZE_MAX;
bool regular(const std::vector<size_t>& a, size_t step, size_t k, size_t at_k) {
  for (size_t i = 1; i < a.size(); ++i) {
    const size_t d = a[i] - a[i - 1];
    if (i == k && at_k != kNoBreak ? d != at_k : d != step) return false;
  }
  return true;
}

}  // namespace

std::optional<FrChannelBlame> anchored_blame(const FrJob& job, const FrChannel& c, std::span<const FrOp> sends,
                                             std::span<const FrOp> recvs) {
  const size_t common = std::min(sends.size(), recvs.size());
  // Anchors count from each ring's first record: where a ring dropped some, they do not line up.
  if (job.dropped.at(c.src) > 0 || job.dropped.at(c.dst) > 0) return std::nullopt;
  std::optional<FrChannelBlame> told;
  size_t evidence = 0;  // the steps the telling group saw kept, besides the broken one
  for (const FrJobGroup& g : job.groups) {
    if (orders_of(g, c.src).empty() || orders_of(g, c.dst).empty()) continue;
    const std::vector<size_t> s = anchors_of(g, c.src, sends), r = anchors_of(g, c.dst, recvs);
    size_t k = 0;
    while (k < common && s[k] == r[k]) ++k;
    if (k == common) continue;  // they part at the end: this group does not tell
    const bool recv_late = r[k] > s[k];
    const std::vector<size_t>& late = recv_late ? r : s;
    const std::vector<size_t>& early = recv_late ? s : r;
    if (early.size() < 2) continue;
    const size_t step = early[1] - early[0] > 0 ? early[1] - early[0] : early.size() > 2 ? early[2] - early[1] : 0;
    if (step == 0) continue;
    // The late side skipped one (a step of none there, each step one on the other side), or the
    // early side posted an extra (two in one step there, one a step on the late side). Where they
    // part at their first, the late side's first comes a step late: it skipped its first.
    const bool late_skips =
        k == 0 ? late[0] == early[0] + step && regular(late, step, 0, kNoBreak) && regular(early, step, 0, kNoBreak)
               : regular(late, step, k, 2 * step) && regular(early, step, 0, kNoBreak);
    const bool early_extra = k > 0 && regular(early, step, k, 0) && regular(late, step, 0, kNoBreak);
    if (late_skips == early_extra) continue;  // both or neither: this group does not tell
    // A pattern seen a few times is evidence; one seen once or twice is chance.
    const size_t kept = late.size() + early.size() - 3;
    if (kept < kAnchorStepsMin) continue;
    FrChannelBlame b;
    b.sender = late_skips ? !recv_late : recv_late;
    b.extra = early_extra;
    b.at = k;
    b.words = fmt::format(
        "by the collectives of {} around them (each side posts one per {} of those): rank {}'s #{} {}", g.label(), step,
        b.sender ? c.src : c.dst, k + 1,
        b.extra ? fmt::format("comes before the next of them, as its #{} did: an extra one", k)
                : fmt::format("comes after {} of them where the other side's comes after {}: it skipped one before",
                              late[k], early[k]));
    if (told && (told->sender != b.sender || told->extra != b.extra))
      return std::nullopt;  // two groups tell two stories
    if (!told || kept > evidence) told = b, evidence = kept;
  }
  return told;
}

std::optional<std::string> locate_skipped_collective(const FrJob& job, size_t group, int short_rank, int long_rank) {
  PPSPEC_ASSERT(group < job.groups.size());
  const FrJobGroup& g = job.groups[group];
  const std::vector<size_t> mine = orders_of(g, short_rank), theirs = orders_of(g, long_rank);
  if (mine.empty() || mine.size() >= theirs.size()) return std::nullopt;
  for (size_t h = 0; h < job.groups.size(); ++h) {
    if (h == group) continue;
    const std::vector<size_t> a = orders_of(job.groups[h], short_rank), b = orders_of(job.groups[h], long_rank);
    if (a.empty() || b.empty()) continue;
    size_t k = 0;
    while (k < mine.size() && before(a, mine[k]) == before(b, theirs[k])) ++k;
    if (k == mine.size()) continue;  // they part only at the end, or this group does not tell
    bool shifted = true;
    for (size_t j = k; j < mine.size() && shifted; ++j) shifted = before(a, mine[j]) == before(b, theirs[j + 1]);
    if (!shifted) continue;
    const std::string label = job.groups[h].label();
    return fmt::format(
        "the skipped one is most likely rank {}'s collective #{} on {}: from there on each of its collectives there "
        "comes where rank {}'s next one does (its #{} follows {} collective(s) of {}, rank {}'s #{} follows {})",
        short_rank, k + 1, g.label(), long_rank, k + 1, before(a, mine[k]), label, long_rank, k + 1,
        before(b, theirs[k]));
  }
  return std::nullopt;
}

}  // namespace ppspec::verify
