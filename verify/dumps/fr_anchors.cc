#include "verify/dumps/fr_anchors.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/assert.h"

namespace ppspec::verify {
namespace {

// The record orders of a rank's collectives on a group, sorted: a prefix count is a binary search.
std::vector<size_t> orders_of(const FrJobGroup& g, int rank) {
  std::vector<size_t> orders;
  const auto m = std::find(g.ranks.begin(), g.ranks.end(), rank);
  if (m == g.ranks.end()) return orders;
  PPSPEC_ASSERT(g.lanes.size() == g.ranks.size(), "group '{}': {} lanes, {} members", g.name, g.lanes.size(), g.ranks.size());
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
      shifted = recvs_short ? k + 1 < ns && anchor_recv(k) == anchor_send(k + 1) : k + 1 < nr && anchor_send(k) == anchor_recv(k + 1);
    const std::string label = g.label();
    if (!shifted)
      return fmt::format("the sides part at send #{}: rank {}'s follows {} collective(s) of {}, rank {}'s receive {}", k0 + 1, c.src,
                         anchor_send(k0), label, c.dst, anchor_recv(k0));
    if (recvs_short)
      return fmt::format("the skipped one is most likely rank {}'s receive for rank {}'s send #{}: from there on each receive of rank {} "
                         "comes where rank {}'s next send does (its receive #{} follows {} collective(s) of {}, send #{} follows {})",
                         c.dst, c.src, k0 + 1, c.dst, c.src, k0 + 1, anchor_recv(k0), label, k0 + 1, anchor_send(k0));
    return fmt::format("the skipped one is most likely rank {}'s send for rank {}'s receive #{}: from there on each send of rank {} comes "
                       "where rank {}'s next receive does (its send #{} follows {} collective(s) of {}, receive #{} follows {})",
                       c.src, c.dst, k0 + 1, c.src, c.dst, k0 + 1, anchor_send(k0), label, k0 + 1, anchor_recv(k0));
  }
  return std::nullopt;
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
    return fmt::format("the skipped one is most likely rank {}'s collective #{} on {}: from there on each of its collectives there "
                       "comes where rank {}'s next one does (its #{} follows {} collective(s) of {}, rank {}'s #{} follows {})",
                       short_rank, k + 1, g.label(), long_rank, k + 1, before(a, mine[k]), label, long_rank, k + 1, before(b, theirs[k]));
  }
  return std::nullopt;
}

}  // namespace ppspec::verify
