// The dumps of one folder are of one run: checked before any is judged, since dumps of two runs
// side by side read as a job whose ranks disagree.
#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <tuple>

#include "core/error.h"
#include "core/printable.h"
#include "traces/flight_recorder.h"

namespace ppspec::traces {

namespace {

std::string clock_words(int64_t ns) {
  const int64_t s = ns / 1000000000;
  return s >= 3600 ? fmt::format("{} h {} min", s / 3600, s % 3600 / 60) : fmt::format("{} min {} s", s / 60, s % 60);
}

// The span of a dump's records in wall-clock time ({0, 0}: no record is dated), and its largest timeout.
struct Span {
  int64_t first = 0, last = 0, timeout_ms = 0;
};

Span span_of(const FrDump& d) {
  Span s;
  for (const FrEntry& e : d.entries) {
    s.timeout_ms = std::max(s.timeout_ms, e.timeout_ms);
    if (e.created_ns <= 0) continue;
    s.first = s.first == 0 ? e.created_ns : std::min(s.first, e.created_ns);
    s.last = std::max({s.last, e.created_ns, e.completed_ns});
  }
  return s;
}

// The ranks of one job record side by side: a rank silent for longer than a watchdog timeout while
// another records is ended by its watchdog. Dumps whose records lie an hour (or two timeouts) apart
// are of two runs.
void check_one_time(const std::vector<FrDump>& dumps) {
  const FrDump* early = nullptr;  // the dump whose records end first
  const FrDump* late = nullptr;   // the dump whose records begin last
  int64_t timeout_ms = 0;
  for (const FrDump& d : dumps) {
    const Span s = span_of(d);
    timeout_ms = std::max(timeout_ms, s.timeout_ms);
    if (s.first == 0) continue;
    if (early == nullptr || s.last < span_of(*early).last) early = &d;
    if (late == nullptr || s.first > span_of(*late).first) late = &d;
  }
  if (early == nullptr || late == nullptr || early == late) return;
  const int64_t gap = span_of(*late).first - span_of(*early).last;
  const int64_t limit = std::max<int64_t>(int64_t{3600} * 1000000000, 2 * timeout_ms * 1000000);
  if (gap > limit)
    throw core::InputError(
        late->file, 0,
        fmt::format("mixed runs in one folder? its records begin {} after the last record of {} (rank {}): "
                    "the ranks of one job record side by side; check one run's dumps at a time",
                    clock_words(gap), early->file, early->rank));
}

// Clocks of one job's hosts agree this closely (NTP keeps them within milliseconds).
constexpr int64_t kClockSkewNs = int64_t{10} * 1000000000;

// A collective found completed on one rank before a member called its counterpart is of another
// run: dumps taken minutes apart, of two jobs with the same groups, meet here.
void check_causal_order(const std::vector<FrDump>& dumps) {
  struct Seen {
    int64_t completed = 0, created = 0;
    const FrDump* done = nullptr;
    const FrDump* late = nullptr;
  };
  std::map<std::tuple<std::string, std::vector<int>, int64_t>, Seen> seen;
  for (const FrDump& d : dumps)
    for (const FrEntry& e : d.entries) {
      const auto g = d.groups.find(e.group);
      if (e.is_p2p || !needs_every_member(e.kind) || g == d.groups.end() || e.created_ns <= 0) continue;
      Seen& s = seen[{e.group, g->second.ranks, e.collective_seq_id}];
      if (e.completed_ns > 0 && (s.done == nullptr || e.completed_ns < s.completed))
        s.completed = e.completed_ns, s.done = &d;
      if (s.late == nullptr || e.created_ns > s.created) s.created = e.created_ns, s.late = &d;
    }
  for (const auto& [key, s] : seen)
    if (s.done != nullptr && s.created > s.completed + kClockSkewNs)
      throw core::InputError(s.late->file, 0,
                             fmt::format("mixed runs in one folder? group '{}' collective_seq_id {} was called here {} "
                                         "after it completed on rank {} ({}): a collective completes only once "
                                         "every member called it",
                                         std::get<0>(key), std::get<2>(key), clock_words(s.created - s.completed),
                                         s.done->rank, s.done->file));
}

}  // namespace

void check_fr_one_run(const std::vector<FrDump>& dumps) {
  std::map<int, const FrDump*> by_rank;
  for (const FrDump& d : dumps) by_rank[d.rank] = &d;
  for (const FrDump& b : dumps) {
    const FrDump& a = dumps.front();
    if (a.version != b.version)
      throw core::InputError(
          b.file, 0,
          fmt::format("mixed runs in one folder? format version {} here, {} in {}", b.version, a.version, a.file));
    if (!a.comm_lib_version.empty() && !b.comm_lib_version.empty() && a.comm_lib_version != b.comm_lib_version)
      throw core::InputError(b.file, 0,
                             fmt::format("mixed runs in one folder? NCCL {} here, {} in {}", b.comm_lib_version,
                                         a.comm_lib_version, a.file));
    for (const auto& [name, g] : b.groups)
      for (int member : g.ranks) {
        const auto m = by_rank.find(member);
        if (m == by_rank.end() || m->second == &b) continue;
        const auto theirs = m->second->groups.find(name);
        if (theirs == m->second->groups.end()) continue;
        if (theirs->second.ranks == g.ranks) {
          const std::string& other = theirs->second.desc;
          if (g.desc != other && !g.inferred && !theirs->second.inferred)
            throw core::InputError(
                b.file, 0,
                fmt::format("mixed runs in one folder? group '{}' is '{}' here, '{}' in {}", name,
                            core::printable(g.desc, 40), core::printable(other, 40), m->second->file));
          continue;
        }
        const auto& other = theirs->second.ranks;
        // Two groups may share a name (split_group); they may not both hold these two ranks.
        if (std::find(other.begin(), other.end(), b.rank) != other.end() &&
            std::find(g.ranks.begin(), g.ranks.end(), b.rank) != g.ranks.end())
          throw core::InputError(b.file, 0,
                                 fmt::format("mixed runs in one folder? group '{}' has members [{}] here, [{}] in {}",
                                             name, fmt::join(g.ranks, ", "), fmt::join(other, ", "), m->second->file));
      }
  }
  check_one_time(dumps);
  check_causal_order(dumps);
}

}  // namespace ppspec::traces
