#include "verify/dumps/fr_p2p_places.h"

#include <algorithm>
#include <map>
#include <optional>

#include "core/assert.h"

namespace ppspec::verify {
namespace {

// One side of a channel: its index in job.channels, and whether it is the send side.
using Side = std::pair<size_t, bool>;

// One p2p call of a rank on a group: its p2p_seq_id and the channel sides of its operations.
struct Call {
  int64_t seq = 0;
  std::vector<Side> sides;  // sorted
};

// A rank's p2p calls on each group, in p2p_seq_id order.
std::map<std::pair<int, size_t>, std::vector<Call>> calls_of(const FrJob& job) {
  std::map<std::pair<int, size_t>, std::vector<Call>> calls;
  std::map<std::pair<int, size_t>, std::map<int64_t, std::vector<Side>>> by_seq;
  for (size_t c = 0; c < job.channels.size(); ++c) {
    const FrChannel& ch = job.channels[c];
    for (bool send : {true, false})
      for (const FrOp& op : send ? ch.sends : ch.recvs)
        by_seq[{op.dump->rank, ch.group}][op.entry->p2p_seq_id].push_back({c, send});
  }
  for (auto& [key, seqs] : by_seq)
    for (auto& [seq, sides] : seqs) {
      std::sort(sides.begin(), sides.end());
      calls[key].push_back(Call{seq, std::move(sides)});
    }
  return calls;
}

// How many operations of each side the calls before `calls.front()` held, when the calls repeat
// every `period` from p2p_seq_id 1 on.
std::map<Side, int64_t> before_first(const std::vector<Call>& calls, size_t period) {
  PPSPEC_ASSERT(period > 0 && period <= calls.size(), "a period of {} over {} calls", period, calls.size());
  const int64_t m = calls.front().seq - 1;  // calls before the first held
  const int64_t full = m / static_cast<int64_t>(period), rest = m % static_cast<int64_t>(period);
  std::map<Side, int64_t> n;
  for (size_t j = 0; j < period; ++j) {
    // The calls just before the first held one are the pattern's last phases.
    const bool in_rest = static_cast<int64_t>(j) >= static_cast<int64_t>(period) - rest;
    for (const Side& s : calls[j].sides) n[s] += full + (in_rest ? 1 : 0);
  }
  return n;
}

// The period of the held calls, when they are consecutive and repeat at least twice.
std::optional<size_t> period_of(const std::vector<Call>& calls) {
  std::map<std::vector<Side>, uint32_t> interned;
  std::vector<uint32_t> ids;
  for (size_t k = 0; k < calls.size(); ++k) {
    if (calls[k].seq != calls.front().seq + static_cast<int64_t>(k)) return std::nullopt;  // a call missing between
    ids.push_back(interned.try_emplace(calls[k].sides, static_cast<uint32_t>(interned.size())).first->second);
  }
  const size_t p = smallest_period(ids);
  if (2 * p > ids.size()) return std::nullopt;
  return p;
}

}  // namespace

size_t smallest_period(const std::vector<uint32_t>& ids) {
  if (ids.empty()) return 0;
  std::vector<size_t> pi(ids.size(), 0);
  for (size_t i = 1; i < ids.size(); ++i) {
    size_t k = pi[i - 1];
    while (k > 0 && ids[i] != ids[k]) k = pi[k - 1];
    if (ids[i] == ids[k]) ++k;
    pi[i] = k;
  }
  return ids.size() - pi.back();
}

void place_p2p(FrJob& job) {
  std::map<Side, int64_t> base;  // the place of each side's first held operation
  for (const auto& [key, calls] : calls_of(job)) {
    PPSPEC_ASSERT(!calls.empty());
    if (calls.front().seq <= 1) continue;  // the ring holds the group's first call: every side from 0
    const std::optional<size_t> period = period_of(calls);
    job.placings.push_back(FrP2pPlacing{key.first, key.second, calls.front().seq, period.value_or(0)});
    if (!period) {
      for (const Call& c : calls)
        for (const Side& s : c.sides) job.channels[s.first].aligned = false;
      continue;
    }
    for (const auto& [side, n] : before_first(calls, *period)) base[side] = n;
  }
  for (size_t c = 0; c < job.channels.size(); ++c) {
    FrChannel& ch = job.channels[c];
    for (bool send : {true, false}) {
      auto& ops = send ? ch.sends : ch.recvs;
      std::sort(ops.begin(), ops.end(), [](const FrOp& a, const FrOp& b) {
        return std::tie(a.entry->p2p_seq_id, a.order) < std::tie(b.entry->p2p_seq_id, b.order);
      });
      const auto it = base.find({c, send});
      const int64_t first = it == base.end() ? 0 : it->second;
      for (size_t k = 0; k < ops.size(); ++k) ops[k].position = first + static_cast<int64_t>(k);
    }
  }
}

}  // namespace ppspec::verify
