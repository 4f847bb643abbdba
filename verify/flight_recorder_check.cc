#include "verify/flight_recorder_check.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <set>
#include <tuple>

#include "core/finding_kinds.h"

namespace ppspec::verify {
namespace {

using traces::FrDump;
using traces::FrEntry;

std::string dtype_name(const std::string& torch) {
  static const std::map<std::string, std::string> names = {{"Long", "i64"}, {"Int", "i32"}, {"Half", "f16"},
                                                           {"Float", "f32"}, {"BFloat16", "bf16"}, {"Byte", "u8"}};
  const auto it = names.find(torch);
  return it == names.end() ? torch : it->second;
}

// "broadcast i64 [4, 6]": what pairs by position, and what must agree.
std::string describe(const FrEntry& e) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < e.input_sizes.size(); ++i)
    parts.push_back(fmt::format("{} [{}]", i < e.input_dtypes.size() ? dtype_name(e.input_dtypes[i]) : "?",
                                fmt::join(e.input_sizes[i], ", ")));
  return fmt::format("{} {}", e.op, fmt::join(parts, ", "));
}

std::string where(const FrDump& d, const FrEntry& e) { return fmt::format("{} record {}", d.file, e.record_id); }

// One rank's collectives on one group, in sequence order.
struct Lane {
  const FrDump* dump = nullptr;
  std::vector<const FrEntry*> ops;
};

std::map<int64_t, std::vector<Lane>> collective_lanes(const std::vector<FrDump>& dumps) {
  std::map<int64_t, std::vector<Lane>> lanes;
  for (const FrDump& d : dumps) {
    std::map<int64_t, Lane> mine;
    for (const FrEntry& e : d.entries)
      if (!e.is_p2p) mine[e.pg_id].ops.push_back(&e);
    for (auto& [pg, lane] : mine) {
      lane.dump = &d;
      std::sort(lane.ops.begin(), lane.ops.end(),
                [](const FrEntry* a, const FrEntry* b) { return a->collective_seq_id < b->collective_seq_id; });
      lanes[pg].push_back(std::move(lane));
    }
  }
  return lanes;
}

// Whether `a` from `i` and `b` from `j` agree for every position both have (at least one).
bool aligned(const Lane& a, size_t i, const Lane& b, size_t j) {
  size_t n = 0;
  for (; i + n < a.ops.size() && j + n < b.ops.size(); ++n)
    if (describe(*a.ops[i + n]) != describe(*b.ops[j + n])) return false;
  return n > 0 || (i >= a.ops.size() && j >= b.ops.size());
}

// How many later positions of the group differ across ranks (in size, kind or state) when read by
// sequence id alone: what PyTorch's analyzer reports one by one after the first.
size_t later_differences(const std::vector<Lane>& lanes, const std::vector<size_t>& at) {
  size_t n = 0;
  for (size_t d = 1;; ++d) {
    bool any = false, differ = false;
    const FrEntry* first = nullptr;
    for (size_t i = 0; i < lanes.size(); ++i) {
      const size_t k = at[0] + d;  // sequence ids, as they are: no realignment
      if (k >= lanes[i].ops.size()) {
        differ = true;
        continue;
      }
      any = true;
      const FrEntry* e = lanes[i].ops[k];
      if (first == nullptr) first = e;
      differ = differ || describe(*e) != describe(*first) || e->state != first->state;
    }
    if (!any) return n;
    n += differ ? 1 : 0;
  }
}

// Each rank: how many of its operations completed, and where it stopped.
std::vector<std::string> stuck_lines(const std::vector<FrDump>& dumps) {
  std::vector<std::string> lines;
  for (const FrDump& d : dumps) {
    size_t done = 0;
    const FrEntry* first_open = nullptr;
    size_t open = 0;
    for (const FrEntry& e : d.entries) {
      if (e.state == "completed") {
        ++done;
        continue;
      }
      ++open;
      if (first_open == nullptr) first_open = &e;
    }
    if (first_open == nullptr) {
      lines.push_back(fmt::format("rank{}: all {} operations completed", d.rank, d.entries.size()));
      continue;
    }
    lines.push_back(fmt::format("rank{}: {} of {} operations completed; stuck from pg {} {} #{} ({}), {}, with {} more "
                                "not completed after it",
                                d.rank, done, d.entries.size(), first_open->pg_id, first_open->is_p2p ? "p2p" : "collective",
                                first_open->is_p2p ? first_open->p2p_seq_id : first_open->collective_seq_id,
                                describe(*first_open), first_open->state, open - 1));
  }
  return lines;
}

