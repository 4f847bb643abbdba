#include "verify/dumps/fr_dating.h"

#include <algorithm>
#include <fmt/format.h>

#include "core/assert.h"

namespace ppspec::verify {
namespace {

std::string ms(int64_t ns) { return fmt::format("{:.1f} ms", static_cast<double>(ns) / 1e6); }

}  // namespace

FrDating::FrDating(const FrJob& job) {
  same_moment_ = !job.dumps.empty() && std::all_of(job.dumps.begin(), job.dumps.end(),
                                                   [](const traces::FrDump* d) { return d->same_moment; });
  for (const traces::FrDump* d : job.dumps) {
    int64_t newest = 0, written = 0;
    for (const traces::FrEntry& e : d->entries) {
      newest = std::max({newest, e.created_ns, e.started_ns, e.completed_ns});
      if (e.state == traces::FrState::completed && !e.retired && e.completed_ns > 0)
        written = std::max(written, e.completed_ns);
    }
    if (newest > 0) newest_[d->rank] = newest;
    if (written > 0 && d->progress_recorded) written_[d->rank] = written;
  }
}

FrAge FrDating::age(const FrOp& op) const {
  const traces::FrEntry& closer = op.coalesced == SIZE_MAX ? *op.entry : op.dump->entries.at(op.coalesced);
  if (!op.dump->progress_recorded) return FrAge::undated;
  if (closer.retired && op.state != traces::FrState::completed) return FrAge::timed_out;
  const int64_t timeout_ns = closer.timeout_ms * 1000000;
  if (timeout_ns <= 0 || closer.created_ns <= 0) return FrAge::undated;
  const auto w = written_.find(op.dump->rank);
  const auto n = newest_.find(op.dump->rank);
  const int64_t at = w != written_.end() ? w->second : n != newest_.end() ? n->second : 0;
  if (at - closer.created_ns > timeout_ns) return FrAge::timed_out;
  return w != written_.end() ? FrAge::young : FrAge::undated;
}

bool FrDating::taken_before(int rank, const FrOp& op) const {
  const traces::FrEntry& e = op.coalesced == SIZE_MAX ? *op.entry : op.dump->entries.at(op.coalesced);
  if (e.created_ns <= 0 || same_moment_) return false;
  // A dump that records nothing at all was taken before its rank called anything, or it never did:
  // the first where the waiting dump looks like one of a job in flight.
  if (!written_.count(rank) && !newest_.count(rank)) return age(op) == FrAge::young;
  return taken_before(rank, e.created_ns);
}

bool FrDating::taken_before(int rank, int64_t ns) const {
  if (same_moment_) return false;
  const auto w = written_.find(rank);
  if (w != written_.end()) return w->second < ns;
  const auto n = newest_.find(rank);
  return n == newest_.end() || n->second < ns;
}

std::string FrDating::words(const FrOp& op) const {
  const traces::FrEntry& closer = op.coalesced == SIZE_MAX ? *op.entry : op.dump->entries.at(op.coalesced);
  const int rank = op.dump->rank;
  if (!op.dump->progress_recorded) return fmt::format("rank {}'s dump records no progress (Gloo)", rank);
  if (closer.retired && op.state != traces::FrState::completed)
    return fmt::format("rank {}'s watchdog retired it without its completing: it timed out ({} ms)", rank,
                       closer.timeout_ms);
  const auto w = written_.find(rank);
  if (w != written_.end())
    return fmt::format(
        "rank {}'s dump was written {} after it was posted (a completion it found then, not yet retired, dates it), "
        "of a {} ms timeout",
        rank, ms(w->second - closer.created_ns), closer.timeout_ms);
  const auto n = newest_.find(rank);
  const int64_t newest = n == newest_.end() ? 0 : n->second;
  return fmt::format(
      "rank {}'s dump does not say when it was written: the newest time it records is {} after it was posted, of a {} "
      "ms "
      "timeout; a dump taken while the job runs and one taken when it hung look alike",
      rank, ms(std::max<int64_t>(0, newest - closer.created_ns)), closer.timeout_ms);
}

}  // namespace ppspec::verify
