#include "verify/dumps/fr_streams.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/assert.h"
#include "core/error.h"

namespace ppspec::verify {

const char* to_string(FrCalls c) { return c == FrCalls::synchronous ? "sync" : "async"; }

std::optional<FrCalls> parse_fr_calls(const std::string& s) {
  if (s == "sync") return FrCalls::synchronous;
  if (s == "async") return FrCalls::async;
  return std::nullopt;
}

std::string fr_calls_words(FrCalls c) {
  if (c == FrCalls::async)
    return "async calls (--calls async): each group's collectives on its own stream, each pair's p2p on its own; no "
           "call waits "
           "for another stream";
  return "synchronous calls (PyTorch's default; --calls async for async_op=True calls never waited for): each call "
         "waits for "
         "the ones before it on its rank, unless the dumps' states or times show it did not";
}

FrStreams::Observed FrStreams::observed(const FrOp& op) {
  // A coalesced member's times are its closing record's.
  const traces::FrEntry& e = op.coalesced == SIZE_MAX ? *op.entry : op.dump->entries[op.coalesced];
  return Observed{op.state != traces::FrState::scheduled, op.state == traces::FrState::completed, e.started_ns,
                  e.completed_ns};
}

// Whether the dumps show a call did not wait for everything already on `s`: it began while one of
// them had not completed, or began or completed before one of them completed.
bool FrStreams::overlaps(const Stream& s, const Observed& op) {
  if (op.began && !s.all_done) return true;
  if (op.done && op.completed_ns > 0 && op.completed_ns < s.last_completed_ns) return true;
  return op.started_ns > 0 && op.started_ns < s.last_completed_ns;
}

FrPlacement FrStreams::place(const FrOp& op, std::optional<size_t> recorded) {
  const Observed o = observed(op);
  const bool grouped = op.coalesced != SIZE_MAX && op.coalesced == group_;
  FrPlacement p;
  p.stream = grouped                    ? group_stream_
             : recorded                 ? grow_to(*recorded, op.entry->record_id)
             : calls_ == FrCalls::async ? async_stream(op)
                                        : pick(o, op);
  PPSPEC_ASSERT(p.stream < streams_.size() && waited_.size() == streams_.size());
  if (!grouped) p.blocker = streams_[p.stream].first_incomplete;
  for (size_t y = 0; y < streams_.size() && !grouped && calls_ == FrCalls::synchronous; ++y) {
    if (y == p.stream || overlaps(streams_[y], o) || streams_[y].ops <= waited_[p.stream][y]) continue;
    p.waits_for.push_back(y);
    waited_[p.stream][y] = streams_[y].ops;
    p.blocker = std::min(p.blocker, streams_[y].first_incomplete);
  }
  if (grouped) p.blocker = SIZE_MAX;  // its group's first member decided
  group_ = op.coalesced;
  group_stream_ = p.stream;
  add(p.stream, o, op);
  return p;
}

// The stream used last among those `o` did not overlap; a new one when it overlapped them all.
size_t FrStreams::pick(const Observed& o, const FrOp& op) {
  size_t best = SIZE_MAX;
  for (size_t s = 0; s < streams_.size(); ++s)
    if (!overlaps(streams_[s], o) && (best == SIZE_MAX || streams_[s].last_use > streams_[best].last_use)) best = s;
  if (best != SIZE_MAX) return best;
  return grow_to(streams_.size(), op.entry->record_id);
}

size_t FrStreams::async_stream(const FrOp& op) {
  const traces::FrEntry& e = *op.entry;
  std::tuple<size_t, int, int> key{op.group, -1, -1};
  if (e.is_p2p)
    key = op.coalesced != SIZE_MAX ? std::tuple<size_t, int, int>{op.group, -2, -2}
                                   : std::tuple<size_t, int, int>{op.group, std::min(op.dump->rank, e.peer),
                                                                  std::max(op.dump->rank, e.peer)};
  const auto [it, fresh] = async_streams_.try_emplace(key, streams_.size());
  if (fresh) grow_to(streams_.size(), e.record_id);
  return it->second;
}

size_t FrStreams::grow_to(size_t s, int64_t record) {
  if (s >= kFrStreamsMax)
    throw core::InputError(
        file_, 0,
        fmt::format("record {}: more than {} streams on one rank by its dump's states and times (or its "
                    "groups and pairs, with --calls async)",
                    record, kFrStreamsMax));
  while (streams_.size() <= s) {
    streams_.emplace_back();
    for (std::vector<size_t>& w : waited_) w.push_back(0);
    waited_.emplace_back(streams_.size(), 0);
  }
  return s;
}

void FrStreams::add(size_t s, const Observed& o, const FrOp& op) {
  Stream& st = streams_[s];
  st.all_done = st.all_done && o.done;
  st.last_completed_ns = std::max(st.last_completed_ns, o.completed_ns);
  if (!o.done && st.first_incomplete == SIZE_MAX) st.first_incomplete = op.order;
  ++st.ops;
  st.last_use = ++uses_;
}

}  // namespace ppspec::verify