core::Site site_of(const Lane& l, size_t k, int64_t pg) {
  const FrEntry& e = *l.ops[k];
  return core::Site{l.dump->rank, fmt::format("rank{}", l.dump->rank), fmt::format("pg {}", pg), e.collective_seq_id,
                    fmt::format("{} ({})", describe(e), e.state), where(*l.dump, e)};
}

// The cause at the first position where the ranks' collectives differ, and how to realign past it.
core::Finding root_cause(int64_t pg, const std::vector<Lane>& lanes, std::vector<size_t>& at) {
  core::Finding f;
  f.time = core::kNoTime;
  f.verdict = core::Verdict::fifo_misalignment;
  f.kind = std::string(core::kKindCollectiveMismatch);
  const size_t cascade = later_differences(lanes, at);
  // Try the lanes with the most operations first: an extra operation makes its rank's list longer.
  std::vector<size_t> order(lanes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return lanes[a].ops.size() > lanes[b].ops.size(); });
  for (size_t r : order) {
    bool extra = true;
    for (size_t o = 0; o < lanes.size(); ++o)
      if (o != r) extra = extra && aligned(lanes[r], at[r] + 1, lanes[o], at[o]);
    if (!extra) continue;
    const FrEntry& e = *lanes[r].ops[at[r]];
    const bool twice = at[r] > 0 && describe(*lanes[r].ops[at[r] - 1]) == describe(e);
    f.summary = fmt::format("rank{} posts an extra {} on pg {} (its collective_seq_id {}){}: no other rank posts it, so "
                            "every later collective of the group pairs with the wrong one",
                            lanes[r].dump->rank, describe(e), pg, e.collective_seq_id,
                            twice ? ", the same collective twice in a row" : "");
    f.sites.push_back(site_of(lanes[r], at[r], pg));
    for (size_t o = 0; o < lanes.size(); ++o)
      if (o != r) f.sites.push_back(site_of(lanes[o], at[o], pg));
    at[r] += 1;
    f.details.push_back(fmt::format("{} later collective(s) of pg {} differ across ranks by sequence id alone (size, kind or "
                                    "state): the same cause, not reported again",
                                    cascade, pg));
    return f;
  }
  // A different size, dtype or kind at the same position: the culprit posts what occurs nowhere else.
  std::map<std::string, int> seen;
  for (const Lane& l : lanes)
    for (const FrEntry* e : l.ops) ++seen[describe(*e)];
  size_t culprit = lanes.size();
  for (size_t r = 0; r < lanes.size(); ++r)
    if (seen[describe(*lanes[r].ops[at[r]])] == 1) culprit = r;
  const size_t c = culprit < lanes.size() ? culprit : 0;
  const size_t other = c == 0 ? 1 : 0;
  const FrEntry& e = *lanes[c].ops[at[c]];
  f.summary = fmt::format("pg {} collective_seq_id {}: rank{} posts {} where rank{} posts {}{}", pg, e.collective_seq_id,
                          lanes[c].dump->rank, describe(e), lanes[other].dump->rank, describe(*lanes[other].ops[at[other]]),
                          culprit < lanes.size() ? fmt::format(": rank{}'s occurs nowhere else on the group", lanes[c].dump->rank)
                                                 : "");
  for (size_t r = 0; r < lanes.size(); ++r) f.sites.push_back(site_of(lanes[r], at[r], pg));
  if (c != 0) std::swap(f.sites[0], f.sites[c]);
  for (size_t& a : at) a += 1;
  f.details.push_back(fmt::format("{} later collective(s) of pg {} differ across ranks by sequence id alone (size, kind or "
                                  "state): consequences, not reported again",
                                  cascade, pg));
  return f;
}

void check_group(int64_t pg, const std::vector<Lane>& lanes, std::vector<core::Finding>& out) {
  if (lanes.size() < 2) return;
  // A ring buffer keeps the latest entries only: compare from the first sequence id every rank has.
  int64_t start = 0;
  for (const Lane& l : lanes)
    if (!l.ops.empty()) start = std::max(start, l.ops.front()->collective_seq_id);
  std::vector<size_t> at(lanes.size(), 0);
  for (size_t i = 0; i < lanes.size(); ++i)
    while (at[i] < lanes[i].ops.size() && lanes[i].ops[at[i]]->collective_seq_id < start) ++at[i];
  for (;;) {
    bool all = true;
    for (size_t i = 0; i < lanes.size(); ++i) all = all && at[i] < lanes[i].ops.size();
    if (!all) break;
    bool equal = true;
    for (size_t i = 1; i < lanes.size(); ++i) equal = equal && describe(*lanes[i].ops[at[i]]) == describe(*lanes[0].ops[at[0]]);
    if (equal) {
      for (size_t& a : at) a += 1;
      continue;
    }
    out.push_back(root_cause(pg, lanes, at));
  }
  for (size_t i = 0; i < lanes.size(); ++i) {
    if (at[i] >= lanes[i].ops.size()) continue;
    core::Finding f;
    f.time = core::kNoTime;
    f.verdict = core::Verdict::fifo_misalignment;
    f.kind = std::string(core::kKindUnmatched);
    f.summary = fmt::format("rank{} posts {} more collective(s) on pg {} than another member; the first, {}, has no partner",
                            lanes[i].dump->rank, lanes[i].ops.size() - at[i], pg, describe(*lanes[i].ops[at[i]]));
    f.sites.push_back(site_of(lanes[i], at[i], pg));
    out.push_back(std::move(f));
  }
}

