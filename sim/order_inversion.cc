#include "sim/order_inversion.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <tuple>

#include "core/hazard_kinds.h"

namespace ppspec::sim {

void OrderInversions::set_membership(int num_ranks, const std::vector<std::vector<core::RankId>>& comm_members,
                                     std::vector<std::string> comm_names) {
  num_ranks_ = num_ranks;
  comm_names_ = std::move(comm_names);
  const auto n = static_cast<size_t>(num_ranks);
  std::vector<int> shared(n * n, 0);
  for (const auto& members : comm_members)
    for (core::RankId a : members)
      for (core::RankId b : members)
        if (a < b) ++shared[static_cast<size_t>(a) * n + static_cast<size_t>(b)];
  share_two_.assign(n * n, 0);
  enabled_ = false;
  for (size_t i = 0; i < n * n; ++i) {
    if (shared[i] >= 2) {
      share_two_[i] = 1;
      enabled_ = true;
    }
  }
  entries_.clear();
}

void OrderInversions::on_matched(int comm, int64_t cseq, std::span<const Participant> parts) {
  if (!enabled_) return;
  const auto n = static_cast<size_t>(num_ranks_);
  for (const Participant& p : parts) {
    for (const Participant& q : parts) {
      if (p.rank >= q.rank) continue;
      const size_t key = static_cast<size_t>(p.rank) * n + static_cast<size_t>(q.rank);
      if (!share_two_[key]) continue;
      entries_[{static_cast<size_t>(p.rank), static_cast<size_t>(q.rank)}].push_back(
          Entry{p.issue_idx, q.issue_idx, comm, cseq, {p.actor, p.origin, p.op}, {q.actor, q.origin, q.op}});
    }
  }
}

core::Site OrderInversions::site(size_t rank, const Entry& e, const Where& at) const {
  return core::Site{
      static_cast<core::RankId>(rank), std::string(at.actor), comm_names_[static_cast<size_t>(e.comm)], e.cseq,
      core::describe(at.op),           std::string(at.origin)};
}

// Rank a issued `first` before `second`, rank b the other way round: the report names all four
// operations with their program lines, so that a reader finds both orders in the scenario.
core::Finding OrderInversions::inversion(size_t a, size_t b, const Entry& first, const Entry& second) const {
  const std::string& c1 = comm_names_[static_cast<size_t>(first.comm)];
  const std::string& c2 = comm_names_[static_cast<size_t>(second.comm)];
  core::Finding f;
  f.verdict = core::Verdict::hazard;
  f.kind = core::FindingKind::cross_communicator_order;
  f.summary = fmt::format(
      "ranks {} and {} issue operations on communicators '{}' and '{}' in opposite orders: rank{} issues {} #{} before "
      "{} #{}, rank{} the other way round (deadlocks when the kernels cannot be resident together, R7)",
      a, b, c1, c2, a, c1, first.cseq, c2, second.cseq, b);
  auto words = [this](const Entry& e, const Where& at) {
    return fmt::format("'{}' #{} ({}) on {}{}", comm_names_[static_cast<size_t>(e.comm)], e.cseq, core::describe(at.op),
                       at.actor, at.origin.empty() ? "" : fmt::format(" at {}", at.origin));
  };
  f.details.push_back(
      fmt::format("rank{} issues {}, then {}", a, words(first, first.at_a), words(second, second.at_a)));
  f.details.push_back(
      fmt::format("rank{} issues {}, then {}", b, words(second, second.at_b), words(first, first.at_b)));
  f.sites = {site(a, first, first.at_a), site(a, second, second.at_a), site(b, second, second.at_b),
             site(b, first, first.at_b)};
  return f;
}

std::optional<core::Finding> OrderInversions::analyze() const {
  if (!enabled_) return std::nullopt;
  for (const auto& [pair, recorded] : entries_) {
    const auto [a, b] = pair;
    if (recorded.size() < 2) continue;
    std::vector<Entry> es = recorded;
    // A total order, so that the order in which the schedule matched the entries cannot matter:
    // a group on two communicators gives rank a two entries with one issue index, and the one of
    // them processed first must be the one rank b issued first (with a stable sort on
    // idx_a alone, the later of the two hid an inversion in about half the schedules).
    std::sort(es.begin(), es.end(), [](const Entry& x, const Entry& y) {
      return std::tie(x.idx_a, x.idx_b, x.comm, x.cseq) < std::tie(y.idx_a, y.idx_b, y.comm, y.cseq);
    });
    // For each entry, the earlier entry (in rank a's order) of another communicator with the
    // largest index on rank b: if that exceeds this entry's, b issued the two the other way round.
    std::map<int, size_t> latest_by_comm;  // comm -> entry with max idx_b so far
    for (size_t j = 0; j < es.size(); ++j) {
      for (const auto& [comm, i] : latest_by_comm) {
        if (comm == es[j].comm) continue;
        if (es[i].idx_b > es[j].idx_b && es[i].idx_a < es[j].idx_a) return inversion(a, b, es[i], es[j]);
      }
      auto it = latest_by_comm.find(es[j].comm);
      if (it == latest_by_comm.end() || es[it->second].idx_b < es[j].idx_b) latest_by_comm[es[j].comm] = j;
    }
  }
  return std::nullopt;
}

}  // namespace ppspec::sim