// p2p: the k-th send of a to b on a group pairs with the k-th receive of b from a.
void check_p2p(const std::vector<FrDump>& dumps, std::vector<core::Finding>& out, uint64_t& pairs) {
  using Key = std::tuple<int64_t, int, int>;  // pg, from, to
  std::map<Key, std::vector<std::pair<const FrDump*, const FrEntry*>>> sends, recvs;
  for (const FrDump& d : dumps)
    for (const FrEntry& e : d.entries) {
      if (!e.is_p2p) continue;
      if (e.op == "send") sends[{e.pg_id, d.rank, e.peer}].emplace_back(&d, &e);
      if (e.op == "recv") recvs[{e.pg_id, e.peer, d.rank}].emplace_back(&d, &e);
    }
  auto by_seq = [](auto& v) {
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second->p2p_seq_id < b.second->p2p_seq_id; });
  };
  for (auto& [key, s] : sends) {
    auto& r = recvs[key];
    by_seq(s);
    by_seq(r);
    for (size_t k = 0; k < std::min(s.size(), r.size()); ++k) {
      const FrEntry& a = *s[k].second;
      const FrEntry& b = *r[k].second;
      ++pairs;
      if (a.input_sizes == b.input_sizes && a.input_dtypes == b.input_dtypes) continue;
      core::Finding f;
      f.time = core::kNoTime;
      f.verdict = core::Verdict::fifo_misalignment;
      f.kind = std::string(core::kKindP2pMismatch);
      f.summary = fmt::format("pg {}: rank{}'s send #{} to rank{} is {}, the receive it pairs with is {}", std::get<0>(key),
                              std::get<1>(key), k + 1, std::get<2>(key), describe(a), describe(b));
      f.sites.push_back(core::Site{s[k].first->rank, fmt::format("rank{}", s[k].first->rank), "", a.p2p_seq_id,
                                   describe(a) + " (" + a.state + ")", where(*s[k].first, a)});
      f.sites.push_back(core::Site{r[k].first->rank, fmt::format("rank{}", r[k].first->rank), "", b.p2p_seq_id,
                                   describe(b) + " (" + b.state + ")", where(*r[k].first, b)});
      out.push_back(std::move(f));
      break;  // the rest of the pair's stream is shifted or waits behind it
    }
  }
}

}  // namespace

core::RunResult check_flight_recorder(const std::vector<FrDump>& dumps) {
  core::RunResult r;
  std::vector<core::Finding> found;
  for (const auto& [pg, lanes] : collective_lanes(dumps)) check_group(pg, lanes, found);
  check_p2p(dumps, found, r.stats.pairs);
  for (const FrDump& d : dumps) r.stats.events += d.entries.size();
  r.stats.ops_posted = r.stats.events;
  // Which ranks are stuck where, after the causes.
  const std::vector<std::string> stuck = stuck_lines(dumps);
  for (core::Finding& f : found) f.details.insert(f.details.end(), stuck.begin(), stuck.end());
  // Members of a group whose dump is missing: what the others show is still checked.
  std::set<int> have;
  for (const FrDump& d : dumps) have.insert(d.rank);
  std::set<int> missing;
  for (const FrDump& d : dumps)
    for (const auto& [pg, g] : d.groups)
      for (int rank : g.ranks)
        if (!have.count(rank)) missing.insert(rank);
  if (!missing.empty()) {
    core::Finding n;
    n.time = core::kNoTime;
    n.verdict = core::Verdict::hazard;
    n.kind = "missing-dump";
    n.summary = fmt::format("no dump of rank(s) {}, members of the dumped ranks' groups: their operations are not checked",
                            fmt::join(missing, ", "));
    r.notes.push_back(std::move(n));
  }
  r.findings = std::move(found);
  r.verdict = r.findings.empty() ? core::Verdict::pass : r.findings.front().verdict;
  return r;
}

}  // namespace ppspec::verify
